"""`tflint inspect`: every TFL8xx finding with a factory that must produce it and one that must not, Grappler
attribution, dataset bottleneck, error handling, output formats.

The factories live in fixtures/runtime/. To keep the suite fast, all function factories are inspected in one
child process (one TensorFlow import) and all datasets in another; the CLI is run end to end a few times.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIX = "fixtures/runtime"
HAS_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = [pytest.mark.runtime, pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")]

FUNCTION_FACTORIES = [
    "seed_sqrt", "conv_fused", "dense_unfused", "retrace_python_scalar", "no_retrace_tensor", "retrace_shape",
    "retrace_dtype_only", "py_function_in_graph", "duplicate_matmul", "large_constant", "small_constant",
    "unrolled", "rolled", "debug_ops", "plain_callable", "python_driver", "unrolled_through_a_helper", "keras_stack",
    "add_to_itself", "mixed_precision_step",
]
ERROR_FACTORIES = ["raises", "junk", "bad_calls", "NOT_A_FUNCTION", "missing"]
DATASET_FACTORIES = ["slow_python_map", "cheap_pipeline", "fails_while_running", "tiny_pipeline", "cached_pipeline",
                     "cache_never_fills"]


def _line_of(file: str, text: str) -> int:
    for i, line in enumerate((ROOT / FIX / file).read_text().splitlines(), start=1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {file}")


def _codes(report) -> list[str]:
    return [f["code"] for f in report["findings"]]


def _one(report, code):
    found = [f for f in report["findings"] if f["code"] == code]
    assert len(found) == 1, report["findings"]
    return found[0]


def _run_many(targets, timeout=900):
    from tflint.runtime.child import run_in_child

    r = run_in_child("tflint.runtime.analyze:inspect_many", {"targets": targets, "graph": True}, timeout=timeout,
                     cwd=str(ROOT))
    assert r.ok, r.describe() + "\n" + r.stderr
    return {t.split("::")[1]: v for t, v in r.value.items()}


@pytest.fixture(scope="module")
def fn_reports():
    targets = [f"{FIX}/functions.py::{n}" for n in FUNCTION_FACTORIES]
    targets += [f"{FIX}/errors.py::{n}" for n in ERROR_FACTORIES]
    out = _run_many(targets)
    return out


@pytest.fixture(scope="module")
def ds_reports():
    return _run_many([f"{FIX}/datasets.py::{n}" for n in DATASET_FACTORIES])


def report(fn_reports, name):
    entry = fn_reports[name]
    assert entry["status"] == "ok", entry
    return entry["report"]


# --- Grappler ---------------------------------------------------------------------------------------------------

@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
class TestGrappler:
    def test_cse_removes_the_seed_duplicate(self, fn_reports):
        r = report(fn_reports, "seed_sqrt")
        cf = r["concrete_functions"][0]
        summaries = [o["summary"] for o in cf["optimizers"]]
        cse = [s for s in summaries if s.startswith("common_subgraph_elimination")]
        assert cse and "Pow×1" in cse[0] and "removed" in cse[0], summaries
        assert cf["before"]["ops"]["Pow"] == 2
        assert "Pow" not in cf["after"]["ops"]
        assert cf["after"]["nodes"] < cf["before"]["nodes"]
        assert "TFL803" not in _codes(r)  # Grappler removed it: nothing is left to report

    def test_remapper_fuses_conv_bias_relu(self, fn_reports):
        r = report(fn_reports, "conv_fused")
        cf = r["concrete_functions"][0]
        assert any(o["summary"] == "remapper fused Conv2D+BiasAdd+Relu into _FusedConv2D" for o in cf["optimizers"])
        assert cf["after"]["ops"].get("_FusedConv2D") == 1
        assert "Conv2D" not in cf["after"]["ops"]
        assert "fused" in cf["changes"].values() and "removed" in cf["changes"].values()
        assert "TFL805" not in _codes(r)

    def test_python_range_unrolls_and_tf_range_does_not(self, fn_reports):
        unrolled = report(fn_reports, "unrolled")
        rolled = report(fn_reports, "rolled")
        assert unrolled["concrete_functions"][0]["before"]["ops"]["Mul"] == 40
        assert rolled["concrete_functions"][0]["before"]["ops"].get("Mul", 0) == 1
        f = _one(unrolled, "TFL807")
        assert f["line"] == _line_of("functions.py", "for _ in range(40)")
        assert "40 times" in f["message"] and "TFL207" in f["message"]
        assert "TFL807" not in _codes(rolled)
        assert rolled["concrete_functions"][0]["before"]["functions"] >= 2  # while cond + body in the library

    def test_a_loop_that_calls_a_helper_is_reported_at_the_loop(self, fn_reports):
        f = _one(report(fn_reports, "unrolled_through_a_helper"), "TFL807")
        assert f["line"] == _line_of("functions.py", "for _ in range(12):  # TFL807 here")
        assert "12 times" in f["message"]

    def test_a_keras_models_layers_are_not_an_unrolled_loop(self, fn_reports):
        r = report(fn_reports, "keras_stack")
        cf = r["concrete_functions"][0]
        assert cf["before"]["ops"]["MatMul"] == 12  # the repetition is there ...
        assert "TFL807" not in _codes(r)  # ... but no loop of the user's made it
        remap = [o["summary"] for o in cf["optimizers"] if o["optimizer"] == "remapper"]
        assert remap == ["remapper fused MatMul+BiasAdd+Relu into _FusedMatMul ×12"], remap

    def test_library_internals_and_the_meta_optimizers_own_step_are_not_reported(self, fn_reports):
        r = report(fn_reports, "mixed_precision_step")
        assert r["function"]["calls"] == 3 and r["function"]["retraces"] == []  # two traces in call 1: no retrace
        assert "TFL801" not in _codes(r)
        assert r["library_findings"] >= 1  # a graph finding in Keras's loss-scale internals: counted ...
        assert all(f["file"] and f["line"] > 1 for f in r["findings"])  # ... not pinned to line 1 of this file
        summaries = [o["summary"] for cf in r["concrete_functions"] for o in cf["optimizers"]]
        rewired = [s.split(" rewired ")[1] for s in summaries if " rewired " in s]
        assert len(rewired) == len(set(rewired)), summaries  # no "rewired 186 nodes" per optimizer

    def test_a_rewrite_is_what_it_replaced_and_what_replaced_it(self, fn_reports):
        cf = report(fn_reports, "add_to_itself")["concrete_functions"][0]
        arith = [o for o in cf["optimizers"] if o["optimizer"] == "arithmetic_optimizer"]
        assert len(arith) == 1 and arith[0]["removed"] == {"AddV2": 1} and arith[0]["added"].get("Mul") == 1, arith
        assert arith[0]["summary"].startswith("arithmetic_optimizer rewrote AddV2×1 into ")


# --- findings ---------------------------------------------------------------------------------------------------

@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
class TestFindings:
    def test_tfl801_python_scalar(self, fn_reports):
        r = report(fn_reports, "retrace_python_scalar")
        assert r["function"]["traces"] == 3
        f = _one(r, "TFL801")
        assert "`n`" in f["message"] and "Python value" in f["message"] and "TFL202" in f["message"]
        assert f["line"] == _line_of("functions.py", "def step")
        assert [c["call"] for c in r["function"]["retraces"]] == [2, 3]

    def test_a_python_driver_runs_as_python_and_its_steps_retracing_is_reported(self, fn_reports):
        r = report(fn_reports, "python_driver")
        assert r["function"]["driver"] is True and r["function"]["wrapped"] is False
        (step,) = r["functions"]
        assert step["name"] == "_driven_step" and step["calls"] == 5 and step["traces"] == 5
        f = _one(r, "TFL801")
        assert "`i` is a Python value" in f["message"] and f["line"] == _line_of("functions.py", "def _driven_step")
        assert [c["call"] for c in step["retraces"]] == [2, 3, 4, 5]
        call_line = _line_of("functions.py", "    _driven_step(x, i)")
        assert all(c["site"][1] == call_line for c in step["retraces"])
        assert f"(called from line {call_line})" in f["message"]  # the call site, in the finding itself
        assert "TFL807" not in _codes(r)  # the driver's loop is Python, not a loop unrolled into a graph

    def test_tfl801_shape(self, fn_reports):
        f = _one(report(fn_reports, "retrace_shape"), "TFL801")
        assert "`x` changed shape" in f["message"] and "float32[3]" in f["message"]

    def test_tfl801_silent(self, fn_reports):
        r = report(fn_reports, "no_retrace_tensor")
        assert r["function"]["traces"] == 1 and "TFL801" not in _codes(r)
        r = report(fn_reports, "retrace_dtype_only")  # float32 then float64: two traces, unavoidable
        assert r["function"]["traces"] == 2 and "TFL801" not in _codes(r)

    def test_tfl802(self, fn_reports):
        f = _one(report(fn_reports, "py_function_in_graph"), "TFL802")
        assert f["line"] == _line_of("functions.py", "tf.py_function(lambda a")
        assert "TFL802" not in _codes(report(fn_reports, "seed_sqrt"))

    def test_tfl803(self, fn_reports):
        f = _one(report(fn_reports, "duplicate_matmul"), "TFL803")
        assert "MatMul" in f["message"] and f["line"] == _line_of("functions.py", "tf.matmul(x, self.w) +")
        assert "TFL803" not in _codes(report(fn_reports, "seed_sqrt"))

    def test_tfl804(self, fn_reports):
        f = _one(report(fn_reports, "large_constant"), "TFL804")
        assert "11.0 MiB" in f["message"] and f["line"] == _line_of("functions.py", "tf.gather(TABLE")
        assert "TFL804" not in _codes(report(fn_reports, "small_constant"))

    def test_tfl805(self, fn_reports):
        f = _one(report(fn_reports, "dense_unfused"), "TFL805")
        assert "MatMul + AddV2 + Relu" in f["message"] and "bias_add" in f["message"]
        assert f["line"] == _line_of("functions.py", "tf.nn.relu(tf.matmul(x, w) + b)")
        assert "TFL805" not in _codes(report(fn_reports, "conv_fused"))

    def test_tfl808(self, fn_reports):
        r = report(fn_reports, "debug_ops")
        found = sorted((f["line"], f["message"].split("`")[1]) for f in r["findings"] if f["code"] == "TFL808")
        assert found == [(_line_of("functions.py", "check_numerics(x,"), "CheckNumerics"),
                         (_line_of("functions.py", 'tf.print("x:"'), "PrintV2")]
        assert "TFL808" not in _codes(report(fn_reports, "seed_sqrt"))

    def test_plain_callable_is_wrapped(self, fn_reports):
        r = report(fn_reports, "plain_callable")
        assert r["function"]["wrapped"] is True and r["findings"] == []

    def test_clean_functions_have_no_findings(self, fn_reports):
        for name in ("seed_sqrt", "conv_fused", "no_retrace_tensor", "small_constant", "rolled"):
            assert report(fn_reports, name)["findings"] == [], name


# --- datasets ---------------------------------------------------------------------------------------------------

@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
class TestDatasets:
    def test_known_bottleneck(self, ds_reports):
        r = ds_reports["slow_python_map"]["report"]
        py_line = _line_of("datasets.py", "tf.py_function(_slow")
        b = _one(r, "TFL806")
        assert b["line"] == py_line
        assert "num_parallel_calls" in b["message"] and "GIL" in b["message"]
        assert _one(r, "TFL802")["line"] == py_line
        kinds = [s["kind"] for s in r["stages"]]
        assert kinds == ["range", "map", "map", "batch", "prefetch"]
        assert [s["bottleneck"] for s in r["stages"]] == [False, False, True, False, False]
        assert r["stages"][3]["source_elements_per_element"] == 32
        assert r["graph"]["dataset_ops"][0] == "RangeDataset"
        # each stage's own cost is stated, and the bottleneck is the stage that adds the most
        own = {i: s["own_us"] for i, s in enumerate(r["stages"]) if s["own_us"] is not None}
        assert max(own, key=own.get) == 2 and own[2] > 1000  # the 2 ms Python map
        # the message states the cost its verdict measured (the stage table's own cost is another measurement of
        # the same stage, which a loaded machine makes differ by a few percent)
        added = b["extra"]["added_us"]
        assert added > 1000 and f"+{added:,.0f} µs per element" in b["message"]
        assert r["stages"][4]["own_us"] is None  # prefetch does no work of its own

    def test_too_few_elements_is_said_not_judged(self, ds_reports):
        r = ds_reports["tiny_pipeline"]["report"]
        assert "TFL806" not in _codes(r)
        assert r["bottleneck_note"].startswith("too few elements to judge a bottleneck") and "ran out" in r["bottleneck_note"]

    def test_pipeline_that_fails_while_running(self, ds_reports):
        e = ds_reports["fails_while_running"]
        assert e["status"] == "error"
        assert e["message"].startswith("iterating the pipeline up to `map(lambda)` (created at line ")
        assert "InvalidArgumentError" in e["message"]

    def test_a_cached_pipeline_is_judged_on_the_epochs_after_the_first(self, ds_reports):
        r = ds_reports["cached_pipeline"]["report"]
        cache = r["cache"]
        assert cache["filled"] and cache["elements"] == 20_000
        assert cache["first_rate"] > 0 and cache["cached_rate"] > 0  # both rates are reported
        # one rate for the cached epochs: the cache() row's, the one TFL806 measures the stages after it against
        row = r["stages"][2]
        assert row["kind"] == "cache" and cache["cached_rate"] == (row["effective_rate"] or row["rate"])
        from tflint.runtime.inspect import text_report

        text = text_report("datasets.py::cached_pipeline", {**r, "wall_s": 1.0, "timings": {}}, [], [])
        cache_row = next(ln for ln in text.splitlines() if ln.strip().startswith("cache() ") and "/s" in ln)
        assert f"{cache['cached_rate']:,.0f}/s" in cache_row
        line = next(ln for ln in text.splitlines() if ln.strip().startswith("cache() (line"))
        import re

        assert re.findall(r"[\d,]+/s", line) == [f"{cache['first_rate']:,.0f}/s", f"{cache['cached_rate']:,.0f}/s"]
        assert cache["line"] == _line_of("datasets.py", "ds = ds.cache()")
        first_map = _line_of("datasets.py", "tf.py_function(_decode")
        every_epoch = _line_of("datasets.py", "tf.fill([256, 256], tf.cast")
        # the Python map before the cache runs in the first epoch only (0.1 ms sleep + py_function vs a range)
        assert cache["first_epoch_bottleneck"]["line"] == first_map
        assert [s["from_cache"] for s in r["stages"]] == [False, False, True, True, True, True]
        # the verdict is on what every later epoch runs: the 256x256 matmul map after the cache
        assert _one(r, "TFL806")["line"] == every_epoch
        assert "in every epoch after the first" in _one(r, "TFL806")["message"]
        assert all(".cache()" not in f["message"] for f in r["findings"])  # it caches already

    def test_a_cache_that_never_fills_gets_no_verdict(self, ds_reports):
        r = ds_reports["cache_never_fills"]["report"]
        assert "TFL806" not in _codes(r)
        assert not r["cache"]["filled"] and "never ends" in r["cache"]["note"]
        assert r["bottleneck_note"].startswith("no bottleneck claimed: the pipeline caches")

    def test_cheap_pipeline_is_silent(self, ds_reports):
        r = ds_reports["cheap_pipeline"]["report"]
        assert r["findings"] == []
        assert all(s["rate"] for s in r["stages"])


# --- errors -----------------------------------------------------------------------------------------------------

@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
class TestFactoryErrors:
    def test_messages(self, fn_reports):
        e = fn_reports["raises"]
        assert e["status"] == "error"
        assert e["message"] == "errors.py::raises() raised RuntimeError: the data folder is missing"
        assert "_helper" in e["details"] and "tflint/runtime" not in e["details"]
        assert "returned int" in fn_reports["junk"]["message"]
        assert "(fn, str)" in fn_reports["bad_calls"]["message"]
        assert "not a zero-argument function" in fn_reports["NOT_A_FUNCTION"]["message"]
        assert "has no top-level `missing`" in fn_reports["missing"]["message"]


def _cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "tflint", "inspect", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_cli_hang_is_killed_with_a_clear_message():
    p = _cli(f"{FIX}/errors.py::hangs", "--timeout", "3")
    assert p.returncode == 2
    assert "did not finish within 3 s" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_cli_raise_shows_the_users_traceback_only():
    p = _cli(f"{FIX}/errors.py::raises", "--timeout", "300")  # far above a loaded TF import
    assert p.returncode == 2
    assert "raised RuntimeError: the data folder is missing" in p.stderr
    assert "errors.py" in p.stderr and "tflint/runtime" not in p.stderr


@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_cli_json_suppression_and_dot_graph(tmp_path):
    out = tmp_path / "g.dot"
    p = _cli(f"{FIX}/suppressed.py::make", "--json", "--graph", str(out))
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["suppressed"] == 2  # `# noqa: TFL808` and `# tflint: ignore[unrolled-loop-in-graph]`
    [f] = data["findings"]
    assert set(f) == {"code", "name", "message", "filename", "cell", "location", "end_location", "fix", "url"}
    assert f["code"] == "TFL808" and f["name"] == "debug-ops-in-graph" and f["fix"] is None
    assert f["filename"] == f"{FIX}/suppressed.py"
    assert f["location"]["row"] == _line_of("suppressed.py", 'tf.print("y"')
    cf = data["report"]["concrete_functions"][0]
    assert cf["after"]["ops"]["_FusedConv2D"] == 1
    dot = out.read_text()
    assert dot.startswith("digraph") and "_FusedConv2D" in dot and "BiasAdd+Relu" in dot
    assert '"legend:fused"' in dot and '"legend:removed"' in dot


@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_cli_text_report_for_a_dataset():
    p = _cli(f"{FIX}/datasets.py::slow_python_map")
    assert p.returncode == 1, p.stderr
    assert "<- bottleneck" in p.stdout and "TFL806" in p.stdout and "TFL802" in p.stdout
    assert "Found 2 runtime findings" in p.stdout
    line = _line_of("datasets.py", "tf.py_function(_slow")
    # points at `.map`, where the static TFL101/TFL105 point too
    assert f"datasets.py:{line}:13: TFL806" in p.stdout and f"datasets.py:{line}:13: TFL802" in p.stdout


# --- without TensorFlow -----------------------------------------------------------------------------------------

def test_usage_errors_need_no_child(tmp_path):
    p = _cli("no_separator.py", timeout=60)
    assert p.returncode == 2 and "expected FILE::FACTORY" in p.stderr
    p = _cli("does_not_exist.py::make", timeout=60)
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _cli(f"{FIX}/errors.py::junk", "--graph", str(tmp_path / "g.png"), timeout=60)
    assert p.returncode == 2 and ".dot, .svg or .graphml" in p.stderr


def test_parent_never_imports_tensorflow():
    code = ("import sys, tflint.cli, tflint.runtime.inspect, tflint.runtime.child; "
            "assert 'tensorflow' not in sys.modules; print('ok')")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "ok", p.stderr


SYNTHETIC = {
    "kind": "function",
    "concrete_functions": [{
        "graph_before": {"nodes": [{"id": "x", "op": "Placeholder", "fused_ops": []},
                                   {"id": "Conv2D", "op": "Conv2D", "fused_ops": []},
                                   {"id": "Relu", "op": "Relu", "fused_ops": []}],
                         "edges": [{"source": "x", "target": "Conv2D", "control": False},
                                   {"source": "Conv2D", "target": "Relu", "control": False}]},
        "graph_after": {"nodes": [{"id": "x", "op": "Placeholder", "fused_ops": []},
                                  {"id": "Relu", "op": "_FusedConv2D", "fused_ops": ["BiasAdd", "Relu"]}],
                        "edges": [{"source": "x", "target": "Relu", "control": False}]},
        "changes": {"Conv2D": "removed", "Relu": "fused"},
    }],
}


def test_graphml_marks_grappler_changes(tmp_path):
    import networkx as nx

    from tflint.runtime.inspect import write_graph

    out = tmp_path / "g.graphml"
    write_graph(SYNTHETIC, out)
    g = nx.read_graphml(out)
    assert g.nodes["Conv2D"]["status"] == "removed"
    assert g.nodes["Relu"]["status"] == "fused" and g.nodes["Relu"]["op_after"] == "_FusedConv2D"
    assert g.nodes["x"]["status"] == "kept"


def test_svg_needs_graphviz_or_falls_back_to_dot(tmp_path):
    import shutil

    from tflint.runtime.inspect import write_graph

    out = tmp_path / "g.svg"
    note = write_graph(SYNTHETIC, out)
    if shutil.which("dot"):
        assert out.read_text().lstrip().startswith(("<?xml", "<svg")) and "SVG" in note
    else:
        assert (tmp_path / "g.dot").exists() and "not installed" in note


@pytest.mark.parametrize("code", [f"TFL80{i}" for i in range(1, 9)])
def test_rule_docs(code, capsys):
    from tflint.cli import main

    assert main(["rule", code, "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["runtime"] is True and meta["fix"] == ["none"]
    for section, text in meta["docs"].items():
        assert text, f"{code}: empty `{section}`"


def test_identical_retrace_causes_are_one_line():
    from tflint.runtime.inspect import retrace_lines

    def r(call, before, after, arg="i", kind="python-value"):
        return {"call": call, "changes": [{"argument": arg, "kind": kind, "before": before, "after": after}]}

    lines = retrace_lines([r(2, "0", "1"), r(3, "0", "2"), r(4, "0", "3"), r(6, "float32[3]", "float32[4]", "x", "shape")])
    assert lines == ["  calls 2-4 traced again: `i` 0 -> 1 -> 2 -> 3 (python-value)",
                     "  call 6 traced again: `x` float32[3] -> float32[4] (shape)"]
    assert retrace_lines([{"call": 2, "changes": []}]) == ["  call 2 traced again: no argument changed (closure or global?)"]
    home = ("/p/train.py", 3)
    sited = [dict(r(2, "0", "1"), site=["/p/train.py", 12]), dict(r(3, "0", "2"), site=["/p/loop.py", 7])]
    assert retrace_lines(sited, home) == [
        "  calls 2-3 traced again: `i` 0 -> 1 -> 2 (python-value) (called from line 12, loop.py:7)"]


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_without_tensorflow_the_runtime_commands_name_the_extra(command, tmp_path, monkeypatch, capsys):
    """No TensorFlow in this Python: an error naming the missing package and `pip install 'tflint[runtime]'`, exit
    2, not an internal error or an ImportError blamed on the user's code."""
    import importlib.util

    from tflint.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else real(name, *a))
    f = tmp_path / "pair.py"
    f.write_text("def make():\n    return None\n")
    assert main([command, f"{f}::make"]) == 2
    err = capsys.readouterr().err
    assert "tensorflow is not installed" in err and "pip install 'tflint[runtime]'" in err
    assert "Traceback" not in err


def test_the_stage_table_shows_each_stages_own_cost_and_the_rate_the_verdict_uses():
    from tflint.runtime.inspect import text_report

    def stage(label, raw, effective, own, **kw):
        return {"kind": label.split("(")[0], "label": label, "line": 3, "rate": raw, "effective_rate": effective,
                "own_us": own, **kw}

    rep = {"kind": "dataset", "stages": [stage("range()", 50_000, 50_000, 18.0),
                                         stage("map(f)", 4_000, 6_000, 148.7, bottleneck=True),
                                         stage("prefetch()", 6_000, 6_000, None)], "graph": {}}
    text = text_report("p.py::make", rep, [], [])
    row = next(line for line in text.splitlines() if line.lstrip().startswith("map(f)"))
    assert "6,000/s*" in row and "+148.7 µs" in row and "<- bottleneck" in row  # the rate the message quotes
    assert "* measured slower on its own" in text
    prefetch = next(line for line in text.splitlines() if line.lstrip().startswith("prefetch()"))
    assert "µs" not in prefetch and "*" not in prefetch


def test_bottleneck_advice_never_repeats_what_the_pipeline_does():
    from tflint.runtime.data import Stage, recommendation

    cached = [Stage(None, "range", "range()", None), Stage(None, "map", "map(f)", None, parallel=True),
              Stage(None, "cache", "cache()", None), Stage(None, "prefetch", "prefetch()", None)]
    text = recommendation(cached[1], cached)
    assert ".cache()" not in text and "prefetch" not in text and "vectorize" in text
    uncached = [st for st in cached if st.kind != "cache"]
    assert ".cache()" in recommendation(uncached[1], uncached)


def test_the_inspect_repeat_benchmarks_cases_exist():
    """bench/inspect_repeat.py's cases name factories that exist and expectations whose lines resolve."""
    import ast

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import inspect_repeat as bench_cases
    finally:
        sys.path.remove(str(ROOT / "bench"))
    cases = [(bench_cases.FILE, name) for name in bench_cases.EXPECTED]
    cases += [(file, factory) for file, factory, _ in bench_cases.FUNCTION_CASES.values()]
    for file, factory in cases:
        tree = ast.parse((ROOT / file).read_text())
        assert factory in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, (file, factory)
    for name in [*bench_cases.EXPECTED, *bench_cases.FUNCTION_CASES]:
        assert bench_cases.expected(name)  # every marker resolves to a line (SystemExit otherwise)
    assert bench_cases.expected("python_driver") == f"TFL801@{_line_of('functions.py', 'def _driven_step')}"
