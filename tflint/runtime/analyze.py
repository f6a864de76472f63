"""The child-side entry point of `tflint inspect`: `inspect_target(payload)`, called through `run_in_child`.

Imports TensorFlow, loads FILE::FACTORY, and returns a JSON-able report: for functions, every concrete function
traced for the calls with its graph statistics before/after Grappler and per-optimizer attribution; for datasets,
the stage chain and per-prefix throughput; and the raw findings (code, message, file, line), which the parent
turns into `Finding`s and filters through the suppression comments.
"""
from __future__ import annotations

import json
import time
from typing import Any, Optional

DEFAULTS = {
    "large_constant_bytes": 10 * 2**20,
    "unroll_min_repeats": 10,
    "bottleneck_min_added_us": 50.0,
    "bottleneck_min_ratio": 1.5,
    "measure_min_seconds": 0.45,
    "measure_max_elements": 1 << 20,
    "measure_budget": 20.0,
}


def inspect_target(payload: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    from .trace import silence_tf_logging

    silence_tf_logging()
    import tensorflow as tf  # noqa: F401 - imported before user code so dataset creation sites are recorded

    from . import data
    from .child import load_factory

    t_import = time.perf_counter() - t0
    opts = {**DEFAULTS, **(payload.get("options") or {})}
    data.record_sites()
    t1 = time.perf_counter()
    loaded = load_factory(payload["target"])
    t_factory = time.perf_counter() - t1
    if loaded.kind == "dataset":
        report = inspect_dataset(loaded.dataset, opts, payload.get("graph", False))
    else:
        report = inspect_function(loaded.fn, loaded.calls, opts, payload.get("graph", False))
    report["form"] = loaded.form
    report["tensorflow"] = tf.__version__
    report["timings"] = {"import_tensorflow_s": round(t_import, 3), "factory_s": round(t_factory, 3),
                         "analysis_s": round(time.perf_counter() - t1 - t_factory, 3)}
    return report


def inspect_many(payload: dict[str, Any]) -> dict[str, Any]:
    """Several targets in one child (one TensorFlow import): {target: {"status": "ok", "report": ...} or
    {"status": "error", "message": ...}}. Used by the tests and by callers that inspect many factories."""
    from .child import UserCodeError

    out: dict[str, Any] = {}
    for target in payload["targets"]:
        try:
            out[target] = {"status": "ok", "report": inspect_target({**payload, "target": target})}
        except UserCodeError as exc:
            out[target] = {"status": "error", "message": exc.message, "details": exc.details}
    return out


def _finding(code: str, message: str, loc: Optional[tuple[str, int]], **extra: Any) -> dict[str, Any]:
    return {"code": code, "message": message, "file": loc[0] if loc else None, "line": loc[1] if loc else None,
            "extra": extra}


def _locator(smap):
    """`locate(graph name, node name)` over an `OpMap` (trace.py): the node's own entry, else a node of that name in
    the main graph or anywhere, else the name without the prefixes that inlining adds."""

    def locate(gname: str, node: str) -> Optional[tuple[str, int]]:
        loc = smap.get((gname, node)) or smap.get(("", node)) or smap.first_named(node)
        if loc:
            return loc
        parts = node.split("/")
        for i in range(1, len(parts)):  # inlined copies carry their call site as a name prefix
            loc = smap.first_named("/".join(parts[i:]))
            if loc:
                return loc
        return None

    return locate


def inspect_function(fn, calls, opts: dict[str, Any], want_graph: bool) -> dict[str, Any]:
    from .trace import LoopIndex, observe_calls, retracing_message

    t0 = time.perf_counter()
    results, driver = observe_calls(fn, calls)
    t_trace = time.perf_counter() - t0
    findings: list[dict[str, Any]] = []
    for tr in results:
        msg = retracing_message(tr)
        if msg:
            findings.append(_finding("TFL801", msg[0], tr.def_location, **msg[1]))
    loops = LoopIndex()
    concretes = []
    seen: dict[tuple, dict[str, Any]] = {}
    library_only = 0
    for tr, cf in ((tr, cf) for tr in results for cf in tr.concrete):
        analysis = analyze_concrete(cf, opts, want_graph, loops, seen=seen, key_name=tr.name)
        if analysis is None:
            continue
        entry, found, library = analysis
        library_only += library
        findings += found
        concretes.append(entry)
    per_function = [{"name": tr.name, "wrapped": tr.wrapped, "calls": tr.calls, "traces": tr.traces,
                     "retraces": tr.causes, "defined_at": list(tr.def_location) if tr.def_location else None}
                    for tr in results]
    if driver:  # a Python driver: it ran as Python; the tf.functions it called are reported one by one
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        summary = {"name": name, "wrapped": False, "driver": True, "calls": len(calls),
                   "traces": sum(tr.traces for tr in results), "retraces": [], "trace_s": round(t_trace, 3)}
    else:
        summary = {**per_function[0], "driver": False, "trace_s": round(t_trace, 3)}
    return {
        "kind": "function",
        "function": summary,
        "functions": per_function,
        "concrete_functions": concretes,
        "library_findings": library_only,  # graph findings in ops created by library code only: not reported
        "findings": _dedupe(findings),
    }


def analyze_concrete(cf, opts: dict[str, Any], want_graph: bool = False, loops=None, *,
                     seen: Optional[dict[tuple, dict[str, Any]]] = None, key_name: str = "",
                     attribution: bool = True) -> Optional[tuple[dict[str, Any], list[dict[str, Any]], int]]:
    """One traced graph as `inspect` shows it: its statistics before and after Grappler, what each default
    optimizer does alone (without `attribution`: what the whole meta-optimizer did), and the graph findings (TFL802-TFL808) located at the user's lines.
    Returns (entry, findings, graph findings in library code only), or None when `seen` already holds a graph of
    `key_name` with the same statistics (retraces on Python values: graphs that differ only in constants)."""
    from . import graph as G
    from . import grappler
    from .trace import LoopIndex, OpMap, loop_of_op, op_location

    loops = loops if loops is not None else LoopIndex()
    t1 = time.perf_counter()
    before, after = grappler.optimize(cf)
    gb, ga = G.graph_set(before), G.graph_set(after)
    key = (key_name, json.dumps(G.graph_stats(before), sort_keys=True), json.dumps(G.graph_stats(after), sort_keys=True))
    if seen is not None and key in seen:
        seen[key]["identical_traces"] += 1
        return None
    if attribution:  # each default optimizer alone (twelve more Grappler runs)
        changes = grappler.attribute(cf, before)
    else:  # what the whole meta-optimizer changed, from the one run above
        whole = grappler.describe_change("Grappler", before, after, grappler.fetch_names(cf))
        changes = [whole] if whole else []
    t_grappler = time.perf_counter() - t1
    # each op's source line and loop are read from its traceback only when a finding asks for them
    locate = _locator(OpMap(cf.graph, op_location))
    loop_of = _locator(OpMap(cf.graph, lambda op: loop_of_op(op, loops)))
    found = []
    found += G.python_ops(gb, locate)
    found += G.duplicates_after_grappler(ga, locate)
    found += G.large_constants(gb, locate, int(opts["large_constant_bytes"]))
    found += G.unfused_patterns(ga, locate)
    found += G.unrolled_loops(gb, locate, int(opts["unroll_min_repeats"]), loop_of)
    found += G.debug_ops(ga, locate)
    findings, library_only = [], 0
    for f in found:
        if f.location is None:
            library_only += 1  # an op no line of the user's code created (Keras's, TensorFlow's own internals)
            continue
        findings.append(_finding(f.code, f.message, f.location, graph=f.graph, node=f.node,
                                 function=cf.name, **f.extra))
    entry = {
        "name": cf.name.decode() if isinstance(cf.name, bytes) else str(cf.name),
        "signature": str(getattr(cf, "structured_input_signature", "")),
        "before": G.graph_stats(before),
        "after": G.graph_stats(after),
        "optimizers": changes,
        "grappler_s": round(t_grappler, 3),
        "identical_traces": 0,  # later traces of the same function with the same graph statistics
    }
    if seen is not None:
        seen[key] = entry
    if want_graph:
        entry["graph_before"] = G.export_graph(gb)
        entry["graph_after"] = G.export_graph(ga)
        entry["changes"] = G.mark_changes(gb, ga)
    return entry, findings, library_only


def inspect_dataset(ds, opts: dict[str, Any], want_graph: bool) -> dict[str, Any]:
    from . import data

    stages = data.chain(ds)
    findings = []
    for st in stages:
        for p in st.py_ops:
            findings.append(_finding(
                "TFL802",
                f"`{p['op']}` node `{p['node']}` in the function of `{st.label}` runs Python inside the tf.data "
                "pipeline: it holds the GIL, so it cannot run in parallel with itself or your training step, and "
                "tf.data cannot optimize or serialize it; write it with TensorFlow ops, or do the work offline "
                f"(static counterpart: {'TFL104' if st.kind == 'from_generator' else 'TFL105'})",
                p["location"] or st.site, stage=st.label,
                hint=None if p["location"] and p["location"] != st.site else f".{st.kind}("))
    t0 = time.perf_counter()
    # a pipeline that caches: its first epoch runs every stage, later ones only the stages after the cache. Fill
    # the cache first (one whole pass, then a second from memory); the verdict is on the stages after the cache,
    # measured reading from it, and none is claimed when the cache could not be filled
    caches = [s for s in stages if s.kind == "cache"]
    cache_info, after = None, None
    if caches:
        cache_info = data.cache_passes(caches[-1], float(opts["measure_budget"]) / 2)
        after = caches[-1] if cache_info["filled"] else None
    min_added, min_ratio = float(opts["bottleneck_min_added_us"]), float(opts["bottleneck_min_ratio"])
    # two measurements, each with half the budget: a stage is the bottleneck only when both name it (a verdict
    # that changes between two runs on the same machine is noise, not a finding)
    verdicts, note = [], None
    floor = 0.0
    for _ in range(2):
        floor = data.measure(stages, float(opts["measure_min_seconds"]), int(opts["measure_max_elements"]),
                             float(opts["measure_budget"]) / 2)
        note = data.too_few(stages)
        if note:
            break
        verdicts.append(data.bottleneck(stages, min_added, min_ratio, floor, after=after))
    t_measure = time.perf_counter() - t0
    if cache_info is not None and after is not None:
        # one rate for reading the filled cache, the one the table's cache() row shows and TFL806 measures the
        # stages after it against; the whole second pass (which only showed that the cache filled) is kept apart
        cache_info["second_pass_rate"] = cache_info.get("cached_rate")
        cache_info["cached_rate"] = after.effective_rate or after.rate
    if cache_info is not None and after is not None and not note:
        first = data.bottleneck(stages[:stages.index(after)], min_added, min_ratio, floor)
        cache_info["first_epoch_bottleneck"] = None if first is None else {
            "label": first["stage"].label, "line": first["stage"].site[1] if first["stage"].site else None,
            "added_us": round(first["added_s"] * 1e6, 1)}
    if cache_info is not None and after is None and not note:
        verdicts = []
        first = f", the first pass ran at {cache_info['first_rate']:,.0f}/s" if cache_info.get("first_rate") else ""
        note = (f"no bottleneck claimed: the pipeline caches (`{caches[-1].label}`"
                + (f" at line {cache_info['line']}" if cache_info.get("line") else "") + f") and {cache_info['note']}"
                f"{first}; the epochs after the first, which read from the cache, could not be measured")
    b = None
    if not note and len(verdicts) == 2:
        first, second = verdicts
        if first and second and first["stage"] is second["stage"]:
            b = second
        elif first or second:
            names = [v["stage"].label if v else "none" for v in verdicts]
            note = f"no bottleneck claimed: two measurements disagreed ({names[0]} vs {names[1]})"
    if b:
        st = b["stage"]
        ratio = "" if b["rate_before"] is None else f", {b['rate_before'] / b['rate']:.1f}× slower than the {b['rate_before']:,.0f}/s before it"
        epochs = ""
        if after is not None:
            epochs = (f", in every epoch after the first (measured reading from the filled `{after.label}`"
                      + (f" at line {after.site[1]}" if after.site else "") + ")")
        findings.append(_finding(
            "TFL806",
            f"pipeline bottleneck: `{st.label}` is the stage where throughput drops most{epochs}: the pipeline up "
            f"to it runs at {b['rate']:,.0f} source elements/s{ratio} (+{b['added_s'] * 1e6:,.0f} µs per element, "
            f"measured on this machine); {data.recommendation(st, stages)}",
            st.site, stage=st.label, hint=f".{st.kind}(", rate=b["rate"], rate_before=b["rate_before"], added_us=b["added_s"] * 1e6))
    out = {
        "kind": "dataset",
        "stages": [
            {"kind": s.kind, "label": s.label, "file": s.site[0] if s.site else None,
             "line": s.site[1] if s.site else None, "parallel": s.parallel, "python_ops": len(s.py_ops),
             "source_elements_per_element": s.multiplier, "rate": s.rate, "effective_rate": s.effective_rate,
             "own_us": None if s.own_s is None else round(s.own_s * 1e6, 2), "elements": s.elements,
             "seconds": round(s.seconds, 4), "bottleneck": bool(b and b["stage"] is s),
             "from_cache": after is not None and i >= stages.index(after)}
            for i, s in enumerate(stages)
        ],
        "cache": cache_info,
        "graph": data.serialized_stats(ds),
        "measure_s": round(t_measure, 3),
        "bottleneck_note": note,
        "counting_cost_us": round(floor * 1e6, 2),
        "findings": _dedupe(findings),
    }
    return out


def _dedupe(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = set()
    out = []
    for f in findings:
        key = (f["code"], f["file"], f["line"]) if f["line"] else (f["code"], f["message"])
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out
