"""The rule-file schema: it is a valid JSON Schema, every shipped rule and the example pack satisfy it, it agrees
with the declarative matcher's own validation, and a malformed file is reported with its line and the problem."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tflint.checks import declarative
from tflint.packs import PackError, load_rule_file, read_rule_file, rule_files, schema, schema_errors
from tflint.schema import SCHEMA_PATH, Validator, validator
from tflint.registry import DOC_SECTIONS, FIX_KINDS, rules_dir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_PACK = ROOT / "fixtures" / "rule-packs" / "example"


def test_schema_is_a_valid_json_schema_inside_the_package():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema())
    package = ROOT / "tflint"
    assert package in SCHEMA_PATH.parents  # shipped with the wheel (packages = ["tflint"])
    json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


BUILTIN_FILES = rule_files(rules_dir())


@pytest.mark.parametrize("path", BUILTIN_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_builtin_rule_file_satisfies_the_schema(path):
    rf = read_rule_file(path)
    assert [str(e) for e in schema_errors(rf)] == []
    meta, _ = load_rule_file(path, pack=False)
    assert meta.code.startswith("TFL")


@pytest.mark.parametrize("path", rule_files(EXAMPLE_PACK), ids=lambda p: p.name)
def test_example_pack_satisfies_the_schema(path):
    meta, rf = load_rule_file(path, pack=True)
    assert meta.pattern and rf.data.get("examples"), "every example rule has a pattern and examples"


def test_there_are_builtin_rules_to_check():
    assert len(BUILTIN_FILES) >= 4


# -- in sync with tflint/checks/declarative.py and the registry ---------------------------------------------------
def test_entry_keys_match_the_matcher():
    entry = schema()["$defs"]["entry"]
    assert set(entry["properties"]) == declarative.ENTRY_KEYS
    assert [alt["required"][0] for alt in entry["oneOf"]] == list(declarative.MATCH_KEYS)
    assert entry["properties"]["receiver"]["enum"] == list(declarative.RECEIVERS)
    assert schema()["$defs"]["fixKind"]["enum"] == list(FIX_KINDS)
    assert set(DOC_SECTIONS) <= set(schema()["properties"])


# Malformed `pattern:` entries: the schema and validate_entries must both reject them.
BAD_ENTRIES = [
    {"call": "a.b", "keywrd": "x"},
    {"call": "a.b", "method": "m"},
    {"keyword": "x"},
    {"call": "a.b", "rename-keyword": "y"},
    {"symbol": "a.b", "rename-method": "y"},
    {"call": "a.b", "replace-with": "a.c"},
    {"method": "m", "receiver": "tensor"},
    {"call": "a.b", "fix": "sometimes"},
    {"call": "a.b", "missing-arg": {"position": 1}},
    {"call": "a.b", "arg": "x"},
    {"call": "a.b", "add-arg": {"name": "x", "value": "1"}},
    "call: a.b",
]
GOOD_ENTRIES = [
    {"symbol": "tensorflow.data.experimental.AUTOTUNE", "replace-with": "tensorflow.data.AUTOTUNE"},
    {"call": ["tensorflow.function"], "keyword": "experimental_compile", "rename-keyword": "jit_compile"},
    {"method": "experimental_run_v2", "receiver": "strategy", "rename-method": "run", "fix": "safe"},
    {"method": "interleave", "receiver": "dataset", "missing-arg": {"name": "deterministic", "position": 4},
     "add-arg": {"name": "deterministic", "value": "False"}},
    {"method": "map", "missing-arg": {"name": "num_parallel_calls"},
     "add-arg": {"name": "num_parallel_calls", "symbol": "tensorflow.data.AUTOTUNE"}},
    {"call": "mypkg.make_reader", "arg": {"name": "num_readers", "position": 1, "equals": 1}, "message": "m"},
    {"call": "tensorflow.compat.v1.data.make_one_shot_iterator", "rename-to": "builtins.iter"},
    {"dataset-function": ["mypkg.data.load_dataset", "mypkg.data.load_eval"]},
]


def _rule(pattern):
    return {"code": "ACME1", "name": "a-rule", "summary": "s", "pattern": [pattern]}


def _schema_ok(data) -> bool:
    """The verdict of tflint's own validator, checked against the reference implementation every time."""
    from jsonschema import Draft202012Validator

    ours = validator().is_valid(data)
    assert ours == Draft202012Validator(schema()).is_valid(data), f"validators disagree on {data!r}"
    return ours


def _matcher_ok(pattern) -> bool:
    try:
        declarative.validate_entries([pattern])
        return True
    except declarative.PatternError:
        return False


@pytest.mark.parametrize("entry", BAD_ENTRIES, ids=str)
def test_bad_entries_are_rejected_by_both(entry):
    assert not _schema_ok(_rule(entry))
    assert not _matcher_ok(entry)


@pytest.mark.parametrize("entry", GOOD_ENTRIES, ids=str)
def test_good_entries_are_accepted_by_both(entry):
    assert _schema_ok(_rule(entry))
    assert _matcher_ok(entry)


# -- the error names the file, the line and the problem ------------------------------------------------------------
MALFORMED = [
    # (file text, line, words the message must contain)
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\n    keywrd: c\n", 6, "unknown key `keywrd`"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\n    method: c\n", 5, "exactly one of"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: tf.compat.v1.Session\n", 5, "not the import alias `tf.`"),
    ("code: ACME1\nname: a\nsummary: s\ndefault: maybe\npattern:\n  - call: a.b\n", 4, "`default` must be true or false"),
    ("code: ACME1\nname: a\nsummary: s\nfix: [safe, sfe]\npattern:\n  - call: a.b\n", 4, "`fix[1]`"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\n  - call: a.c\n    rename-keyword: k\n", 7,
     "`rename-keyword` needs `keyword`"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - method: m\n    receiver: tensor\n", 6, "`receiver` must be one of"),
    ("code: ACME1\nname: a\nsummary: s\nfix: safe\npattern:\n  - call: a.b\n    missing-arg: {name: q}\n"
     "    add-arg: {name: q, value: '1 +'}\n", 8, "must be a Python expression"),
    ("code: ACME1\nname: a\nsummary: s\ncode: ACME2\npattern:\n  - call: a.b\n", 4, "duplicate key `code`"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\n   - call: a.c\n", 6, "invalid YAML"),
    ("code: acme1\nname: a\nsummary: s\npattern:\n  - call: a.b\n", 1, "upper-case letters followed by digits"),
    ("name: a\nsummary: s\npattern:\n  - call: a.b\n", 1, "missing `code`"),
    ("code: ACME1\nname: Not A Name\nsummary: s\npattern:\n  - call: a.b\n", 2, "lower-case words joined by dashes"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\nexamples:\n  shuold-flag: []\n", 7,
     "unknown key `shuold-flag`"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\nexamples:\n  should-flag:\n    - |\n      x = (\n", 8,
     "not valid Python"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\nexamples:\n  target-version: 2.10\n", 7,
     "quoted"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\nexamples:\n  fixed:\n    - before: x\n", 8,
     "missing `after`"),
    ("- a\n- b\n", 1, "must be a mapping"),
    ("", 1, "empty"),
    ("code: TFL901\nname: a\nsummary: s\npattern:\n  - call: a.b\n", 1, "prefix TFL is reserved"),
    ("code: ACME1\nname: a\nsummary: s\n", 3, "needs a `pattern:`"),
    ("code: ACME1\nname: a\nsummary: s\nfix: none\npattern:\n  - call: a.b\n    keyword: k\n    rename-keyword: j\n", 8,
     "`rename-keyword` is a fix, but the rule says `fix: none`"),
    ("code: ACME1\nname: a\nsummary: s\npattern:\n  - call: a.b\nsince:\n  a.b: '2.4'\n", 6,
     "`since` is read only by built-in Python rules"),
]


@pytest.mark.parametrize("text,line,words", MALFORMED, ids=[m[2] for m in MALFORMED])
def test_malformed_rule_file_names_file_line_and_problem(tmp_path, text, line, words):
    path = tmp_path / "rule.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PackError) as info:
        load_rule_file(path, pack=True)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message, message


# -- tflint's validator agrees with the `jsonschema` package -------------------------------------------------------
def test_validator_agrees_with_jsonschema_on_every_known_file(tmp_path):
    import yaml

    docs = [read_rule_file(p).data for p in [*BUILTIN_FILES, *rule_files(EXAMPLE_PACK)]]
    for text, _, _ in MALFORMED:
        try:
            docs.append(yaml.safe_load(text))
        except yaml.YAMLError:
            pass
    assert len(docs) > 40
    for data in docs:
        _schema_ok(data)


def test_validator_refuses_schema_keywords_it_does_not_implement():
    with pytest.raises(ValueError, match="patternProperties"):
        Validator({"type": "object", "patternProperties": {"^x": {"type": "string"}}})


def _json_values():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=False, allow_infinity=False) | \
        st.sampled_from(["", "safe", "sfe", "none", "a.b", "tf.x", "tensorflow.data.AUTOTUNE", "ACME1", "TFL1",
                         "x y", "dataset", "2.4", "False", "name", "my-rule"])
    keys = st.sampled_from(["name", "value", "symbol", "position", "equals", "call", "method", "keyword", "before",
                            "after", "should-flag", "fixed", "x", "select", "target-version"])
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                        max_leaves=6)


BASE = {"code": "ACME1", "name": "a-rule", "summary": "s", "fix": ["safe"], "default": True,
        "pattern": [dict(GOOD_ENTRIES[3])],
        "examples": {"should-flag": ["x = 1\n"], "fixed": [{"before": "x\n", "after": "y\n"}]}}
TOP_KEYS = [*schema()["properties"], "unknown-key"]
ENTRY_KEYS = [*sorted(declarative.ENTRY_KEYS), "keywrd"]


def test_validator_agrees_with_jsonschema_on_mutated_rules():
    import copy

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.sampled_from(TOP_KEYS), st.sampled_from(ENTRY_KEYS), _json_values(), st.integers(0, 3))
    def check(top, entry_key, value, where):
        data = copy.deepcopy(BASE)
        if where == 0:
            data[top] = value
        elif where == 1:
            data["pattern"][0][entry_key] = value
        elif where == 2:
            data["pattern"][0].pop(entry_key, None)
            data.pop(top, None)
        else:
            data["examples"][top if top in ("select", "target-version") else "fixed"] = value
        _schema_ok(data)

    check()


def test_builtin_declarative_rules_carry_examples():
    """Every built-in rule written as data (`pattern:`) ships its own examples, run by `tflint test-rules rules/`:
    at least one should-flag, one should-not-flag, and a fixed pair when it offers a fix."""
    missing = []
    for path in BUILTIN_FILES:
        data = read_rule_file(path).data
        if not data.get("pattern"):
            continue
        ex = data.get("examples") or {}
        fixable = any(f != "none" for f in (data.get("fix") if isinstance(data.get("fix"), list) else [data.get("fix")]))
        for kind in ("should-flag", "should-not-flag", *(["fixed"] if fixable else [])):
            if not ex.get(kind):
                missing.append(f"{path.name}: no `{kind}` example")
    assert not missing, "\n".join(missing)


@pytest.mark.slow
def test_built_wheel_ships_the_schema_and_runs_test_rules(tmp_path):
    """From the wheel's own files (not the checkout): the schema is inside, a pack loads, and the built-in
    declarative rules' examples pass against the rules shipped as tflint/_rules."""
    import os
    import subprocess
    import sys
    import zipfile

    pytest.importorskip("hatchling")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist"),
                    str(ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("tflint-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert {"tflint/schema/rule.schema.json", "tflint/schema/__init__.py", "tflint/packs.py"} <= names
        z.extractall(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    shipped = tmp_path / "site" / "tflint" / "_rules"
    for target in (EXAMPLE_PACK, shipped):
        res = subprocess.run([sys.executable, "-m", "tflint", "test-rules", str(target)], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        assert " passed" in res.stdout and "failed" not in res.stdout


@pytest.mark.parametrize("text,line", [
    ("code: ACME1\nname: a\nsummary: s\nfix: safe\npattern: &p\n  - call: *p\n", 6),
    ("code: ACME1\nname: a\nsummary: s\noptions: &o {k: *o}\nx: &a [*a]\npattern:\n  - call: a.b\n", 5),
])
def test_recursive_yaml_anchors_are_reported_not_looped_on(tmp_path, text, line):
    path = tmp_path / "rule.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PackError) as info:
        load_rule_file(path, pack=True)
    assert str(info.value).startswith(f"{path}:{line}: ")
