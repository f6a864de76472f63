"""`# noqa: TFL…` next to Ruff: with `lint.external = ["TFL"]`, Ruff's unused-noqa (RUF100) and invalid-rule-code
(RUF102) checks leave tflint's codes alone, `ruff check --fix` keeps them, and both tools can add to the same
comment. Uses the installed `ruff` binary; skipped when there is none."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tflint.cli import main

RUFF = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
pytestmark = pytest.mark.skipif(not Path(RUFF).exists(), reason="ruff is not installed")

SOURCE = '''import os  # noqa: F401
import tensorflow as tf

ds = tf.data.Dataset.range(3).map(abs)  # noqa: TFL101
ds2 = tf.data.Dataset.range(3).map(abs)  # noqa: E501, TFL101
x = 1; ds3 = tf.data.Dataset.range(3).map(abs)  # noqa: E702, TFL101
'''
RUFF_LINT = '[tool.ruff.lint]\nselect = ["F", "E", "RUF100", "RUF102"]\n'
TFLINT = '[tool.tflint]\nselect = ["TFL101", "TFL002"]\n'  # TFL002: tflint's own unused-suppression check


def ruff(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, "check", "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def ruff_codes(cwd: Path, *files: str) -> list[str]:
    res = ruff(cwd, "--output-format", "json", *files)
    assert res.returncode in (0, 1), res.stderr
    return [d["code"] for d in json.loads(res.stdout)]


def tflint_findings(capsys, *args: str) -> list[dict]:
    main(["check", "--no-cache", "--output-format", "json", *args])
    out = capsys.readouterr().out
    return json.loads(out) if out.strip() else []


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_external_keeps_tflint_codes(project, capsys):
    (project / "pyproject.toml").write_text(RUFF_LINT + 'external = ["TFL"]\n' + TFLINT)
    (project / "train.py").write_text(SOURCE)
    codes = ruff_codes(project, "train.py")
    # E501 is not violated on that line: RUF100 reports it, and only it
    assert "RUF102" not in codes and codes == ["RUF100"]
    ruff(project, "--fix", "train.py")
    fixed = (project / "train.py").read_text()
    assert fixed == SOURCE.replace("# noqa: E501, TFL101", "# noqa: TFL101")  # Ruff removed its own stale code only
    assert ruff_codes(project, "train.py") == []
    # and tflint: every TFL101 suppression is used (no TFL002), nothing else reported
    assert tflint_findings(capsys, "train.py") == []


def test_without_external_ruff_strips_tflint_codes(project):
    """The control: without `external`, Ruff calls TFL101 an invalid code and `--fix` deletes it."""
    (project / "pyproject.toml").write_text(RUFF_LINT + TFLINT)
    (project / "train.py").write_text(SOURCE)
    assert ruff_codes(project, "train.py").count("RUF102") == 3
    ruff(project, "--fix", "train.py")
    assert "TFL101" not in (project / "train.py").read_text()


def test_both_tools_add_to_the_same_comment(project, capsys):
    (project / "pyproject.toml").write_text(RUFF_LINT + 'external = ["TFL"]\n' + TFLINT)
    src = "import sys\nimport tensorflow as tf\n\nds = tf.data.Dataset.range(3).map(abs)\n"
    (project / "a.py").write_text(src)
    (project / "b.py").write_text(src)
    # tflint first, then Ruff
    main(["check", "--no-cache", "--add-noqa", "a.py"])
    assert ruff(project, "--add-noqa", "a.py").returncode == 0
    # Ruff first, then tflint
    ruff(project, "--add-noqa", "b.py")
    main(["check", "--no-cache", "--add-noqa", "b.py"])
    capsys.readouterr()
    for name in ("a.py", "b.py"):
        text = (project / name).read_text()
        assert "# noqa: F401" in text and "# noqa: TFL101" in text, text
        assert ruff_codes(project, name) == []
        assert tflint_findings(capsys, name) == []


def test_tflint_merges_into_ruffs_noqa_and_ruff_accepts_it(project, capsys):
    (project / "pyproject.toml").write_text(RUFF_LINT + 'external = ["TFL"]\n' + TFLINT)
    src = "import tensorflow as tf\nimport sys; ds = tf.data.Dataset.range(3).map(abs)  # noqa: F401\n"
    (project / "c.py").write_text(src)
    main(["check", "--no-cache", "--add-noqa", "c.py"])
    capsys.readouterr()
    text = (project / "c.py").read_text()
    assert text.endswith("# noqa: F401, TFL101\n")
    assert ruff_codes(project, "c.py") == ["E702"]  # Ruff's own finding about the `;`, nothing about the noqa
    assert tflint_findings(capsys, "c.py") == []


def test_rule_names_in_noqa_are_not_understood_by_ruff(project):
    """Documented behaviour: Ruff only parses codes. `# noqa: map-without-parallel-calls` makes Ruff warn and
    ignore the directive, so with Ruff use codes (or `# tflint: ignore[name]` on the line above)."""
    (project / "pyproject.toml").write_text(RUFF_LINT + 'external = ["TFL"]\n')
    (project / "d.py").write_text("import sys  # noqa: map-without-parallel-calls\n")
    res = ruff(project, "d.py")
    assert "Invalid `# noqa` directive" in res.stderr
    assert "F401" in res.stdout
