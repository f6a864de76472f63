"""`tflint run [options] SCRIPT [ARGS...]`: the parent side. Never imports TensorFlow or the user's code.

The script runs in a child process (`tflint.runtime.observe:observe_script`) with its own stdin, stdout and
stderr, so its output appears as it would without tflint; the report follows it, on stderr (text, after a
separator line) or on stdout (`--json`, `--output-format json|sarif|github`; the script's stdout then goes to
stderr so that stdout is only the report). Runtime findings are located at the user's lines, filtered through the
suppression comments, and cross-referenced with the static analysis of the same files ("confirms TFL202 at
train.py:57").

Exit codes as `check`: 0 nothing found, 1 findings, 2 the script did not complete normally (it raised, exited with
a non-zero status, or ran past `--timeout`) or tflint failed; the report says which. A stop at `--steps` /
`--seconds` / Ctrl-C is a normal end: what was seen until then is reported.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

from ..findings import Finding
from .child import run_in_child
from .hotgraphs import text_lines as hotgraphs_lines
from .inspect import retrace_lines, to_findings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
DEFAULT_TIMEOUT = 3600.0

# runtime code -> the static rules it confirms when one fires on a statement the finding's `sites` name (a
# retrace's call, a pipeline stage)
_STATIC_COUNTERPART = {
    "TFL801": ("TFL202", "TFL203"),
    "TFL810": ("TFL305",),
    "TFL809": ("TFL101", "TFL102", "TFL104", "TFL105", "TFL107", "TFL108", "TFL109"),
}


def run_script(args) -> int:
    script: str = args.script
    if not Path(script).is_file():
        return _error(f"{script}: no such file")
    fmt = _format(args)
    if args.steps is not None and args.steps < 1:
        return _error("--steps must be at least 1")
    if args.seconds is not None and args.seconds <= 0:
        return _error("--seconds must be positive")
    notebook = None
    if script.endswith(".ipynb"):  # its code cells, in order, as one script (notebookrun.py)
        from .notebookrun import NotebookRunError, prepare

        try:
            notebook = prepare(script)
        except NotebookRunError as exc:
            return _error(str(exc))
    try:
        return _run(args, script, fmt, notebook)
    finally:
        if notebook is not None:
            shutil.rmtree(notebook.folder, ignore_errors=True)


def _run(args, script: str, fmt: str, notebook) -> int:
    from ..config import ConfigError, find_pyproject
    from ..project import Project, ProjectError

    config_file = getattr(args, "config", None)
    start = Path(script).resolve().parent
    try:  # is there a configuration to validate (reading the TOML is cheap; building the registry is not)?
        gate = config_file is not None or find_pyproject(start) is not None
    except ConfigError:
        gate = True  # a pyproject.toml that does not parse: Project.load says so before the script runs
    timeout = float(args.timeout or DEFAULT_TIMEOUT)
    # The project (the configuration, and the registry that validates its codes and gives the rules' options)
    # takes a few tenths of a second to build: it is built while the child starts and runs the script. With a
    # configuration file the child waits for it before running the script (a bad code or key stops the run before
    # the script does anything); without one there is nothing to validate, and the script starts at once. The options reach the child
    # through a control file in a temporary folder (never the user's project), read after the script has run.
    control_dir = tempfile.mkdtemp(prefix="tflint-run-")
    control = os.path.join(control_dir, "control.json")
    # a progress line while the script runs: a human report on a terminal only (drawn by the child, which has the
    # counts; observe.RunProgress)
    progress = fmt in ("full", "concise") and _isatty(sys.stderr)
    payload = {"script": script, "args": list(args.args), "steps": args.steps, "seconds": args.seconds,
               "pythonpath": os.environ.get("PYTHONPATH"), "control": control, "gate": gate, "progress": progress}
    if notebook is not None:  # the runnable text in a temporary folder; sys.argv[0] and sys.path[0] the notebook's
        payload.update(script=notebook.script, argv0=script, path0=str(Path(script).resolve().parent))
    loaded: dict[str, Any] = {}

    def load_project() -> None:
        try:
            project = Project.load(config_file, start=start)
        except ProjectError as exc:
            write_control(control, {"go": False})
            loaded["error"] = str(exc)
            if not gate:  # the script is already running: stop it (run_in_child kills its process group)
                raise
            return
        loaded["project"] = project
        write_control(control, {"go": True, "options": child_options(project)})

    machine = fmt not in ("full", "concise")
    try:
        result = run_in_child("tflint.runtime.observe:observe_script", payload, timeout=timeout, cwd=os.getcwd(),
                              passthrough=True, stdout_to_stderr=machine, on_start=load_project)
    except ProjectError:
        return _error(loaded["error"])
    finally:
        shutil.rmtree(control_dir, ignore_errors=True)
    if "error" in loaded:
        return _error(loaded["error"])
    project = loaded["project"]
    if not result.ok:
        head = "ran past --timeout" if result.status == "timeout" else "failed"
        print(f"\ntflint run {script}: {head}: {result.message}", file=sys.stderr)
        if result.status == "timeout":
            print("  (use --seconds S to stop the script after S seconds and get a report of what was seen)",
                  file=sys.stderr)
        if result.details and result.status != "timeout":
            print("\n".join("  " + ln for ln in result.details.rstrip().splitlines()), file=sys.stderr)
        return EXIT_ERROR
    report: dict[str, Any] = result.value
    report["wall_s"] = round(result.wall, 3)
    raw = report.get("findings", [])
    confirm_static(raw, project)
    findings, suppressed = to_findings(raw, default_file=notebook.script if notebook else script,
                                       registry=project.registry)
    if notebook is not None:  # at the notebook's cell:row, as `check` reports a notebook
        findings = [notebook.map_finding(f) for f in findings]
        suppressed = [notebook.map_finding(f) for f in suppressed]
        text_view = report  # the text report is written from the runnable file's lines, then renamed
        report = notebook.map_report(report)
        report["notebook"] = {"path": script, "code_cells": len(notebook.nb.code_cells), "skipped": notebook.skipped}
    findings = [f for f in findings if f.code in project.runtime_codes(f.filename)]
    # the script did not complete normally, or tflint could not observe it (a TensorFlow whose internals moved)
    failed = report.get("outcome", {}).get("status") in ("crashed", "exited") or bool(report.get("observer_errors"))
    if args.json:
        print(json.dumps(json_report(report, findings, suppressed), indent=2, ensure_ascii=False))
    elif machine:
        from ..render import renderer

        sys.stdout.write(renderer(fmt)(findings, color=False, registry=project.registry))
    elif notebook is not None:
        text = text_report(script, text_view, findings, suppressed, concise=fmt == "concise",
                           registry=project.registry)
        if notebook.note():
            lines = text.split("\n")
            lines.insert(3, notebook.note())  # after the separator and the blank line under it
            text = "\n".join(lines)
        sys.stderr.write(notebook.rename(text))
    else:
        sys.stderr.write(text_report(script, report, findings, suppressed, concise=fmt == "concise",
                                     registry=project.registry))
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings else EXIT_CLEAN


# rule option (rules/runtime/*.yaml, [tool.tflint.rules.<name>]) -> the child's option key
_OPTION_KEYS = {
    ("input-bound", "min-wait-share"): "input_min_wait_share",
    ("input-bound", "min-wait-ms"): "input_min_wait_ms",
    ("host-sync-in-loop", "min-per-step"): "sync_min_per_step",
    ("host-sync-in-loop", "min-count"): "sync_min_count",
    ("large-graph-constant", "max-bytes"): "large_constant_bytes",
    ("unrolled-loop-in-graph", "min-repeats"): "unroll_min_repeats",
}


def write_control(path: str, message: dict[str, Any]) -> None:
    """The parent's message to the child (observe.read_control), written whole: the child never sees half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(message, f)
    os.replace(tmp, path)


def child_options(project) -> dict[str, Any]:
    from .inspect import child_options as options_of

    return options_of(project, _OPTION_KEYS)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _format(args) -> str:
    if args.json:
        return "json"
    return args.output_format or "full"


def _error(msg: str) -> int:
    print(f"tflint: error: {msg}", file=sys.stderr)
    return EXIT_ERROR


# ---------------------------------------------------------------------------------------------------------------
# Cross-reference with the static analysis
# ---------------------------------------------------------------------------------------------------------------


def _statement_span(tree: Optional[ast.AST], line: int) -> tuple[int, int]:
    """The lines of the innermost simple statement that contains `line` (a call may span several lines)."""
    best = (line, line)
    if tree is None:
        return best
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            start, end = node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno
            if start <= line <= end and (best == (line, line) or end - start < best[1] - best[0]):
                best = (start, end)
    return best


def _loop_span(tree: Optional[ast.AST], line: int) -> tuple[int, int]:
    """The lines of the innermost `for`/`while` that contains `line` (else the line itself)."""
    best = (line, line)
    if tree is None:
        return best
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            start, end = node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno
            if start <= line <= end and (best == (line, line) or end - start < best[1] - best[0]):
                best = (start, end)
    return best


def confirm_static(raw: list[dict[str, Any]], project) -> None:
    """Append "confirms TFL202 at train.py:57" to a runtime finding whose call site (a retrace's call) is where the
    static counterpart fires. The static check runs here, in the parent, on the files the call sites are in."""
    wanted = {f["code"] for f in raw} & set(_STATIC_COUNTERPART)
    if not wanted:
        return
    from ..api import check_source

    settings = project.settings(select=sorted({c for w in wanted for c in _STATIC_COUNTERPART[w]}))
    static: dict[str, tuple[list[Finding], Optional[ast.AST]]] = {}
    for f in raw:
        counterparts = _STATIC_COUNTERPART.get(f["code"], ())
        extra = f.get("extra") or {}
        sites = [(fl, ln, False) for fl, ln in extra.get("sites") or []]
        sites += [(fl, ln, True) for fl, ln in extra.get("loop_sites") or []]  # anywhere in the enclosing loop
        if not counterparts or not sites:
            continue
        hits: set[tuple[str, str, int]] = set()
        for file, line, in_loop in sites:
            if file not in static:
                try:
                    text = Path(file).read_text(encoding="utf-8")
                    tree = ast.parse(text)
                    static[file] = (check_source(text, file, settings), tree)
                except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                    static[file] = ([], None)
            found, tree = static[file]
            start, end = (_loop_span if in_loop else _statement_span)(tree, int(line))
            hits |= {(s.code, file, s.location.row) for s in found
                     if s.code in counterparts and start <= s.location.row <= end}
        if hits:
            ordered = sorted(hits, key=lambda h: (h[1], h[2], h[0]))
            shown = ", ".join(f"{code} at {_display(fl)}:{row}" for code, fl, row in ordered[:4])
            f["message"] += f" (confirms {shown})"
            f.setdefault("extra", {})["confirms"] = [{"code": c, "file": fl, "line": row} for c, fl, row in ordered]


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


# ---------------------------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------------------------


def json_report(report: dict[str, Any], findings: list[Finding], suppressed: list[Finding]) -> dict[str, Any]:
    rest = {k: v for k, v in report.items() if k != "findings"}
    return {"findings": [f.to_json() for f in findings], "suppressed": len(suppressed), "report": rest}


def _outcome_line(outcome: dict[str, Any], timings: dict[str, Any]) -> str:
    status = outcome.get("status")
    took = f" after {timings.get('script_s', 0):.1f} s"
    if status == "finished":
        return f"The script finished (exit status 0){took}."
    if status == "stopped":
        return f"The script was stopped by tflint{took} ({outcome.get('reason')}); the report covers the run so far."
    if status == "interrupted":
        return f"The script was interrupted (Ctrl-C){took}; the report covers the run so far."
    if status == "exited":
        return f"The script exited with status {outcome.get('exit_code')}{took}."
    if status == "crashed":
        where = ""
        if outcome.get("file"):
            where = f" at {_display(outcome['file'])}:{outcome.get('line')}"
        text = (f"The script crashed{took}: {outcome.get('exception')}: {outcome.get('message')}{where} "
                "(its traceback is above).")
        if outcome.get("exception") == "NameError" and "get_ipython" in str(outcome.get("message")):
            text += ("\n`get_ipython()` is how `jupyter nbconvert --to script` exports an IPython magic (`%matplotlib`, "
                     "`!pip`): `python` stops there too. Remove those lines from the exported script (or guard them "
                     "with `if 'get_ipython' in globals():`) and run it again.")
        return text
    return f"The script ended: {status}."


def text_report(script: str, report: dict[str, Any], findings: list[Finding], suppressed: list[Finding],
                concise: bool = False, registry=None) -> str:
    from ..render.text import concise as render_concise
    from ..render.text import full, use_color

    color = use_color(sys.stderr)
    tf_version = report.get("tensorflow")
    lines = ["", f"──── tflint run {script} " + "─" * max(3, 60 - len(script)), ""]
    lines.append(_outcome_line(report.get("outcome", {}), report.get("timings", {})))
    for problem in report.get("observer_errors") or []:
        lines.append(f"tflint: warning: {problem}")
    if not tf_version and report.get("tensorflow_import_unfinished"):
        lines.append("The script ended while it was importing TensorFlow: nothing observed yet (a longer --seconds?).")
    elif not tf_version:
        lines.append("The script did not import TensorFlow: nothing to observe.")
    else:
        fns = report.get("functions", [])
        if not fns:
            lines.append(f"TensorFlow {tf_version}: no tf.function was called.")
        else:
            lines.append(f"TensorFlow {tf_version}: {len(fns)} tf.function(s) called from Python:")
        groups: dict[tuple, list[dict[str, Any]]] = {}  # a function wrapped in several tf.function objects
        for fn in fns:
            groups.setdefault((fn["name"], fn.get("file"), fn.get("line")), []).append(fn)
        for (name, file, line), group in groups.items():
            fn = group[0]
            where = f"  {_display(file)}:{line}" if file else ""
            objects = f" ({len(group)} tf.function objects)" if len(group) > 1 else ""
            tracing_s = sum(g.get("tracing_s", 0) for g in group)
            tracing = f", ~{tracing_s:.2f} s tracing" if tracing_s >= 0.005 else ""
            lines.append(f"  `{name}`{objects}: {sum(g['calls'] for g in group)} call(s), "
                         f"{sum(g['traces'] for g in group)} trace(s){tracing}, "
                         f"{sum(g['seconds_in_calls'] for g in group):.2f} s in calls{where}")
            for ln in retrace_lines(fn.get("retraces", []))[:5]:
                lines.append("  " + ln)
        lines += hotgraphs_lines(report.get("graphs") or [], _display)
        # an iterator never pulled from Python (`it = iter(ds)` handed to a tf.function): nothing timed to show
        its = [it for it in report.get("iterators", []) if it.get("elements") or it.get("first_wait_s")]
        if its:
            lines.append("tf.data loops (time waiting in `next()` against time between elements):")
        for it in its:
            where = f"{_display(it['loop_file'])}:{it['loop_line']}"
            made = f", dataset from line {it['line']}" if it.get("line") else ""
            verdict = "  <- input-bound" if it.get("input_bound") else ""
            own = (f", distributed iterator {it['iterator_ms_per_element']:.2f} ms"
                   if it.get("iterator_ms_per_element") is not None else "")
            lines.append(f"  loop at {where}{made}: {it['elements']} element(s), waited {it['wait_share']:.0%} "
                         f"({it['wait_ms_per_element']:.2f} ms per element, step {it['step_ms_per_element']:.2f} ms"
                         f"{own}){verdict}")
        for g in report.get("iterators_in_graph") or []:
            where = f"{_display(g['file'])}:{g['line']}" if g.get("file") else ""
            fetch = f" (at {_display(g['fetch_file'])}:{g['fetch_line']})" if g.get("fetch_file") else ""
            lines.append(f"  `{g['function']}` {where}{fetch} {g['note']}")
        fits = report.get("fits", [])
        if fits:
            lines.append("model.fit/evaluate/predict input (step under Keras's loop against the same step on batches "
                         "already in memory, measured after the run):")
        for fit in fits:
            where = f"{_display(fit['file'])}:{fit['line']}"
            made = f", dataset from line {fit['dataset_line']}" if fit.get("dataset_line") else ""
            gen = fit.get("generator")
            if gen:
                kind = "PyDataset" if gen.get("kind") == "py_dataset" else "generator"
                made = f", {kind} `{gen['name']}`" + (f" (line {gen['line']})" if gen.get("line") else "")
            if fit.get("step_ms") is None or fit.get("memory_step_ms") is None:
                step = f", step {fit['step_ms']:.2f} ms" if fit.get("step_ms") is not None else ""
                lines.append(f"  {fit.get('method', 'fit')} at {where}{made}: {fit['steps']} step(s){step}: "
                             f"{fit.get('note') or 'not measured'}")
                continue
            verdict = "  <- input-bound" if fit.get("input_bound") else ""
            source = {"generator": "generator alone", "py_dataset": "PyDataset"}.get((gen or {}).get("kind"),
                                                                                  "pipeline alone")
            if fit.get("pipeline_timed") == "source in the run":
                source = "its Python generator source (timed in the run)"
            alone = (f", {source} {fit['pipeline_ms_per_batch']:.2f} ms per batch"
                     if fit.get("pipeline_ms_per_batch") is not None else "")
            lines.append(f"  {fit.get('method', 'fit')} at {where}{made}: {fit['steady_steps']} step(s), "
                         f"step {fit['step_ms']:.2f} ms, "
                         f"in memory {fit['memory_step_ms']:.2f} ms{alone}: waited {fit.get('wait_share') or 0:.0%}"
                         f"{verdict}")
            if fit.get("note"):
                lines.append(f"    ({fit['note']})")
        syncs = [s for s in report.get("host_syncs", []) if s.get("loop_line")]
        if syncs:
            lines.append("tensor values read back to Python in your loops (each read waits for the queued ops):")
        for s in syncs[:8]:
            per = f", {s['per_step']:.1f} per step" if s.get("per_step") is not None else ""
            mark = "  <- every step" if s.get("finding") else ""
            lines.append(f"  {_display(s['file'])}:{s['line']} {', '.join(s['kinds'])}: {s['count']} read(s){per}, "
                         f"{s['seconds'] * 1e3:.2f} ms{mark}")
    lines.append("")
    if findings:
        body = (render_concise if concise else full)(findings, color=color, registry=registry)
        lines.append(body.rstrip("\n"))
        lines.append("")
    n = len(findings)
    summary = f"Found {n} runtime finding{'s' if n != 1 else ''}" if n else "No runtime findings"
    if suppressed:
        summary += f" ({len(suppressed)} suppressed)"
    t = report.get("timings", {})
    imp = t.get("import_tensorflow_s")
    summary += f". Wall time {report.get('wall_s', 0):.1f} s" + (
        f" (TensorFlow import {imp:.1f} s)." if imp is not None else ".")
    lines.append(summary)
    return "\n".join(lines) + "\n"
