"""Jupyter notebooks: checked by default, cells joined, magics skipped safely, findings name the cell and the row in
it, --fix writes back with every byte outside the changed cells identical, broken notebooks are findings."""
from __future__ import annotations

import json

import pytest

from test_cli import TF_MAP, TF_MAP_FIXED, no_traceback, run_tflint
from tflint.api import check_source, default_settings, process_path
from tflint.notebook import Notebook, join_cells, render_fixed

MAP_LINE = TF_MAP.splitlines()[1]
FIXED_LINE = TF_MAP_FIXED.splitlines()[1]


def nb_json(*cells, as_list=True, indent=1, language="python") -> str:
    out = []
    for c in cells:
        if isinstance(c, tuple):
            kind, src = c
        else:
            kind, src = "code", c
        cell = {"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True) if as_list else src}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    meta = {"kernelspec": {"language": language, "name": "k", "display_name": "K"}}
    return json.dumps({"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=indent) + "\n"


def findings(raw: str, select=("TFL101",)):
    return check_source(raw, "n.ipynb", default_settings(select=list(select)))


def test_cells_joined_names_resolve_across_cells():
    raw = nb_json("import tensorflow as tf\n", ("markdown", "# ds.map(f)\n"), "ds = tf.data.Dataset.range(3)\n",
                  "x = 1\nds = ds.map(lambda x: x)\n")
    fs = findings(raw)
    assert [(f.cell, f.location.row, f.location.column) for f in fs] == [(4, 2, 9)]


@pytest.mark.parametrize(
    "magic",
    ["%time y = 1", "%%bash\necho hi", "!pip install tensorflow", "x?", "tf.data??", "%matplotlib inline",
     "%%timeit\nds.map(lambda x: x)", "  !ls", "files = !ls", "%load_ext autoreload"],
)
def test_magics_skipped_safely(magic):
    raw = nb_json("import tensorflow as tf\nds = tf.data.Dataset.range(3)\n", magic + "\n", "ds = ds.map(lambda x: x)\n")
    fs = findings(raw, select=("TFL001", "TFL101"))
    assert [(f.code, f.cell, f.location.row) for f in fs] == [("TFL101", 3, 1)]


def test_magic_inside_indented_block_keeps_cell_parseable():
    raw = nb_json("import tensorflow as tf\nfor i in range(2):\n    %time y = i\nds = tf.data.Dataset.range(3).map(lambda x: x)\n")
    fs = findings(raw, select=("TFL001", "TFL101"))
    assert [(f.code, f.cell, f.location.row) for f in fs] == [("TFL101", 1, 4)]


def test_cell_that_does_not_parse_is_named():
    raw = nb_json("import tensorflow as tf\n", "def f(:\n    pass\n", MAP_LINE + "\n")
    fs = findings(raw, select=("TFL001", "TFL101"))
    assert fs and fs[0].code == "TFL001" and fs[0].cell == 2 and fs[0].location.row == 1


def test_non_python_kernel_is_not_checked():
    raw = nb_json("library(ggplot2)\nx <- c(1, 2)\n", language="R")
    assert findings(raw, select=("TFL001",)) == []


@pytest.mark.parametrize(
    "raw, needle",
    [("not json at all", "invalid JSON"), ("[1, 2]", "no `cells`"), ('{"cells": 3}', "no `cells`"), ("", "invalid JSON")],
)
def test_broken_notebooks_are_findings(raw, needle):
    fs = findings(raw, select=("TFL001",))
    assert len(fs) == 1 and fs[0].code == "TFL001" and needle in fs[0].message


def test_odd_cells_do_not_crash():
    data = {"cells": [None, 3, {"cell_type": "code"}, {"cell_type": "code", "source": 5},
                      {"cell_type": "code", "source": ["import tensorflow as tf\n", None, MAP_LINE]}],
            "metadata": {}, "nbformat": 4}
    fs = findings(json.dumps(data), select=("TFL001", "TFL101"))
    assert [(f.code, f.cell, f.location.row) for f in fs] == [("TFL101", 5, 2)]


def test_ipynb_found_in_folders_by_default(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    (tmp_path / "n.ipynb").write_text(nb_json(TF_MAP))
    p = run_tflint("check", "--select", "TFL101", ".", cwd=tmp_path)
    no_traceback(p)
    assert p.returncode == 1 and "n.ipynb:cell 1:2:31: TFL101" in p.stdout
    p = run_tflint("check", "--select", "TFL101", "--output-format", "json", ".", cwd=tmp_path)
    (f,) = json.loads(p.stdout)
    assert (f["cell"], f["location"]["row"], f["fix"]["edits"][0]["location"]["row"]) == (1, 2, 2)


@pytest.mark.parametrize("as_list", [True, False])
@pytest.mark.parametrize("indent", [1, 2])
def test_fix_writes_only_the_changed_cell(tmp_path, as_list, indent):
    cells = ["import tensorflow as tf\n%time z = 1\n", ("markdown", "Some *text*\n"), MAP_LINE + "\n!echo hi\nprint(1)",
             "y = 2  # untouched\n"]
    raw = nb_json(*cells, as_list=as_list, indent=indent)
    f = tmp_path / "n.ipynb"
    f.write_text(raw)
    res = process_path(str(f), default_settings(select=["TFL101"]), fix=True)
    assert res.fixed == 1, res.messages
    out = f.read_text()
    data = json.loads(out)
    src = data["cells"][2]["source"]
    assert ("".join(src) if as_list else src) == FIXED_LINE + "\n!echo hi\nprint(1)"  # magic restored, no final \n added
    # byte-identical outside the changed cell's source value
    before, after = raw.split(MAP_LINE.replace('"', '\\"'))[0], out.split(FIXED_LINE)[0]
    assert before == after
    tail_raw = raw[raw.index("print(1)"):]
    tail_out = out[out.index("print(1)"):]
    assert tail_raw == tail_out
    # second run: nothing left
    res = process_path(str(f), default_settings(select=["TFL101"]), fix=True)
    assert res.fixed == 0 and f.read_text() == out


def test_fix_that_adds_lines_keeps_cell_boundaries():
    # a fix that inserts a newline-containing edit must not blur the cells (checked through render_fixed)
    raw = nb_json("import tensorflow as tf\n", "ds = tf.data.Dataset.range(3)\n", "x = 1\n")
    nb = Notebook.parse(raw)
    new_text = nb.text.replace("x = 1\n", "x = 1\ny = 2\nz = 3\n")
    out = json.loads(render_fixed(nb, new_text))
    assert "".join(out["cells"][2]["source"]) == "x = 1\ny = 2\nz = 3\n"
    assert "".join(out["cells"][1]["source"]) == "ds = tf.data.Dataset.range(3)\n"


def test_join_cells_rows():
    text, rows = join_cells(["a = 1\nb = 2\n", "c = 3"])
    assert rows == [(1, 2), (4, 4)]
    assert text.splitlines()[0] == "a = 1" and text.splitlines()[3] == "c = 3"


def test_unicode_and_escapes_in_cells_round_trip(tmp_path):
    cells = ["import tensorflow as tf\ns = 'é\\t\\u00e9 ü 😀'\n", MAP_LINE + "\n"]
    for ensure_ascii in (True, False):
        nb = json.loads(nb_json(*cells))
        raw = json.dumps(nb, indent=1, ensure_ascii=ensure_ascii) + "\n"
        f = tmp_path / "n.ipynb"
        f.write_text(raw, encoding="utf-8")
        assert process_path(str(f), default_settings(select=["TFL101"]), fix=True).fixed == 1
        out = f.read_text(encoding="utf-8")
        assert out.split('"source"')[:2] == raw.split('"source"')[:2]
        assert json.loads(out)["cells"][0] == nb["cells"][0]


def test_notebook_stdin(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n")
    p = run_tflint("check", "--select", "TFL101", "--stdin-filename", "n.ipynb", "-", cwd=tmp_path, stdin=nb_json(TF_MAP))
    no_traceback(p)
    assert "n.ipynb:cell 1:2:31" in p.stdout
    p = run_tflint("check", "--select", "TFL101", "--fix", "--stdin-filename", "n.ipynb", "-", cwd=tmp_path,
                   stdin=nb_json(TF_MAP))
    assert "".join(json.loads(p.stdout)["cells"][0]["source"]) == TF_MAP_FIXED


def test_magics_and_question_marks_round_trip_through_fix(tmp_path):
    cell = (
        "import tensorflow as tf\n"
        "  !ls -la\n"
        "files = !ls\n"
        "doc = '''Is this a question?\n"
        "yes?\n"
        "'''\n"
        "tf.data.Dataset??\n"
        "for i in range(2):\n"
        "    %time y = i\n"
        + MAP_LINE + "\n"
    )
    f = tmp_path / "n.ipynb"
    f.write_text(nb_json(cell))
    res = process_path(str(f), default_settings(select=["TFL001", "TFL101"]), fix=True)
    assert res.fixed == 1 and not res.messages
    assert "".join(json.loads(f.read_text())["cells"][0]["source"]) == cell.replace(MAP_LINE, FIXED_LINE)


def test_crlf_notebook_keeps_crlf(tmp_path):
    raw = nb_json("import tensorflow as tf\n" + MAP_LINE + "\nx = 1").replace("\n", "\r\n")
    f = tmp_path / "n.ipynb"
    f.write_bytes(raw.encode())
    assert process_path(str(f), default_settings(select=["TFL101"]), fix=True).fixed == 1
    out = f.read_bytes()
    assert out.count(b"\n") == out.count(b"\r\n")  # no bare LF in the rewritten cell
    assert out.decode() == raw.replace(MAP_LINE, FIXED_LINE)
