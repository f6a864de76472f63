"""`tflint inspect FILE::FACTORY`: the parent side. Never imports TensorFlow or the user's code.

It runs `tflint.runtime.analyze:inspect_target` in a child process with a time limit, turns the raw findings into
`Finding`s (filtered through the suppression comments of the files they point at), prints the report (text or
`--json`) and writes `--graph OUT` (.dot, .graphml, or .svg through Graphviz's `dot`).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from ..findings import Finding, Position
from .child import ChildResult, run_in_child

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
GRAPH_SUFFIXES = (".dot", ".gv", ".svg", ".graphml")


def run_inspect(args) -> int:
    target: str = args.target
    if "::" not in target:
        return _error(f"expected FILE::FACTORY, got {target!r} (e.g. train.py::make_dataset)")
    file = target.rpartition("::")[0]
    if not Path(file).is_file():
        return _error(f"{file}: no such file")
    from .child import missing_runtime

    why = missing_runtime()
    if why:
        return _error(why)
    graph_out: Optional[Path] = getattr(args, "graph", None)
    if graph_out is not None and graph_out.suffix.lower() not in GRAPH_SUFFIXES:
        return _error(f"--graph {graph_out}: the file name must end in .dot, .svg or .graphml")
    from ..project import Project, ProjectError

    try:
        project = Project.load(getattr(args, "config", None), start=Path(file).resolve().parent)
    except ProjectError as exc:
        return _error(str(exc))
    result = run_in_child(
        "tflint.runtime.analyze:inspect_target",
        {"target": target, "graph": graph_out is not None, "options": child_options(project)},
        timeout=float(getattr(args, "timeout", 300.0) or 300.0),
        cwd=os.getcwd(),
    )
    if not result.ok:
        return _child_failure(target, result)
    report: dict[str, Any] = result.value
    report["wall_s"] = round(result.wall, 3)
    findings, suppressed = to_findings(report.get("findings", []), default_file=file, registry=project.registry)
    findings = [f for f in findings if f.code in project.runtime_codes(f.filename)]
    if graph_out is not None:
        try:
            note = write_graph(report, graph_out)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            return _error(f"--graph {graph_out}: {exc}")
        report["graph_file"] = note
    if getattr(args, "json", False):
        print(json.dumps(json_report(report, findings, suppressed), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(text_report(target, report, findings, suppressed))
    return EXIT_FINDINGS if findings else EXIT_CLEAN


# rule option (in rules/runtime/*.yaml and [tool.tflint.rules.<name>]) -> the child's option key
_OPTION_KEYS = {
    ("large-graph-constant", "max-bytes"): "large_constant_bytes",
    ("unrolled-loop-in-graph", "min-repeats"): "unroll_min_repeats",
    ("pipeline-bottleneck", "min-added-us"): "bottleneck_min_added_us",
    ("pipeline-bottleneck", "min-ratio"): "bottleneck_min_ratio",
}


def child_options(project, keys: Optional[dict[tuple[str, str], str]] = None) -> dict[str, Any]:
    """The configured value (or the rule's default) of each runtime rule option the child reads."""
    out: dict[str, Any] = {}
    for (rule, key), child_key in (keys or _OPTION_KEYS).items():
        meta = project.registry.get(rule)
        value = project.config.rule_options_for(rule).get(key, meta.options.get(key) if meta else None)
        if value is not None:
            out[child_key] = value
    return out


def _error(msg: str) -> int:
    print(f"tflint: error: {msg}", file=sys.stderr)
    return EXIT_ERROR


def _child_failure(target: str, result: ChildResult) -> int:
    head = {"error": "", "timeout": "", "crash": ""}.get(result.status, "")
    print(f"tflint: error: inspect {target}: {head}{result.message}", file=sys.stderr)
    if result.details:
        print(_indent(result.details.rstrip()), file=sys.stderr)
    if result.status == "crash" and result.stderr.strip():
        print("  child's last output:", file=sys.stderr)
        print(_indent(result.stderr.strip()[-2000:]), file=sys.stderr)
    return EXIT_ERROR


def _indent(text: str) -> str:
    return "\n".join("  " + ln for ln in text.splitlines())


# ---------------------------------------------------------------------------------------------------------------
# Findings
# ---------------------------------------------------------------------------------------------------------------


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def to_findings(raw: list[dict[str, Any]], default_file: str, registry) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed) Findings; suppression comments of each file pointed at apply, through the same
    `Suppressions` the static findings use."""
    from ..suppress import Suppressions

    texts: dict[str, list[str]] = {}
    supps: dict[str, Suppressions] = {}
    kept, suppressed = [], []
    for r in raw:
        path = r.get("file") or str(Path(default_file).resolve())
        row = int(r.get("line") or 1)
        if path not in texts:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            texts[path] = text.splitlines()
            supps[path] = Suppressions.for_text(text, registry.resolve)
        lines = texts[path]
        line = lines[row - 1] if 0 < row <= len(lines) else ""
        meta = registry.get(r["code"])
        name = meta.name if meta else r["code"]
        col = len(line) - len(line.lstrip()) + 1 if line.strip() else 1
        end_col = len(line.rstrip()) + 1
        hint = (r.get("extra") or {}).get("hint")
        if hint and hint in line:  # e.g. ".map(": point at the method, as the static rules do
            col = line.index(hint) + 1 + (1 if hint.startswith(".") else 0)
            end_col = col + len(hint.strip(".(")) if hint.endswith("(") else end_col
        f = Finding(
            code=r["code"], name=name, message=r["message"], filename=_display_path(path),
            location=Position(row, col), end_location=Position(row, max(col, end_col)),
            source_line=line.rstrip() or None,
        )
        if supps[path].suppressing(f.code, f.name, row):
            suppressed.append(f)
        else:
            kept.append(f)
    kept.sort(key=lambda f: f.sort_key)
    return kept, suppressed


# ---------------------------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------------------------


def _strip_graphs(report: dict[str, Any]) -> dict[str, Any]:
    out = dict(report)
    out.pop("findings", None)
    if "concrete_functions" in out:
        out["concrete_functions"] = [
            {k: v for k, v in cf.items() if k not in ("graph_before", "graph_after", "changes")}
            for cf in out["concrete_functions"]
        ]
    return out


def json_report(report: dict[str, Any], findings: list[Finding], suppressed: list[Finding]) -> dict[str, Any]:
    return {
        "findings": [f.to_json() for f in findings],
        "suppressed": len(suppressed),
        "report": _strip_graphs(report),
    }


def _top_ops(ops: dict[str, int], n: int = 6) -> str:
    items = list(ops.items())[:n]
    more = len(ops) - len(items)
    return ", ".join(f"{op}×{c}" for op, c in items) + (f", +{more} more" if more > 0 else "")


def retrace_lines(retraces: list[dict[str, Any]], home: Optional[tuple[str, int]] = None) -> list[str]:
    """One line per distinct retrace cause: calls whose changes are of the same arguments and kinds are grouped
    ("calls 2-5 traced again: `step` 0 -> 1 -> 2 -> 3 -> 4 (python-value) (called from line 12)"), not printed
    once per call. `home`: the function's definition, whose file's lines are shown without the file name."""
    from .trace import call_sites

    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in retraces:
        key = tuple((c["argument"], c["kind"]) for c in r["changes"])
        groups.setdefault(key, []).append(r)
    out = []
    for key, rs in groups.items():
        calls = [r["call"] for r in rs]
        which = f"call {calls[0]}" if len(calls) == 1 else "calls " + _ranges(calls)
        if not key:
            out.append(f"  {which} traced again: no argument changed (closure or global?)")
            continue
        parts = []
        for arg, kind in key:
            values = [next(c for c in rs[0]["changes"] if c["argument"] == arg)["before"]]
            values += [next(c for c in r["changes"] if c["argument"] == arg)["after"] for r in rs]
            shown = " -> ".join(values[:6]) + (" -> …" if len(values) > 6 else "")
            parts.append(f"`{arg}` {shown} ({kind})")
        out.append(f"  {which} traced again: " + "; ".join(parts) + call_sites([r.get("site") for r in rs], home))
    return out


def _ranges(numbers: list[int]) -> str:
    parts, start, prev = [], numbers[0], numbers[0]
    for n in numbers[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def text_report(target: str, report: dict[str, Any], findings: list[Finding], suppressed: list[Finding]) -> str:
    from ..render.text import full, use_color

    color = use_color(sys.stdout)
    lines = [f"tflint inspect {target}  (TensorFlow {report.get('tensorflow', '?')}, factory returned "
             f"{report.get('form', '?')})", ""]
    if report.get("kind") == "function":
        fn = report["function"]
        if fn.get("driver"):
            lines.append(f"`{fn['name']}` ran as Python ({fn['calls']} call(s)); the tf.functions it called:")
            shown = report.get("functions", [])
        else:
            shown = [fn]
        for one in shown:
            wrapped = " (a plain callable: traced with tf.function)" if one.get("wrapped") else ""
            lines.append(f"function `{one['name']}`{wrapped}: {one['calls']} call(s), {one['traces']} trace(s)")
            lines += retrace_lines(one.get("retraces", []), one.get("defined_at"))
        for cf in report.get("concrete_functions", []):
            b, a = cf["before"], cf["after"]
            lines.append("")
            same = cf.get("identical_traces") or 0
            lines.append(f"concrete function {cf['name']}" +
                         (f"  (and {same} more trace(s) with the same graph)" if same else ""))
            lines.append(f"  traced graph:    {b['nodes']:>5} nodes ({b['main_nodes']} in the main graph, "
                         f"{b['functions']} library functions)  {_top_ops(b['ops'])}")
            lines.append(f"  after Grappler:  {a['nodes']:>5} nodes ({a['main_nodes']} in the main graph, "
                         f"{a['functions']} library functions)  {_top_ops(a['ops'])}")
            if cf.get("optimizers"):
                lines.append("  each default optimizer run alone on the traced graph:")
                for o in cf["optimizers"]:
                    lines.append(f"    {o['summary']}")
            else:
                lines.append("  no default optimizer changed the graph")
        if report.get("library_findings"):
            lines.append("")
            lines.append(f"({report['library_findings']} graph finding(s) in ops that only library code created "
                         "(Keras's or TensorFlow's internals) are not reported: no line of yours to change)")
    elif report.get("kind") == "dataset":
        lines.append("tf.data pipeline measured on this machine: the throughput of each prefix (the pipeline up to "
                     "that stage, in source elements per second) and the time the stage itself adds per source "
                     "element:")
        width = max((len(s["label"]) for s in report["stages"]), default=10)
        held_back = False
        for s in report["stages"]:
            shown = s.get("effective_rate") or s.get("rate")
            star = "*" if shown and s.get("rate") and shown > 1.1 * s["rate"] else " "
            held_back = held_back or star == "*"
            rate = f"{shown:>12,.0f}/s{star}" if shown else f"{'-':>15}"
            own = f"{'+' + format(s['own_us'], ',.1f') + ' µs':>13}" if s.get("own_us") is not None else f"{'-':>13}"
            where = f"line {s['line']}" if s.get("line") else ""
            mark = "  <- bottleneck" if s.get("bottleneck") else ""
            py = "  [Python]" if s.get("python_ops") else ""
            cached = "  [from the cache]" if s.get("from_cache") else ""
            lines.append(f"  {s['label']:<{width}}  {rate}  {own}  {where}{py}{cached}{mark}")
        if held_back:
            lines.append("  * measured slower on its own: a prefix does the work of every shorter one, so it is credited "
                         "with the rate of a longer prefix (one element at a time from Python waits on thread "
                         "hand-offs); the raw rates are in --json")
        c = report.get("cache")
        if c and c.get("filled"):
            where = f" (line {c['line']})" if c.get("line") else ""
            later = (f"later epochs read it from memory at {c['cached_rate']:,.0f}/s (its row above)"
                     if c.get("cached_rate") else "later epochs read it from memory")
            lines.append(f"  cache(){where}: the first epoch runs the stages before it and fills the cache, "
                         f"{c['first_rate']:,.0f}/s over {c['elements']:,} elements; {later}, and the rates after it "
                         "are of those epochs")
            fb = c.get("first_epoch_bottleneck")
            if fb:
                at = f" (line {fb['line']})" if fb.get("line") else ""
                lines.append(f"  first epoch only: `{fb['label']}`{at} adds the most, +{fb['added_us']:,.0f} µs "
                             "per element; later epochs do not run it")
        if report.get("bottleneck_note"):
            lines.append(f"  ({report['bottleneck_note']})")
        g = report.get("graph", {})
        if "nodes" in g:
            lines.append(f"  dataset graph: {g['nodes']} nodes, {g['functions']} functions: "
                         f"{' -> '.join(g.get('dataset_ops', []))}")
        elif g.get("error"):
            lines.append(f"  dataset graph: not serializable ({g['error']})")
    lines.append("")
    if findings:
        lines.append(full(findings, color=color).rstrip("\n"))
        lines.append("")
    n = len(findings)
    summary = f"Found {n} runtime finding{'s' if n != 1 else ''}" if n else "No runtime findings"
    if suppressed:
        summary += f" ({len(suppressed)} suppressed)"
    t = report.get("timings", {})
    summary += (f". Wall time {report.get('wall_s', 0):.1f} s (TensorFlow import {t.get('import_tensorflow_s', 0):.1f}"
                f" s, analysis {t.get('analysis_s', 0):.1f} s).")
    lines.append(summary)
    if report.get("graph_file"):
        lines.append(report["graph_file"])
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# --graph
# ---------------------------------------------------------------------------------------------------------------

_STYLE = {
    "removed": {"color": "#c0392b", "style": "dashed", "fontcolor": "#c0392b"},
    "added": {"color": "#27ae60", "style": "filled", "fillcolor": "#d5f5e3"},
    "fused": {"color": "#d35400", "style": "filled,bold", "fillcolor": "#fdebd0"},
    "changed": {"color": "#2471a3", "style": "filled", "fillcolor": "#d6eaf8"},
    "python": {"color": "#8e44ad", "style": "filled", "fillcolor": "#ebdef0"},
    "bottleneck": {"color": "#c0392b", "style": "filled,bold", "fillcolor": "#fadbd8"},
}


def build_nx(report: dict[str, Any]):
    """A networkx graph of what was inspected. For a function: the union of the traced graph and the graph after
    Grappler of its first concrete function, each node's `status` one of kept/removed/added/fused/changed."""
    import networkx as nx

    g = nx.DiGraph(name=report.get("kind", "graph"))
    if report.get("kind") == "dataset":
        prev = None
        for i, s in enumerate(report.get("stages", [])):
            nid = f"{i}:{s['label']}"
            status = "bottleneck" if s.get("bottleneck") else ("python" if s.get("python_ops") else "kept")
            rate = f"\n{s['rate']:,.0f} elem/s" if s.get("rate") else ""
            g.add_node(nid, label=f"{s['label']}{rate}", op=s["kind"], status=status, line=s.get("line") or 0)
            if prev is not None:
                g.add_edge(prev, nid, control=False)
            prev = nid
        return g
    cfs = report.get("concrete_functions") or []
    if not cfs:
        return g
    cf = cfs[0]
    changes = cf.get("changes", {})
    for part in ("graph_before", "graph_after"):
        for n in cf.get(part, {}).get("nodes", []):
            label = n["op"] + (f"\n+{'+'.join(n['fused_ops'])}" if n.get("fused_ops") else "")
            if n["id"] in g:
                if part == "graph_after":
                    node = g.nodes[n["id"]]
                    node["op_after"] = n["op"]
                    if n["op"] != node["op"]:
                        node["label"] = f"{n['id']}\n{node['op']} -> {label}".replace(f"{n['id']}\n{n['id']} ->", f"{n['id']} ->")
                continue
            status = changes.get(n["id"], "kept")
            if n["op"] in ("EagerPyFunc", "PyFunc", "PyFuncStateless"):
                status = "python"
            title = n["id"] if n["id"] == n["op"] else f"{n['id']}\n{label}"
            g.add_node(n["id"], label=title, op=n["op"], status=status, graph=n.get("graph", ""))
        for e in cf.get(part, {}).get("edges", []):
            if not g.has_edge(e["source"], e["target"]):
                g.add_edge(e["source"], e["target"], control=bool(e["control"]))
    return g


def to_dot(g) -> str:
    def q(s: Any) -> str:
        return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    out = ["digraph tflint {", '  rankdir=TB; node [shape=box, fontname="Helvetica", fontsize=10];',
           '  edge [color="#555555"];']
    legend = sorted({d.get("status", "kept") for _, d in g.nodes(data=True)} - {"kept"})
    for nid, d in g.nodes(data=True):
        attrs = {"label": d.get("label", nid)}
        attrs.update(_STYLE.get(d.get("status", "kept"), {}))
        out.append(f"  {q(nid)} [" + ", ".join(f"{k}={q(v)}" for k, v in attrs.items()) + "];")
    for s, t, d in g.edges(data=True):
        style = ' [style="dotted"]' if d.get("control") else ""
        out.append(f"  {q(s)} -> {q(t)}{style};")
    if legend:
        out.append('  subgraph cluster_legend { label="legend"; fontsize=10;')
        for s in legend:
            attrs = {"label": s, **_STYLE.get(s, {})}
            out.append(f"    {q('legend:' + s)} [" + ", ".join(f"{k}={q(v)}" for k, v in attrs.items()) + "];")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def write_graph(report: dict[str, Any], out: Path) -> str:
    import networkx as nx

    g = build_nx(report)
    suffix = out.suffix.lower()
    if suffix == ".graphml":
        for _, d in g.nodes(data=True):
            for k, v in list(d.items()):
                if v is None:
                    d[k] = ""
        nx.write_graphml(g, out)
        return f"Wrote {g.number_of_nodes()} nodes to {out} (GraphML; node attribute `status`)."
    dot_text = to_dot(g)
    if suffix in (".dot", ".gv"):
        out.write_text(dot_text, encoding="utf-8")
        return f"Wrote {g.number_of_nodes()} nodes to {out} (DOT; render with `dot -Tsvg {out}`)."
    dot = shutil.which("dot")
    if dot is None:
        fallback = out.with_suffix(".dot")
        fallback.write_text(dot_text, encoding="utf-8")
        return (f"Graphviz's `dot` is not installed, so no SVG was drawn: wrote {fallback} instead "
                "(install graphviz, or open the DOT file with any Graphviz viewer).")
    proc = subprocess.run([dot, "-Tsvg", "-o", str(out)], input=dot_text.encode(), capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise ValueError(f"dot failed: {proc.stderr.decode(errors='replace').strip()[:300]}")
    return f"Wrote {g.number_of_nodes()} nodes to {out} (SVG drawn by Graphviz)."
