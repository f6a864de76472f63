"""Every symbol, method and keyword named by TFL110's tables (rules/data/deprecated-data-api.yaml) exists in the
installed TensorFlow, the way tf_upgrade_v2 checks its rename tables. Old symbols may live under
`tf.compat.v1` only (TF1 APIs): the test says where each one really is. Skipped cleanly without TensorFlow."""
from __future__ import annotations

import builtins
import inspect
from pathlib import Path

import pytest
import yaml

tf = pytest.importorskip("tensorflow")

TABLE_FILE = Path(__file__).resolve().parent.parent / "rules" / "data" / "deprecated-data-api.yaml"
DATA = yaml.safe_load(TABLE_FILE.read_text(encoding="utf-8"))
MISSING = object()


def resolve(qualified: str):
    """The object a canonical qualified name names, or MISSING."""
    if qualified.startswith("builtins."):
        return getattr(builtins, qualified.split(".", 1)[1], MISSING)
    parts = qualified.split(".")
    if parts[0] != "tensorflow":
        return MISSING
    obj = tf
    for p in parts[1:]:
        obj = getattr(obj, p, MISSING)
        if obj is MISSING:
            return MISSING
    return obj


def resolve_old(qualified: str):
    """An old symbol: where it is, or under tf.compat.v1 for TF1 names (`tensorflow.data.X` ->
    `tensorflow.compat.v1.data.X`). Returns (where, object)."""
    obj = resolve(qualified)
    if obj is not MISSING:
        return qualified, obj
    if qualified.startswith("tensorflow.") and not qualified.startswith("tensorflow.compat."):
        v1 = "tensorflow.compat.v1." + qualified[len("tensorflow."):]
        return v1, resolve(v1)
    return qualified, MISSING


def params_of(obj) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    sig = inspect.signature(target)
    return [p for p in sig.parameters if p != "self"]


def names(value) -> list[str]:
    return value if isinstance(value, list) else [value]


PATTERN = DATA["pattern"]
TABLE = DATA["table"]


@pytest.mark.parametrize("entry", PATTERN, ids=lambda e: str(e.get("symbol") or e.get("call") or e.get("method")))
def test_pattern_entry_exists(entry):
    if "symbol" in entry:
        where, obj = resolve_old(entry["symbol"])
        assert obj is not MISSING, f"{entry['symbol']} is not in TensorFlow {tf.__version__}"
        if "replace-with" in entry:
            new = resolve(entry["replace-with"])
            assert new is not MISSING, f"replacement {entry['replace-with']} is missing"
            if entry.get("fix") == "safe" and not callable(obj):
                assert new == obj, f"{entry['symbol']} -> {entry['replace-with']}: a safe rename must be the same value"
    if "call" in entry:
        for q in names(entry["call"]):
            where, obj = resolve_old(q)
            assert obj is not MISSING, f"{q} (or {where}) is not in TensorFlow {tf.__version__}"
            if "keyword" in entry:
                assert entry["keyword"] in params_of(obj), f"{where} has no `{entry['keyword']}` parameter"
        if "rename-to" in entry:
            assert resolve(entry["rename-to"]) is not MISSING
    if "method" in entry:
        for m in names(entry["method"]):
            assert hasattr(tf.data.Dataset, m) or hasattr(tf.compat.v1.data.Dataset, m), f"no Dataset.{m}"
        if "rename-method" in entry:
            assert hasattr(tf.data.Dataset, entry["rename-method"]), f"no Dataset.{entry['rename-method']}"


@pytest.mark.parametrize("entry", TABLE, ids=lambda e: e["old"])
def test_table_entry_matches_tensorflow(entry):
    where, old = resolve_old(entry["old"])
    assert old is not MISSING, f"{entry['old']} is not in TensorFlow {tf.__version__}"
    assert entry["equivalence"] in ("exact", "approximate")
    assert entry.get("why"), "each entry states why its replacement is (or is not) equivalent"
    via = entry["via"]
    params = entry.get("params") or []
    if via in ("apply", "function"):
        assert params_of(old) == params, f"{where} parameters are {params_of(old)}, the table says {params}"
    mapped: set[str] = set(entry.get("drop") or [])
    if via == "function":
        mapped.add(params[0])  # the dataset becomes the receiver
    for step in entry["new"]:
        if "method" in step:
            method = getattr(tf.data.Dataset, step["method"], MISSING)
            assert method is not MISSING, f"tf.data.Dataset has no `{step['method']}`"
            accepted = params_of(method)
            for new_kw, old_p in (step.get("args") or {}).items():
                assert new_kw in accepted, f"Dataset.{step['method']} has no `{new_kw}`"
                assert old_p in params, f"`{old_p}` is not a parameter of {where}"
                mapped.add(old_p)
            for kw in step.get("autotune") or []:
                assert kw in accepted, f"Dataset.{step['method']} has no `{kw}`"
            for new_kw, old_p in (step.get("negate") or {}).items():
                assert new_kw in accepted and old_p in params
                mapped.add(old_p)
            positional = int(step.get("positional", 0))
            names_in_order = list((step.get("args") or {}).keys())[:positional]
            assert accepted[:positional] == names_in_order, (
                f"Dataset.{step['method']}: the first {positional} argument(s) written positionally must be "
                f"{accepted[:positional]}")
        elif "function" in step:
            assert resolve(step["function"]) is not MISSING
        elif "attribute" in step:
            assert hasattr(tf.data.Options, step["attribute"]), f"tf.data.Options has no `{step['attribute']}`"
    assert set(params) <= mapped, f"parameters of {where} neither mapped nor dropped: {sorted(set(params) - mapped)}"
    if entry.get("deprecated"):
        doc = (inspect.getdoc(old) or "").lower()
        assert "deprecated" in doc, f"{where} is not documented as deprecated in TensorFlow {tf.__version__}"


def test_since_versions_name_pattern_symbols():
    symbols = {e["symbol"] for e in PATTERN if "symbol" in e}
    for q, v in (DATA.get("since") or {}).items():
        assert q in symbols, f"`since:` names {q}, which no pattern entry reports"
        major, minor = (int(x) for x in str(v).split("."))
        assert (2, 0) <= (major, minor) <= tuple(int(x) for x in tf.__version__.split(".")[:2])


def test_deprecated_pattern_symbols_are_documented_deprecated():
    """Pattern symbols whose message says "deprecated" are deprecated in the installed TensorFlow."""
    for e in PATTERN:
        if "symbol" in e and "deprecated" in (e.get("message") or ""):
            where, obj = resolve_old(e["symbol"])
            assert "deprecated" in (inspect.getdoc(obj) or "").lower(), f"{where} is not documented as deprecated"
