"""Fixes never lose data: atomic writes that keep the mode, no overwrite of a file changed since it was read,
line endings / encoding / BOM / trailing newline / comments kept, notebooks byte-identical outside the fixed
cells, --fix twice == --fix once, and never a write outside the paths given (symlinks included)."""
from __future__ import annotations

import codecs
import json
import os
import stat

import pytest

from test_cli import TF_MAP, TF_MAP_FIXED, no_traceback, run_tflint
from tflint.api import default_settings, process_path
from tflint.source import SourceError, read_source, write_atomic

FIX = default_settings(select=["TFL101"])


def _fix(path) -> "object":
    return process_path(str(path), FIX, fix=True)


@pytest.mark.parametrize(
    "raw, fixed",
    [
        (TF_MAP.encode(), TF_MAP_FIXED.encode()),
        (TF_MAP.replace("\n", "\r\n").encode(), TF_MAP_FIXED.replace("\n", "\r\n").encode()),
        (TF_MAP.replace("\n", "\r").encode(), TF_MAP_FIXED.replace("\n", "\r").encode()),
        (codecs.BOM_UTF8 + TF_MAP.encode(), codecs.BOM_UTF8 + TF_MAP_FIXED.encode()),
        (TF_MAP.rstrip("\n").encode(), TF_MAP_FIXED.rstrip("\n").encode()),  # no trailing newline
        (
            b"import tensorflow as tf\r\nx = 1\n" + TF_MAP.splitlines()[1].encode() + b"  # keep me\r\n# end\n",
            b"import tensorflow as tf\r\nx = 1\n" + TF_MAP_FIXED.splitlines()[1].encode() + b"  # keep me\r\n# end\n",
        ),
    ],
    ids=["lf", "crlf", "cr", "bom", "no-final-newline", "mixed-with-comments"],
)
def test_bytes_outside_the_edit_survive(tmp_path, raw, fixed):
    f = tmp_path / "a.py"
    f.write_bytes(raw)
    res = _fix(f)
    assert res.fixed == 1, res.messages
    assert f.read_bytes() == fixed
    # twice == once
    res = _fix(f)
    assert res.fixed == 0 and f.read_bytes() == fixed


def test_latin1_cookie_encoding_kept(tmp_path):
    raw = "# -*- coding: latin-1 -*-\nimport tensorflow as tf\ns = 'café'\n" + TF_MAP.splitlines()[1] + "\n"
    f = tmp_path / "a.py"
    f.write_bytes(raw.encode("latin-1"))
    assert _fix(f).fixed == 1
    out = f.read_bytes()
    assert b"caf\xe9" in out  # still latin-1, not UTF-8
    assert out.decode("latin-1") == raw.replace(TF_MAP.splitlines()[1], TF_MAP_FIXED.splitlines()[1])


def test_mode_kept_and_no_temp_files_left(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    f.chmod(0o751)
    assert _fix(f).fixed == 1
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_write_is_atomic_rename(tmp_path):
    """The fixed file is a new inode put in place by rename: a reader never sees a half-written file."""
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    before = f.stat().st_ino
    assert _fix(f).fixed == 1
    assert f.stat().st_ino != before


def test_failed_write_leaves_original_and_no_temp(tmp_path, monkeypatch):
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    res = _fix(f)
    assert f.read_text() == TF_MAP
    assert res.fixed == 0 and any("No space" in m for m in res.messages)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_file_changed_since_read_is_not_overwritten(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    src = read_source(str(f))
    f.write_text(TF_MAP + "# edited meanwhile\n")
    with pytest.raises(SourceError, match="changed on disk"):
        write_atomic(str(f), src.encode(TF_MAP_FIXED), expected=src.raw)
    assert f.read_text() == TF_MAP + "# edited meanwhile\n"


def test_file_changed_during_fix_is_not_overwritten(tmp_path, monkeypatch):
    """The whole path: the file is edited between reading and writing; the edit wins, a message says so."""
    import tflint.api as api

    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    real_fix_text = api.fix_text

    def slow_fix(text, path, settings):
        out = real_fix_text(text, path, settings)
        f.write_text("# someone saved the file\n")
        return out

    monkeypatch.setattr(api, "fix_text", slow_fix)
    res = _fix(f)
    assert f.read_text() == "# someone saved the file\n"
    assert res.fixed == 0 and any("changed on disk" in m for m in res.messages)
    assert [x.code for x in res.findings] == ["TFL101"]  # not fixed, so still reported


def test_fix_twice_equals_once_cli(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    src = (
        "import tensorflow as tf\n"
        "ds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x)).map(lambda x: tf.strings.as_string(x * 2))\n"
        "for x in ds:\n    train_step(x)\n"
    )
    f = tmp_path / "a.py"
    f.write_text(src)
    p = run_tflint("check", "--fix", "--unsafe-fixes", "a.py", cwd=tmp_path)
    no_traceback(p)
    once = f.read_text()
    assert once != src
    compile(once, "a.py", "exec")
    p = run_tflint("check", "--fix", "--unsafe-fixes", "a.py", cwd=tmp_path)
    assert f.read_text() == once
    assert "Fixed" not in p.stderr


def _notebook(cells_src: list[str], indent: int = 1) -> str:
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {"tags": ["intro"]}, "source": ["# Title\n", "text é\n"]},
            *[
                {
                    "cell_type": "code",
                    "execution_count": i + 1,
                    "metadata": {"collapsed": False, "custom": {"k": [1, 2]}},
                    "outputs": [{"name": "stdout", "output_type": "stream", "text": ["out ü\n"]}],
                    "source": src.splitlines(keepends=True),
                }
                for i, src in enumerate(cells_src)
            ],
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python", "version": "3.11"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=indent, ensure_ascii=False) + "\n"


def test_notebook_fix_keeps_every_other_byte(tmp_path):
    untouched = "x = 1\n%time y = 2\n!pip list\n"
    raw = _notebook([untouched, "import tensorflow as tf\n", TF_MAP.splitlines()[1] + "\nprint(ds)"])
    f = tmp_path / "n.ipynb"
    f.write_text(raw, encoding="utf-8")
    res = process_path(str(f), FIX, fix=True)
    assert res.fixed == 1, res.messages
    out = f.read_text(encoding="utf-8")
    data = json.loads(out)
    assert "".join(data["cells"][3]["source"]) == TF_MAP_FIXED.splitlines()[1] + "\nprint(ds)"
    # everything but that cell's source is identical, byte for byte
    old, new = json.loads(raw), data
    old["cells"][3]["source"] = new["cells"][3]["source"] = None
    assert old == new
    a = raw.split('"source"')
    b = out.split('"source"')
    assert len(a) == len(b)
    assert a[:4] == b[:4]  # markdown + first two code cells, byte-identical (raw text, not just JSON value)
    assert out.endswith('"nbformat_minor": 5\n}\n')
    assert "out ü" in out and "text é" in out  # non-ASCII kept as written
    # twice == once
    res = process_path(str(f), FIX, fix=True)
    assert res.fixed == 0 and f.read_text(encoding="utf-8") == out


@pytest.mark.parametrize("indent", [1, 2, 4])
def test_notebook_indentation_styles_round_trip(tmp_path, indent):
    raw = _notebook(["import tensorflow as tf\n" + TF_MAP.splitlines()[1] + "\n"], indent=indent)
    f = tmp_path / "n.ipynb"
    f.write_text(raw, encoding="utf-8")
    assert process_path(str(f), FIX, fix=True).fixed == 1
    out = f.read_text(encoding="utf-8")
    assert json.loads(out)["cells"][1]["source"][1] == TF_MAP_FIXED.splitlines()[1] + "\n"
    # the fixed document is laid out the way json.dumps(indent=...) would lay it out
    assert out == json.dumps(json.loads(out), indent=indent, ensure_ascii=False) + "\n"


# -- never write outside the paths given ----------------------------------------------------------------
def test_fix_does_not_follow_symlink_out_of_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.py"
    target.write_text(TF_MAP)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[tool.tflint]\n")
    (proj / "mine.py").write_text(TF_MAP)
    os.symlink(target, proj / "link.py")
    p = run_tflint("check", "--select", "TFL101", "--fix", ".", cwd=proj)
    no_traceback(p)
    assert (proj / "mine.py").read_text() == TF_MAP_FIXED
    assert target.read_text() == TF_MAP  # untouched
    assert os.path.islink(proj / "link.py")
    assert "outside the paths given" in p.stderr
    assert p.returncode == 1  # the finding through the link remains


def test_fix_through_named_symlink_keeps_link(tmp_path):
    """A symlink named on the command line: its target is what the user asked to fix; the link stays a link."""
    target = tmp_path / "real.py"
    target.write_text(TF_MAP)
    os.symlink(target, tmp_path / "link.py")
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--select", "TFL101", "--fix", "link.py", cwd=tmp_path)
    no_traceback(p)
    assert os.path.islink(tmp_path / "link.py")
    assert target.read_text() == TF_MAP_FIXED


def test_diff_and_check_never_write(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    st = f.stat()
    process_path(str(f), FIX, fix=False)
    process_path(str(f), FIX, fix=True, diff=True)
    assert f.read_text() == TF_MAP and f.stat().st_mtime_ns == st.st_mtime_ns


def test_refused_fix_keeps_file(tmp_path, monkeypatch):
    """A fix pass that would make the file unparseable is refused: the file is unchanged and a message says why."""
    import tflint.engine as engine
    from tflint.findings import Edit, Fix, Position

    real_check = engine.check_text

    def broken_fixes(text, path, settings):
        res = real_check(text, path, settings)
        bad = []
        for f in res.findings:
            if f.fix:
                e = f.fix.edits[0]
                f = f.with_changes(fix=Fix(f.fix.applicability, f.fix.message,
                                           (Edit("((", e.location, e.end_location, e.start, e.end),)))
            bad.append(f)
        return engine.CheckResult(bad, res.errors)

    monkeypatch.setattr(engine, "check_text", broken_fixes)
    f = tmp_path / "a.py"
    f.write_text(TF_MAP)
    res = _fix(f)
    assert f.read_text() == TF_MAP
    assert res.fixed == 0
    assert any("refused" in m for m in res.messages)
