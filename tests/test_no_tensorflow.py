"""`tflint check` never imports TensorFlow and never executes the code it reads."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from test_cli import ROOT, no_traceback, run_tflint


def _py(code: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_import_and_check_leave_tensorflow_out(tmp_path):
    (tmp_path / "a.py").write_text(
        "import tensorflow as tf\nimport keras\nds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))\nfor x in ds:\n    train_step(x)\n"
    )
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": "import tensorflow as tf\n",
                                                             "metadata": {}, "outputs": []}], "metadata": {}}))
    p = _py(
        """
        import sys
        import tflint.cli
        assert "tensorflow" not in sys.modules
        rc = tflint.cli.main(["check", "--no-cache", "--select", "ALL", "--output-format", "json", "."])
        mods = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras", "jax", "torch"))
        print("MODS", mods, "RC", rc, file=sys.stderr)
        assert mods == [], mods
        rc = tflint.cli.main(["check", "--fix", "--diff", "--no-cache", "--select", "ALL", "."])
        rc = tflint.cli.main(["rules", "--json"])
        rc = tflint.cli.main(["rule", "TFL101"])
        mods = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras"))
        assert mods == [], mods
        print("OK")
        """,
        tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert "OK" in p.stdout


def test_check_never_executes_the_code(tmp_path):
    marker = tmp_path / "EXECUTED"
    payload = textwrap.dedent(
        f"""
        import pathlib
        pathlib.Path({str(marker)!r}).write_text("ran")
        import tensorflow as tf
        ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))
        if __name__ == "__main__":
            pathlib.Path({str(marker)!r}).write_text("main")
        """
    )
    (tmp_path / "evil.py").write_text(payload)
    (tmp_path / "conftest.py").write_text(payload)
    (tmp_path / "__init__.py").write_text(payload)
    (tmp_path / "setup.py").write_text(payload)
    # modules tflint imports lazily: with `python -m`, the working directory comes first on sys.path
    for shadow in ("yaml", "tomllib", "difflib", "pathspec", "libcst", "json", "tempfile", "concurrent"):
        (tmp_path / f"{shadow}.py").write_text(payload)
    nb = {"cells": [{"cell_type": "code", "source": payload, "metadata": {}, "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "evil.ipynb").write_text(json.dumps(nb))
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\nselect = [\"ALL\"]\n")
    for args in (["check", "."], ["check", "--fix", "--unsafe-fixes", "."], ["check", "--diff", "."],
                 ["check", "--output-format", "sarif", "."]):
        p = run_tflint(*args, cwd=tmp_path)
        no_traceback(p)
        assert p.returncode in (0, 1), p.stderr
        assert not marker.exists(), f"code was executed by {args}"
    p = run_tflint("check", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin=payload)
    assert not marker.exists()
    # the fixed files still compile (fixes were applied, nothing was run)
    for f in ("evil.py", "conftest.py"):
        compile((tmp_path / f).read_text(), f, "exec")


def test_tflint_modules_for_check_do_not_import_tensorflow_statically():
    """No module on the check path has a top-level `import tensorflow`."""
    import ast

    offenders = []
    for path in (ROOT / "tflint").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("tflint/runtime/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only: lazy imports inside functions are the allowed pattern
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(n.split(".")[0] in ("tensorflow", "keras", "tf_keras") for n in names):
                offenders.append(rel)
    assert offenders == [], offenders
