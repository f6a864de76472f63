"""Bad input never breaks a run: each case gives a clear finding or message, the other files are still checked,
the exit code follows the spec, and no traceback reaches the user."""
from __future__ import annotations

import codecs
import json
import os
import sys

import pytest

from test_cli import TF_MAP, no_traceback, run_tflint
from tflint.api import default_settings, process_path

BAD_CASES = {
    # name -> (bytes, expected substring of the TFL001 message, or None when the file is simply fine)
    "empty.py": (b"", None),
    "comments.py": (b"# only\n# comments\n", None),
    "whitespace.py": (b"\n\n   \n\t\n", None),
    "latin1_no_cookie.py": (b'import tensorflow as tf\nx = "\xe9t\xe9"\n', "cannot decode as utf-8"),
    "latin1_first_line.py": (b'x = "\xe9"\n', "not valid UTF-8"),
    "bad_cookie.py": (b"# coding: no-such-codec\nx = 1\n", "unknown encoding"),
    "binary.py": (bytes(range(256)) * 4, "binary"),
    "late_nul.py": (b"import tensorflow as tf\n" + b"x = 1\n" * 2000 + b"y = '\x00'\n", "NUL"),
    "syntax.py": (b"import tensorflow as tf\ndef f(:\n    pass\n", "SyntaxError"),
    "deep_parens.py": (b"import tensorflow as tf\nx = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n", "nested"),
    "deep_lists.py": (b"import tensorflow as tf\nx = " + b"[" * 3000 + b"]" * 3000 + b"\n", "nested"),
    "long_chain.py": (b"import tensorflow as tf\nx = " + b"+".join([b"1"] * 4000) + b"\n", "nested"),
    "bad_notebook.ipynb": (b"this is not json", "not a valid notebook"),
    "nocells.ipynb": (b'{"metadata": {}, "nbformat": 4}', "no `cells`"),
}


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_each_bad_input_in_process(tmp_path, name):
    data, expect = BAD_CASES[name]
    f = tmp_path / name
    f.write_bytes(data)
    res = process_path(str(f), default_settings())
    assert not res.errors, res.errors
    syntax = [x for x in res.findings if x.code == "TFL001"]
    if expect is None:
        assert syntax == []
    else:
        assert len(syntax) == 1, res.findings
        assert expect in syntax[0].message
    # the file is never modified by a check
    assert f.read_bytes() == data


def _bad_tree(tmp_path):
    for name, (data, _) in BAD_CASES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "x.py").mkdir()  # a directory named like a source file
    (tmp_path / "x.py" / "inner.py").write_text(TF_MAP)
    os.symlink(tmp_path / "nowhere.py", tmp_path / "broken_link.py")
    os.symlink(tmp_path / "loop_b.py", tmp_path / "loop_a.py")
    os.symlink(tmp_path / "loop_a.py", tmp_path / "loop_b.py")
    os.symlink(tmp_path, tmp_path / "dir_loop")  # a folder symlink loop: never followed
    (tmp_path / "good.py").write_text(TF_MAP)
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")


def test_whole_bad_tree_run_goes_on(tmp_path):
    _bad_tree(tmp_path)
    p = run_tflint("check", "--select", "TFL001,TFL101", "--output-format", "json", ".", cwd=tmp_path, timeout=300)
    no_traceback(p)
    assert p.returncode == 1, p.stderr
    findings = json.loads(p.stdout)
    by_file: dict[str, list[str]] = {}
    for f in findings:
        by_file.setdefault(os.path.normpath(f["filename"]), []).append(f["code"])
    # the good files were still checked
    assert by_file["good.py"] == ["TFL101"]
    assert by_file[os.path.join("x.py", "inner.py")] == ["TFL101"]
    for name, (_, expect) in BAD_CASES.items():
        if expect is None:
            assert name not in by_file
        else:
            assert by_file.get(name) == ["TFL001"], (name, by_file)
    for link in ("broken_link.py", "loop_a.py", "loop_b.py"):
        assert by_file.get(link) == ["TFL001"], link
    msgs = {os.path.normpath(f["filename"]): f["message"] for f in findings if f["code"] == "TFL001"}
    assert "broken symlink" in msgs["broken_link.py"]
    assert "symbolic links" in msgs["loop_a.py"]
    assert not any("dir_loop" in k for k in by_file)


def test_only_bad_input_with_tfl001_ignored_gives_messages_not_crash(tmp_path):
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02")
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--ignore", "TFL001", "binary.py", cwd=tmp_path)
    no_traceback(p)
    assert p.returncode == 0
    assert "binary" in p.stderr


def test_unreadable_file(tmp_path):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop reading")
    f = tmp_path / "secret.py"
    f.write_text(TF_MAP)
    f.chmod(0)
    try:
        res = process_path(str(f), default_settings())
        assert [x.code for x in res.findings] == ["TFL001"]
        assert "permission denied" in res.findings[0].message
    finally:
        f.chmod(0o644)


def test_unreadable_file_via_open_failure(tmp_path, monkeypatch):
    """Even as root: a read that fails with PermissionError is a finding, not a crash."""
    f = tmp_path / "secret.py"
    f.write_text(TF_MAP)
    from pathlib import Path

    real = Path.read_bytes

    def deny(self):
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", deny)
    res = process_path(str(f), default_settings())
    assert [x.code for x in res.findings] == ["TFL001"]
    assert "permission denied" in res.findings[0].message


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF8 + TF_MAP.encode(),
        TF_MAP.replace("\n", "\r\n").encode(),
        TF_MAP.replace("\n", "\r").encode(),
        b"import tensorflow as tf\r\nx = 1\n" + TF_MAP.splitlines()[1].encode() + b"\r\n",
        b"# -*- coding: latin-1 -*-\nimport tensorflow as tf\ns = '\xe9'\n" + TF_MAP.splitlines()[1].encode() + b"\n",
        b"import tensorflow as tf\ndef f():\n\tds = tf.data.Dataset.range(3)\n\treturn ds.map(lambda x: tf.strings.as_string(x))\n",
    ],
    ids=["bom", "crlf", "cr", "mixed", "latin1-cookie", "tabs"],
)
def test_odd_but_valid_files_are_checked(tmp_path, data):
    f = tmp_path / "a.py"
    f.write_bytes(data)
    res = process_path(str(f), default_settings(select=["TFL101"]))
    assert not res.errors
    assert [x.code for x in res.findings] == ["TFL101"]
    assert f.read_bytes() == data


def test_very_long_line(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("import tensorflow as tf\nx = '" + "a" * 1_000_000 + "'\n" + TF_MAP.splitlines()[1] + "\n")
    res = process_path(str(f), default_settings(select=["TFL101"]))
    assert [x.code for x in res.findings] == ["TFL101"] and not res.errors


def test_huge_file_is_checked(tmp_path):
    """A 100k-line file is checked (not skipped) and the finding at its end is found."""
    f = tmp_path / "big.py"
    body = "".join(f"v{i} = {i}\n" for i in range(100_000))
    f.write_text("import tensorflow as tf\n" + body + TF_MAP.splitlines()[1] + "\n")
    res = process_path(str(f), default_settings(select=["TFL101"]))
    assert not res.errors
    assert [(x.code, x.location.row) for x in res.findings] == [("TFL101", 100_002)]


def test_oversized_file_is_reported(tmp_path, monkeypatch):
    import tflint.source as source

    monkeypatch.setattr(source, "MAX_BYTES", 1000)
    f = tmp_path / "a.py"
    f.write_text("x = 1\n" * 1000)
    res = process_path(str(f), default_settings())
    assert [x.code for x in res.findings] == ["TFL001"] and "limit" in res.findings[0].message


def test_stdin_binary_and_undecodable(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin=b"\x00\x01\xff")
    no_traceback(p)
    assert p.returncode == 1 and "TFL001" in p.stdout
    p = run_tflint("check", "-", cwd=tmp_path, stdin=b"x = '\xff'\n")
    no_traceback(p)
    assert p.returncode == 1 and "UTF-8" in p.stdout


def test_notebook_with_bad_cell_still_checks_other_notebooks(tmp_path):
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": "import tensorflow as tf\ndef f(:\n", "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "bad.ipynb").write_text(json.dumps(nb))
    nb["cells"][0]["source"] = TF_MAP
    (tmp_path / "good.ipynb").write_text(json.dumps(nb))
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--select", "TFL001,TFL101", "--output-format", "json", ".", cwd=tmp_path)
    no_traceback(p)
    got = sorted((f["filename"], f["code"], f["cell"]) for f in json.loads(p.stdout))
    assert got == [("bad.ipynb", "TFL001", 1), ("good.ipynb", "TFL101", 1)]


def test_shell_lines_in_a_script_exported_from_colab(tmp_path):
    header = "# -*- coding: utf-8 -*-\n\"\"\"train.ipynb\n\nAutomatically generated by Colaboratory.\n\"\"\"\n\n"
    (tmp_path / "export.py").write_text(header + "!pip install segmentation-models\nimport tensorflow as tf\n")
    (tmp_path / "script.py").write_text("!pip install segmentation-models\nimport tensorflow as tf\n")
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--select", "TFL001", "--output-format", "json", ".", cwd=tmp_path)
    assert sorted(f["filename"] for f in json.loads(p.stdout)) == ["script.py"]


def test_rule_crash_is_reported_not_fatal(tmp_path, monkeypatch):
    """An internal error in one rule on one file: reported (exit 2), other rules and files still run."""
    from tflint.registry import default_registry

    reg = default_registry()
    meta = reg.rules["TFL102"]

    class Boom(meta.check):  # type: ignore[misc, valid-type]
        def visit_Call(self, node):
            raise ValueError("boom")

    monkeypatch.setattr(meta, "check", Boom)
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    res = process_path(str(f), default_settings(select=["TFL101", "TFL102"]))
    assert [x.code for x in res.findings] == ["TFL101"]
    assert len(res.errors) == 1 and "TFL102" in res.errors[0] and "boom" in res.errors[0]


def test_syntax_warning_never_printed(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    (tmp_path / "a.py").write_text('x = "\\d"\ny = 1 is 1\n')
    p = run_tflint("check", "a.py", cwd=tmp_path, env={"PYTHONWARNINGS": "default"})
    assert "SyntaxWarning" not in p.stderr
    assert p.returncode == 0


@pytest.mark.skipif(sys.platform == "win32", reason="fifo")
def test_fifo_named_py_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "good.py").write_text(TF_MAP)
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--select", "TFL101", ".", cwd=tmp_path, timeout=60)
    no_traceback(p)
    assert "good.py" in p.stdout


USER_CODE = """
import os, signal, time
def hang():
    time.sleep(1000)
def crash():
    os.kill(os.getpid(), signal.SIGSEGV)
def boom():
    raise RuntimeError("user bug")
"""


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.parametrize("factory, needle, limit", [("hang", "did not finish within", "20"), ("crash", "SIGSEGV", "300"),
                                                    ("boom", "RuntimeError: user bug", "300")])
def test_runtime_user_code_crash_or_hang_is_reported(tmp_path, factory, needle, limit):
    """inspect runs user code only in a child with a time limit: a hang or a crash of that code is reported about
    the code (exit 2), tflint itself survives. The crash and the exception get a limit far above the quiet
    TensorFlow import (~10 s), so a loaded machine cannot turn them into a timeout; the hang hits any limit."""
    pytest.importorskip("tensorflow")
    (tmp_path / "user.py").write_text(USER_CODE)
    p = run_tflint("inspect", f"user.py::{factory}", "--timeout", limit, cwd=tmp_path, timeout=900)
    assert p.returncode == 2
    assert f"user.py::{factory}" in p.stderr and needle in p.stderr
    assert 'File "/' not in p.stderr.replace('File "' + str(tmp_path), "")  # no tflint-internal traceback


@pytest.mark.parametrize("src", ["type X = int\n", "def f[T](x: T) -> T:\n    return x\n", 'x = f"{d["a"]}"\n'])
def test_newer_python_syntax_is_not_a_syntax_error(tmp_path, src):
    """Syntax newer than the running Python (libcst's grammar knows it) is not reported, with or without TF."""
    for head in ("", "import tensorflow as tf\n"):
        f = tmp_path / "a.py"
        f.write_text(head + src)
        res = process_path(str(f), default_settings())
        assert [x.code for x in res.findings] == [] and not res.errors


@pytest.mark.parametrize("src, magic", [
    ("%matplotlib inline\n# a notebook cell kept as a .py file\nimport tensorflow as tf\n", "%matplotlib"),
    ("%%time\nimport tensorflow as tf\n", "%%time"),
    ("import tensorflow as tf\n\n!pip install tensorflow-datasets\n", "!pip"),
])
def test_notebook_cell_saved_as_python_says_so(src, magic):
    from tflint.api import check_source

    (f,) = check_source(src, "cell.py")
    assert f.code == "TFL001"
    assert f"IPython syntax (`{magic}`) in a .py file" in f.message and "notebook" in f.message


def test_plain_syntax_error_keeps_the_parser_message():
    from tflint.api import check_source

    (f,) = check_source("import tensorflow as tf\nx = (1,\n", "broken.py")
    assert f.code == "TFL001" and "IPython" not in f.message


def test_code_cpython_runs_but_libcst_cannot_parse_is_not_a_syntax_error(tmp_path):
    """A block indented with a space then a tab, its nested block with spaces only: CPython compiles it (the tab
    is expanded to column 8), libcst's tokenizer rejects it. The code runs, so no TFL001 claims it does not; the
    file is left unanalysed (unknown means silent)."""
    text = ("import tensorflow as tf\n\n\ndef f(xs):\n \tys = []\n \tfor x in xs:\n         ys.append(x)\n"
            " \treturn ys\n")
    compile(text, "f.py", "exec")  # CPython accepts it
    f = tmp_path / "mixed.py"
    f.write_text(text)
    res = process_path(str(f), default_settings(select=["TFL001"]))
    assert [x.code for x in res.findings] == []
    f.write_text(text.replace("ys.append(x)", "ys.append(x"))
    assert [x.code for x in process_path(str(f), default_settings(select=["TFL001"])).findings] == ["TFL001"]
