"""The graphs that actually ran (`tflint run`): Grappler before and after, as `tflint inspect` shows them, for the
tf.functions whose graphs ran most of the time (their calls less tracing), not for every function.

Runs in the child after the script has ended (its output closed), on the concrete functions the call recorder
kept: the last trace of each hot function (the graph its later calls ran). A function is hot when its graph ran
(its calls less their tracing) at least `MIN_SHARE` of the time all tf.functions' graphs ran and `MIN_SECONDS` in
all; the hottest first, at most
`MAX_FUNCTIONS`, until `COVER` of that time is covered. Each graph is run once through the default meta-optimizer
(`analyze.analyze_concrete`, the code `inspect` uses; the per-optimizer breakdown, twelve more Grappler runs, is
left to `tflint inspect`), and the graph findings (TFL802-TFL808) on the user's lines are reported as `inspect`
reports them.
"""
from __future__ import annotations

import time
from typing import Any

from .analyze import DEFAULTS as GRAPH_DEFAULTS
from .analyze import analyze_concrete

MIN_SHARE = 0.10
MIN_SECONDS = 0.25  # a graph that ran for less in the whole run is not worth a Grappler run (0.2-1 s) after it
COVER = 0.80
MAX_FUNCTIONS = 3


def running_seconds(fn: dict[str, Any]) -> float:
    """The time a function's graph ran: its calls less the time spent tracing them (which no graph rewrite
    changes: a Keras `fit` of 16 steps spends 98% of its train function's time in its first call's tracing)."""
    return max(0.0, fn["seconds_in_calls"] - fn.get("tracing_s", 0.0))


def hot_functions(functions: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(index into `functions`, share of the time their graphs ran) of the functions whose graphs are analysed."""
    ran = [running_seconds(f) for f in functions]
    total = sum(ran)
    if total <= 0:
        return []
    out: list[tuple[int, float]] = []
    covered = 0.0
    for i in sorted(range(len(functions)), key=lambda i: -ran[i]):
        share = ran[i] / total
        if len(out) >= MAX_FUNCTIONS or covered >= COVER or share < MIN_SHARE or ran[i] < MIN_SECONDS:
            break
        out.append((i, share))
        covered += share
    return out


def hot_graphs(functions: list[dict[str, Any]], results: list[Any], findings: list[dict[str, Any]],
               options: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per hot function with a graph (`results[i].concrete`, aligned with `functions`); its graph
    findings are appended to `findings`."""
    opts = {**GRAPH_DEFAULTS, **options}
    out = []
    for i, share in hot_functions(functions):
        fn = functions[i]
        concretes = getattr(results[i], "concrete", None) or []
        head = {"function": fn["name"], "file": fn.get("file"), "line": fn.get("line"),
                "share": round(share, 3), "seconds_in_calls": fn["seconds_in_calls"], "traces": len(concretes)}
        if not concretes:
            continue
        t0 = time.perf_counter()
        try:
            analysis = analyze_concrete(concretes[-1], opts, attribution=False)
        except Exception as exc:  # noqa: BLE001 - a graph Grappler cannot take: said, the rest of the report stands
            out.append({**head, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        if analysis is None:  # pragma: no cover - no `seen` given
            continue
        entry, found, library_only = analysis
        kept = [f for f in found if _actionable(f)]
        library_only += len(found) - len(kept)
        for f in kept:
            f.setdefault("extra", {})["function"] = fn["name"]
        findings += kept
        out.append({**head, **entry, "library_findings": library_only,
                    "analysis_s": round(time.perf_counter() - t0, 3)})
    return out


# a debug op (TFL808) is the user's to remove when their line asks for one; an `Assert` that a library function
# makes inside (`tf.nn.compute_average_loss` checks its batch size) is located at the user's line that called it,
# which has nothing to remove
_DEBUG_WORDS = ("print", "assert", "Assert", "check_numerics", "debugging")


def _actionable(finding: dict[str, Any]) -> bool:
    if finding.get("code") != "TFL808" or not finding.get("file"):
        return True
    try:
        with open(finding["file"], encoding="utf-8") as f:
            text = f.read().splitlines()[int(finding["line"]) - 1]
    except (OSError, IndexError, UnicodeDecodeError, ValueError):
        return True
    code = text.split("#", 1)[0]  # the code, not a comment beside it
    return any(w in code for w in _DEBUG_WORDS)


def _top_ops(ops: dict[str, int], n: int = 4) -> str:
    items = list(ops.items())[:n]
    more = len(ops) - len(items)
    return ", ".join(f"{op}×{c}" for op, c in items) + (f", +{more} more" if more > 0 else "")


def text_lines(graphs: list[dict[str, Any]], display) -> list[str]:
    """The report's section: per hot function, its graph's nodes before and after Grappler and what the default
    optimizers did to it. `display(path)`: how a path is shown."""
    if not graphs:
        return []
    lines = ["graphs that ran most (Grappler before -> after, as `tflint inspect` shows them):"]
    for g in graphs:
        where = f"  {display(g['file'])}:{g['line']}" if g.get("file") else ""
        traced = f", its last of {g['traces']} traces" if g.get("traces", 0) > 1 else ""
        if g.get("error"):
            lines.append(f"  `{g['function']}` ({g['share']:.0%} of the time graphs ran{traced}): Grappler failed: "
                         f"{g['error']}{where}")
            continue
        b, a = g["before"], g["after"]
        lines.append(f"  `{g['function']}` ({g['share']:.0%} of the time graphs ran{traced}): {b['nodes']} nodes -> "
                     f"{a['nodes']} after Grappler ({_top_ops(a['ops'])}){where}")
        changes = g.get("optimizers") or []
        for o in changes:
            lines.append(f"    {o['summary']}")
        if not changes:
            lines.append("    Grappler did not change the graph")
    return lines
