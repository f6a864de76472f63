"""CI output formats: GitHub Actions annotations (`--output-format github`) and SARIF 2.1.0 (`--output-format sarif`),
checked against the JSON output of the same run and, for SARIF, validated against the official schema."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tflint.cli import main
from tflint.findings import Finding, Position
from tflint.render.github import render as render_github

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = ROOT.parent / "shared" / "data" / "sarif-schema-2.1.0.json"

SOURCE = '''import tensorflow as tf

label = "😀"; ds = tf.data.Dataset.range(10).map(lambda x: tf.strings.as_string(x))
noisy = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(tf.cast(x, tf.float32) + tf.random.uniform([])))
for x in ds:
    train_step(x)
broken = tf.data.Dataset.range(3).map(
    lambda x: tf.strings.as_string(x))
'''
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["import tensorflow as tf\n", "ds = tf.data.Dataset.range(4)\n", "ds = ds.map(lambda x: tf.strings.as_string(x * 2))\n"]},
    ],
    "metadata": {"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}},
    "nbformat": 4, "nbformat_minor": 5,
}
SELECT = ["--select", "TFL101,TFL102", "--no-cache"]


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    return code, capsys.readouterr().out


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train, v2.py").write_text(SOURCE, encoding="utf-8")  # a comma in a name must be escaped
    (tmp_path / "explore.ipynb").write_text(json.dumps(NOTEBOOK, indent=1), encoding="utf-8")
    (tmp_path / "clean.py").write_text("import tensorflow as tf\n", encoding="utf-8")
    return tmp_path


def test_github_annotations_match_the_json_findings(project, capsys):
    code, out = run(capsys, "train, v2.py", "--output-format", "json", *SELECT)
    findings = json.loads(out)
    assert code == 1 and len(findings) >= 4
    code, out = run(capsys, "train, v2.py", "--output-format", "github", *SELECT)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == len(findings)
    pattern = re.compile(
        r"^::(?:error|warning|notice) title=tflint \((?P<code>TFL\d+)\),file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
        r"endLine=(?P<endLine>\d+),endColumn=(?P<endColumn>\d+)::(?P<msg>.*)$"
    )
    for line, f in zip(lines, findings):
        m = pattern.match(line)
        assert m, line
        assert m["code"] == f["code"]
        assert m["file"] == "train%2C v2.py"  # property values escape `,` and `:`
        assert (int(m["line"]), int(m["col"])) == (f["location"]["row"], f["location"]["column"])
        assert (int(m["endLine"]), int(m["endColumn"])) == (f["end_location"]["row"], f["end_location"]["column"])
        assert m["msg"] == f"train, v2.py:{f['location']['row']}:{f['location']['column']}: {f['code']} {f['message']}"
    multi = [f for f in findings if f["end_location"]["row"] > f["location"]["row"]]
    assert multi, "the fixture has a finding spanning two lines"


def test_github_annotations_for_notebooks_and_clean_files(project, capsys):
    code, out = run(capsys, "explore.ipynb", "--output-format", "github", *SELECT)
    assert code == 1
    (line,) = out.splitlines()
    # rows count within the cell, so the annotation names the file and says where, without line properties
    assert line.startswith("::warning title=tflint (TFL101),file=explore.ipynb::explore.ipynb:cell 2:3:9: TFL101 ")
    assert "line=" not in line
    code, out = run(capsys, "clean.py", "--output-format", "github", *SELECT)
    assert code == 0 and out == ""


def test_github_escapes_data_and_properties():
    f = Finding("TFL001", "syntax-error", "100% broken:\nsecond line\r", "dir:a,b.py", Position(2, 3), Position(2, 4))
    (line,) = render_github([f]).splitlines()
    props, _, data = line[len("::error "):].partition("::")
    assert props == "title=tflint (TFL001),file=dir%3Aa%2Cb.py,line=2,col=3,endLine=2,endColumn=4"
    assert data == "dir:a,b.py:2:3: TFL001 100%25 broken:%0Asecond line%0D"


@pytest.fixture(scope="module")
def sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"{SARIF_SCHEMA} not found")
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _errors(validator, doc) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def test_sarif_is_valid_and_matches_the_json_findings(project, capsys, sarif_validator):
    args = ["train, v2.py", "explore.ipynb", "--unsafe-fixes", *SELECT]
    _, out = run(capsys, *args, "--output-format", "json")
    findings = json.loads(out)
    code, out = run(capsys, *args, "--output-format", "sarif")
    assert code == 1
    doc = json.loads(out)
    assert _errors(sarif_validator, doc) == []
    assert doc["version"] == "2.1.0"
    (run_,) = doc["runs"]
    assert run_["columnKind"] == "unicodeCodePoints"  # columns count code points: the emoji is one column
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({f["code"] for f in findings})
    assert all(r["shortDescription"]["text"] and r["name"] for r in rules)
    results = run_["results"]
    assert len(results) == len(findings)
    for r, f in zip(results, findings):
        assert r["ruleId"] == f["code"] and rules[r["ruleIndex"]]["id"] == f["code"]
        assert r["message"]["text"] == f["message"]
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == Path(f["filename"]).as_posix()
        assert loc["region"] == {
            "startLine": f["location"]["row"], "startColumn": f["location"]["column"],
            "endLine": f["end_location"]["row"], "endColumn": f["end_location"]["column"],
        }
        if f["cell"] is not None:
            assert r["properties"]["cell"] == f["cell"]
            assert "fixes" not in r  # a fix in cell rows cannot be expressed on the .ipynb file
        elif f["fix"] is not None:
            (change,) = r["fixes"][0]["artifactChanges"]
            reps = change["replacements"]
            assert [x["insertedContent"]["text"] for x in reps] == [e["content"] for e in f["fix"]["edits"]]
            assert [(x["deletedRegion"]["startLine"], x["deletedRegion"]["startColumn"]) for x in reps] == [
                (e["location"]["row"], e["location"]["column"]) for e in f["fix"]["edits"]]
    # the emoji line: `map` is at column 45 counted in code points (46 counted in UTF-16 units)
    first = next(r for r in results if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
                 and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".py"))
    assert first["locations"][0]["physicalLocation"]["region"]["startColumn"] == 45


def test_sarif_without_findings_is_valid(project, capsys, sarif_validator):
    code, out = run(capsys, "clean.py", "--output-format", "sarif", *SELECT)
    assert code == 0
    doc = json.loads(out)
    assert _errors(sarif_validator, doc) == []
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []


def test_sarif_reports_unreadable_and_broken_files_validly(project, capsys, sarif_validator):
    (project / "broken.py").write_text("import tensorflow as tf\ndef f(:\n", encoding="utf-8")
    code, out = run(capsys, "broken.py", "--output-format", "sarif")
    doc = json.loads(out)
    assert code == 1
    assert _errors(sarif_validator, doc) == []
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "TFL001" and result["level"] == "error"
