"""`python -m tflint` as a user runs it: files, folders, stdin, selection, fixes, diff, exit codes, formats."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TF_MAP = "import tensorflow as tf\nds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))\n"
TF_MAP_FIXED = (
    "import tensorflow as tf\nds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x), num_parallel_calls=tf.data.AUTOTUNE)\n"
)
CLEAN = "import tensorflow as tf\nds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x), num_parallel_calls=4)\n"


def run_tflint(*args, cwd=None, stdin: bytes | str | None = None, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Run `python -m tflint ARGS` in a subprocess; text stdout/stderr."""
    e = dict(os.environ)
    # no empty entry: an empty PYTHONPATH component means the working directory
    e["PYTHONPATH"] = os.pathsep.join(x for x in [str(ROOT), *e.get("PYTHONPATH", "").split(os.pathsep)] if x)
    e.pop("FORCE_COLOR", None)
    e["NO_COLOR"] = "1"
    e.update(env or {})
    data = stdin.encode() if isinstance(stdin, str) else stdin
    p = subprocess.run(
        [sys.executable, "-m", "tflint", *map(str, args)], cwd=cwd, input=data, capture_output=True, env=e,
        timeout=timeout,
    )
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode("utf-8", "replace"),
                                       p.stderr.decode("utf-8", "replace"))


def no_traceback(p: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr


def codes_of(p: subprocess.CompletedProcess) -> list[str]:
    return [f["code"] for f in json.loads(p.stdout)]


@pytest.fixture
def proj(tmp_path):
    """A project folder with a pyproject.toml (so config from the checkout is never picked up)."""
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    return tmp_path


# -- files, folders, discovery ----------------------------------------------------------------------------
def test_file_with_finding_exits_1_and_clean_file_exits_0(proj):
    (proj / "bad.py").write_text(TF_MAP)
    (proj / "good.py").write_text(CLEAN)
    p = run_tflint("check", "--select", "TFL101", "bad.py", cwd=proj)
    no_traceback(p)
    assert p.returncode == 1
    assert "bad.py:2:" in p.stdout and "TFL101" in p.stdout
    p = run_tflint("check", "--select", "TFL101", "good.py", cwd=proj)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == ""


def test_folder_respects_gitignore_and_exclude(proj):
    (proj / "pyproject.toml").write_text('[tool.tflint]\nextend-exclude = ["skipme"]\n')
    (proj / ".gitignore").write_text("ignored.py\nbuildout/\n")
    for rel in ["a.py", "sub/b.py", "ignored.py", "buildout/c.py", "skipme/d.py", "sub/notes.txt"]:
        f = proj / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "--output-format", "json", ".", cwd=proj)
    no_traceback(p)
    files = sorted(Path(f["filename"]).as_posix() for f in json.loads(p.stdout))
    assert files == ["a.py", "sub/b.py"]
    # a file named explicitly is checked even when a folder walk would skip it
    p = run_tflint("check", "--select", "TFL101", "--output-format", "json", "ignored.py", cwd=proj)
    assert [f["filename"] for f in json.loads(p.stdout)] == ["ignored.py"]


def test_default_path_is_current_folder(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", cwd=proj)
    assert p.returncode == 1 and "a.py" in p.stdout


def test_missing_path_is_an_error_but_the_other_paths_are_checked(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "nope.py", "a.py", cwd=proj)
    no_traceback(p)
    assert "tflint: error: nope.py: no such file or directory" in p.stderr
    assert "a.py:2:" in p.stdout
    assert p.returncode == 2  # a typo in a CI command line must not pass


# -- stdin ------------------------------------------------------------------------------------------------
def test_stdin_with_filename(proj):
    p = run_tflint("check", "--select", "TFL101", "--stdin-filename", "src/train.py", "-", cwd=proj, stdin=TF_MAP)
    no_traceback(p)
    assert p.returncode == 1
    assert "src/train.py:2:" in p.stdout


def test_stdin_fix_prints_fixed_source(proj):
    p = run_tflint("check", "--select", "TFL101", "--fix", "-", cwd=proj, stdin=TF_MAP)
    no_traceback(p)
    assert p.stdout == TF_MAP_FIXED
    assert p.returncode == 0
    # nothing to fix: the source is echoed unchanged
    p = run_tflint("check", "--select", "TFL101", "--fix", "-", cwd=proj, stdin=CLEAN)
    assert p.stdout == CLEAN and p.returncode == 0


def test_stdin_cannot_mix_with_paths(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "-", "a.py", cwd=proj, stdin="")
    assert p.returncode == 2 and "stdin" in p.stderr


# -- selection --------------------------------------------------------------------------------------------
SELECT_SRC = (
    "import tensorflow as tf\n"
    "ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))\n"
    "for x in ds:\n"
    "    train_step(x)\n"
)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--select", "TFL101"], {"TFL101"}),
        (["--select", "map-without-parallel-calls"], {"TFL101"}),
        (["--select", "TFL10"], {"TFL101", "TFL102"}),
        (["--select", "TFL1", "--ignore", "dataset-without-prefetch"], {"TFL101"}),
        (["--select", "TFL101", "--extend-select", "TFL102"], {"TFL101", "TFL102"}),
        (["--select", "ALL", "--ignore", "TFL1"], set()),
        (["--select", "TFL101,TFL102", "--ignore", "TFL101"], {"TFL102"}),
    ],
)
def test_selection(proj, args, expected):
    (proj / "a.py").write_text(SELECT_SRC)
    p = run_tflint("check", *args, "--output-format", "json", "a.py", cwd=proj)
    no_traceback(p)
    got = set(codes_of(p)) & {"TFL101", "TFL102"}
    assert got == expected
    if args[:2] == ["--select", "ALL"]:
        assert not any(c.startswith("TFL1") for c in codes_of(p))


def test_unknown_selector_exits_2_naming_it(proj):
    (proj / "a.py").write_text(TF_MAP)
    for opt in ("--select", "--ignore", "--extend-select"):
        p = run_tflint("check", opt, "TFL999x", "a.py", cwd=proj)
        assert p.returncode == 2
        assert "TFL999x" in p.stderr
        no_traceback(p)


# -- fixing -----------------------------------------------------------------------------------------------
def test_fix_writes_and_exits_0(proj):
    f = proj / "a.py"
    f.write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "--fix", "a.py", cwd=proj)
    no_traceback(p)
    assert p.returncode == 0
    assert f.read_text() == TF_MAP_FIXED
    assert "Fixed 1" in p.stderr + p.stdout


def test_unsafe_fix_needs_flag(proj):
    # a mapped Python function that is not provably pure TF: the fix is unsafe
    src = "import tensorflow as tf\nimport random\nds = tf.data.Dataset.range(3).map(lambda x: x + random.random())\n"
    f = proj / "a.py"
    f.write_text(src)
    p = run_tflint("check", "--select", "TFL101", "--fix", "a.py", cwd=proj)
    assert f.read_text() == src
    assert p.returncode == 1
    assert "--unsafe-fixes" in p.stderr + p.stdout
    p = run_tflint("check", "--select", "TFL101", "--fix", "--unsafe-fixes", "a.py", cwd=proj)
    assert "num_parallel_calls" in f.read_text()
    assert p.returncode == 0
    compile(f.read_text(), "a.py", "exec")


def test_diff_writes_nothing(proj):
    f = proj / "a.py"
    f.write_text(TF_MAP)
    before = f.stat().st_mtime_ns
    p = run_tflint("check", "--select", "TFL101", "--diff", "a.py", cwd=proj)
    no_traceback(p)
    assert f.read_text() == TF_MAP and f.stat().st_mtime_ns == before
    assert p.stdout.startswith("--- a.py\n+++ a.py\n")
    assert "+ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x), num_parallel_calls=tf.data.AUTOTUNE)" in p.stdout
    assert p.returncode == 1
    # --diff --fix still writes nothing
    p = run_tflint("check", "--select", "TFL101", "--diff", "--fix", "a.py", cwd=proj)
    assert f.read_text() == TF_MAP


def test_exit_zero(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "--exit-zero", "a.py", cwd=proj)
    assert p.returncode == 0 and "TFL101" in p.stdout


def test_statistics(proj):
    (proj / "a.py").write_text(TF_MAP + "dt = tf.data.Dataset.range(4).map(lambda x: tf.strings.as_string(x))\n")
    p = run_tflint("check", "--select", "TFL101", "--statistics", "a.py", cwd=proj)
    no_traceback(p)
    assert p.stdout.split() == ["2", "TFL101", "[*]", "map-without-parallel-calls"]
    assert p.returncode == 1


def test_syntax_error_is_a_finding_and_run_goes_on(proj):
    (proj / "a.py").write_text("import tensorflow as tf\ndef f(:\n")
    (proj / "b.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL001,TFL101", "--output-format", "json", ".", cwd=proj)
    no_traceback(p)
    assert sorted(codes_of(p)) == ["TFL001", "TFL101"]
    assert p.returncode == 1


def test_config_error_exits_2(proj):
    (proj / "pyproject.toml").write_text("[tool.tflint]\nselekt = ['TFL101']\n")
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "a.py", cwd=proj)
    assert p.returncode == 2 and "selekt" in p.stderr
    no_traceback(p)


# -- output formats ---------------------------------------------------------------------------------------
def test_concise_format(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "--output-format", "concise", "a.py", cwd=proj)
    line = p.stdout.splitlines()[0]
    assert line.startswith("a.py:2:31: TFL101 [*] ")


def test_full_format_shows_source_caret_fix_and_diff(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "--output-format", "full", "a.py", cwd=proj)
    out = p.stdout
    assert "a.py:2:31: TFL101" in out and "[map-without-parallel-calls]" in out
    assert "2 | ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))" in out
    lines = out.splitlines()
    caret_at = next(i for i, ln in enumerate(lines) if "^" in ln)
    assert lines[caret_at].index("^") == lines[caret_at - 1].index("map(")
    assert lines[caret_at].count("^") == len("map(lambda x: tf.strings.as_string(x))")
    assert "Safe fix: Add `num_parallel_calls=tf.data.AUTOTUNE`" in out
    assert "- ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))" in out
    assert "+ ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x), num_parallel_calls=tf.data.AUTOTUNE)" in out


def test_json_format_is_exactly_the_spec_shape(proj):
    (proj / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--select", "TFL101", "--output-format", "json", "a.py", cwd=proj)
    data = json.loads(p.stdout)
    assert isinstance(data, list) and len(data) == 1
    f = data[0]
    # the spec's keys in Ruff's order, and the rule's severity (issue 18) and impact (issue 14) beside its name
    assert list(f) == ["code", "name", "severity", "impact", "message", "filename", "cell", "location", "end_location",
                       "fix", "url"]
    assert f["severity"] == "warning" and f["impact"] == "high"
    assert f["code"] == "TFL101" and f["name"] == "map-without-parallel-calls"
    assert f["filename"] == "a.py" and f["cell"] is None and f["url"] is None
    assert f["location"] == {"row": 2, "column": 31}
    assert set(f["end_location"]) == {"row", "column"}
    assert set(f["fix"]) == {"applicability", "message", "edits"}
    assert f["fix"]["applicability"] == "safe"
    (edit,) = f["fix"]["edits"]
    assert set(edit) == {"content", "location", "end_location"}
    assert edit["content"] == ", num_parallel_calls=tf.data.AUTOTUNE"
    assert edit["location"] == edit["end_location"] == {"row": 2, "column": 68}
    # the edit, applied at its 1-based row/column, gives the fixed file
    lines = TF_MAP.splitlines(keepends=True)
    r, c = edit["location"]["row"], edit["location"]["column"]
    lines[r - 1] = lines[r - 1][: c - 1] + edit["content"] + lines[r - 1][c - 1:]
    assert "".join(lines) == TF_MAP_FIXED


def test_json_empty_is_empty_array(proj):
    (proj / "a.py").write_text(CLEAN)
    p = run_tflint("check", "--select", "TFL101", "--output-format", "json", "a.py", cwd=proj)
    assert json.loads(p.stdout) == [] and p.returncode == 0


# -- rule documentation -----------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["TFL101", "map-without-parallel-calls"])
def test_rule_doc(key):
    p = run_tflint("rule", key)
    assert p.returncode == 0
    assert "map-without-parallel-calls (TFL101)" in p.stdout
    for heading in ("## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in p.stdout


def test_rule_unknown_exits_2():
    p = run_tflint("rule", "no-such-rule")
    assert p.returncode == 2 and "no-such-rule" in p.stderr


def test_rules_json():
    p = run_tflint("rules", "--json")
    assert p.returncode == 0
    data = json.loads(p.stdout)
    by_code = {r["code"]: r for r in data}
    assert {"TFL001", "TFL002", "TFL101", "TFL102"} <= set(by_code)
    assert by_code["TFL101"]["name"] == "map-without-parallel-calls"
    assert len({r["name"] for r in data}) == len(data)


def test_ascii_terminal_never_crashes(proj):
    (proj / "a.py").write_text(TF_MAP + "for x in ds:\n    train_step(x)\n# é\n")
    for fmt in ("concise", "full", "json", "github", "sarif"):
        p = run_tflint("check", "--output-format", fmt, "a.py", cwd=proj, env={"PYTHONIOENCODING": "ascii"})
        no_traceback(p)
        assert p.returncode == 1, (fmt, p.stderr)


def test_stdin_fix_keeps_encoding_and_bom(proj):
    src = "\ufeffimport tensorflow as tf\ns = 'é'\n" + TF_MAP.splitlines()[1] + "\r\n"
    p = subprocess.run(
        [sys.executable, "-m", "tflint", "check", "--select", "TFL101", "--fix", "-"], cwd=proj,
        input=src.encode("utf-8"), capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="ascii"), timeout=120,
    )
    assert p.stdout == src.replace(TF_MAP.splitlines()[1], TF_MAP_FIXED.splitlines()[1]).encode("utf-8")
    latin = b"# -*- coding: latin-1 -*-\nimport tensorflow as tf\ns = '\xe9'\n" + TF_MAP.splitlines()[1].encode() + b"\n"
    p = subprocess.run([sys.executable, "-m", "tflint", "check", "--select", "TFL101", "--fix", "-"], cwd=proj,
                       input=latin, capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert p.stdout == latin.replace(TF_MAP.splitlines()[1].encode(), TF_MAP_FIXED.splitlines()[1].encode())


def test_tfl104_and_tfl201_messages_name_a_remedy():
    """Issue 18 item 6: every finding says what to do, including the two whose short messages did not."""
    from tflint.api import default_settings
    from tflint.engine import check_text

    code = ("import tensorflow as tf\n\n\ndef gen():\n    while True:\n        yield 1\n\n\n"
            "ds = tf.data.Dataset.from_generator(gen, output_types=tf.int32)\n\n\n"
            "@tf.function\ndef f(x):\n    if tf.reduce_sum(x) > 0:\n        y = x\n    else:\n        y = -x\n    return y\n")
    found = {f.code: f.message for f in check_text(code, "m.py", default_settings(select=["TFL104", "TFL201"])).findings}
    assert "from_tensor_slices" in found["TFL104"] and "TFRecords" in found["TFL104"]
    assert "tf.where(cond, a, b)" in found["TFL201"]
