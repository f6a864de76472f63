"""`tflint verify`: apply tflint's own fixes to a file, then show that the fixed code computes the same thing and
measure whether it is faster, A/B interleaved in separate child processes.

    tflint verify FILE::FACTORY [--rule CODES] [--json] [--timeout S] [--budget S | --pairs N]
    tflint verify FOLDER        # every bench pair in it (files with a `make` factory), one table

For each pair: the selected rules' fixes (unsafe included) are applied in memory; when a rule has no applicable
fix (display-only or none), a `FACTORY_fixed` function in the same file is taken as the documented manual fix.
When several rules fix the file, each rule's fix is verified on its own, then all together.

A module can tune its verification with a literal dict (read statically, never executed by this process):

    __tflint_verify__ = {"mode": "cold", "rtol": 1e-4, "atol": 1e-5}

`mode` is "steady" (default: the factory is called once, the untimed warm-up traces, trials repeat the
workload) or "cold" (every run calls the factory anew, so tracing and function creation are part of the cost:
for retracing and trace-time fixes); a list of modes measures each (the first decides the verdict).
"""
from __future__ import annotations

import ast
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import bench
from .bench import FASTER, SLOWER, Worker, WorkerError

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
DEFAULT_FACTORY = "make"
# fixes that overlap work (wall time decides); the others remove work, so CPU time is reported as evidence too
OVERLAP_RULES = {"TFL101", "TFL102", "TFL103", "TFL108", "TFL109"}


# ================================================================================================================
# progress display
# ================================================================================================================
class Progress:
    """One status line on stderr, rewritten in place; silent when stderr is not a terminal or with --json."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._last = 0.0
        self._shown = False

    def update(self, text: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        width = 120
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns - 1
        except OSError:
            pass
        sys.stderr.write("\r\033[K" + text[:width])
        sys.stderr.flush()
        self._shown = True

    def clear(self) -> None:
        if self.enabled and self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._shown = False


# ================================================================================================================
# results
# ================================================================================================================
@dataclass
class Measurement:
    mode: str
    static_optimizations: bool
    pairs: list[tuple[float, float]] = field(default_factory=list)  # per-run wall seconds (before, after)
    cpu_pairs: list[tuple[float, float]] = field(default_factory=list)
    items: tuple[float, float] = (0.0, 0.0)  # items (elements or calls) per run
    runs: tuple[int, int] = (0, 0)
    seconds: float = 0.0
    load: float = 0.0  # the highest 1-minute load average seen while measuring (other processes add noise)
    stopped: str = ""  # why pairs stopped being added: "decided", "max pairs", "pairs" (--pairs N), "budget"

    @property
    def summary(self) -> Optional[bench.Summary]:
        return bench.summarize(bench.ratios_of(self.pairs))

    @property
    def cpu_summary(self) -> Optional[bench.Summary]:
        return bench.summarize(bench.ratios_of(self.cpu_pairs))

    @property
    def verdict(self) -> str:
        return bench.verdict(self.summary)

    def why_inconclusive(self) -> str:
        """Why an inconclusive measurement stayed so, with the spread it saw ("" when it is decided)."""
        s = self.summary
        if self.verdict != bench.INCONCLUSIVE:
            return ""
        if s is None or s.n < bench.MIN_PAIRS:
            return (f"inconclusive after {s.n if s else 0} pair(s): fewer than {bench.MIN_PAIRS} fit in the budget "
                    "(--budget or --pairs for more)")
        band = f"{1 / bench.MARGIN:.2f}-{bench.MARGIN:.2f}x"
        seen = (f"the median's {bench.CONFIDENCE:.0%} interval {s.ci_low:.2f}-{s.ci_high:.2f}x crosses an edge of "
                f"the {band} margin; single pairs ranged {s.lo:.2f}-{s.hi:.2f}x")
        if self.stopped == "budget":
            busy = f", load average up to {self.load:.1f}" if self.load else ""
            return (f"inconclusive after {s.n} pairs: the machine was too noisy to decide within the budget ({seen}"
                    f"{busy}; --budget or --pairs for more)")
        if self.stopped == "pairs":
            return f"inconclusive after the {s.n} pairs asked for (--pairs): {seen}"
        return f"inconclusive after {s.n} pairs (the cap): {seen}"

    def throughput(self, side: int) -> Optional[float]:
        """Both sides in the original's units: the original's items per run over its median run time, and the fixed
        side's rate as that times the median paired speedup, so that the two rates and the speedup shown agree
        (the ratio of two separately taken medians is not the median of the pairs' ratios: an A/A pair once read
        "500 el/s, 624 el/s, 1.01x") and a fix that changes how many items one run yields (batching) does not read
        as slower by its rate."""
        if not self.pairs:
            return None
        t = bench.median([p[0] for p in self.pairs])
        if t <= 0:
            return None
        s = self.summary
        if side == 0 or s is None:
            return self.items[0] / t
        return self.items[0] / t * s.median

    def to_json(self) -> dict[str, Any]:
        s, c = self.summary, self.cpu_summary
        return {
            "mode": self.mode,
            "static_optimizations": self.static_optimizations,
            "verdict": self.verdict,
            "speedup": s.to_json() if s else None,
            "cpu_speedup": c.to_json() if c else None,
            "before": {"seconds_per_run": bench.median([p[0] for p in self.pairs]) if self.pairs else None,
                       "throughput": self.throughput(0), "runs_per_trial": self.runs[0]},
            "after": {"seconds_per_run": bench.median([p[1] for p in self.pairs]) if self.pairs else None,
                      "throughput": self.throughput(1), "runs_per_trial": self.runs[1]},
            "trials": len(self.pairs),
            "stopped": self.stopped,
            "reason": self.why_inconclusive() or None,
            "seconds": round(self.seconds, 2),
            "load_average": round(self.load, 2),
        }


@dataclass
class VariantResult:
    file: str
    factory: str
    codes: list[str]
    names: list[str]
    fix: str  # "tflint" or "manual"
    fixes_applied: int = 0
    equivalence: Optional[bench.Equivalence] = None
    kind: str = ""  # "dataset" or "function"
    unit: str = ""
    device: dict[str, Any] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)
    error: str = ""
    note: str = ""
    status: str = "ok"  # ok, error, not run (the fix is in code the factory never executes)

    @property
    def primary(self) -> Optional[Measurement]:
        return self.measurements[0] if self.measurements else None

    @property
    def opts_off(self) -> Optional[Measurement]:
        return next((m for m in self.measurements if not m.static_optimizations), None)

    @property
    def failed(self) -> bool:
        if self.equivalence is not None and not self.equivalence.ok:
            return True
        # the first measurement (the defaults, the first mode) decides; the others are shown, not judged
        return self.primary is not None and self.primary.verdict == SLOWER

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "factory": self.factory,
            "rules": [{"code": c, "name": n} for c, n in zip(self.codes, self.names)],
            "fix": self.fix,
            "fixes_applied": self.fixes_applied,
            "status": self.status,
            "error": self.error or None,
            "note": self.note or None,
            "kind": self.kind or None,
            "unit": self.unit or None,
            "device": self.device or None,
            "equivalence": self.equivalence.to_json() if self.equivalence else None,
            "verdict": self.primary.verdict if self.primary else None,
            "failed": self.failed,
            "measurements": [m.to_json() for m in self.measurements],
        }


# ================================================================================================================
# targets and fixes
# ================================================================================================================
@dataclass
class Target:
    path: Path
    factory: str
    codes: Optional[list[str]]  # rules selected (None: the configured selection)
    missing: list[str] = field(default_factory=list)  # rules the pair names that this tflint does not know


def module_options(text: str) -> dict[str, Any]:
    """The literal `__tflint_verify__ = {...}` dict of a module, read statically (never executed here)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__tflint_verify__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def has_function(text: str, name: str) -> bool:
    return re.search(rf"^def {re.escape(name)}\s*\(", text, re.MULTILINE) is not None


def discover(target: str, rule_args: list[str], registry) -> list[Target]:
    """FILE::FACTORY, or a folder: every `*.py` in it with a top-level `make` (the file's stem, when it names a
    rule, selects that rule)."""
    if "::" in target:
        file, _, name = target.rpartition("::")
        path = Path(file)
        if not path.is_file():
            raise ValueError(f"{file}: no such file")
        if not name.isidentifier():
            raise ValueError(f"expected FILE::FACTORY, got {target!r}")
        return [_target(path, name, path.read_text(encoding="utf-8"), rule_args, registry, folder=False)]
    path = Path(target)
    if path.is_file():
        raise ValueError(f"expected FILE::FACTORY (e.g. {target}::{DEFAULT_FACTORY}) or a folder of bench pairs")
    if not path.is_dir():
        raise ValueError(f"{target}: no such file or folder")
    out = []
    for f in sorted(path.glob("*.py")):
        if f.name.startswith("_"):
            continue
        text = f.read_text(encoding="utf-8")
        if not has_function(text, DEFAULT_FACTORY):
            continue
        out.append(_target(f, DEFAULT_FACTORY, text, rule_args, registry, folder=True))
    if not out:
        raise ValueError(f"{target}: no bench pairs (files with a top-level `def {DEFAULT_FACTORY}()`)")
    return out


def _target(path: Path, factory: str, text: str, rule_args: list[str], registry, folder: bool) -> Target:
    """The rules a pair verifies: --rule, else the module's `__tflint_verify__["rule"]`, else (in a folder) the
    rule the file is named after, else the configured selection."""
    codes = _resolve_codes(rule_args, registry)
    if codes is not None:
        return Target(path, factory, codes)
    named = module_options(text).get("rule")
    if named:
        named = [named] if isinstance(named, str) else list(named)
        known = [n for n in named if registry.is_known(n)]
        missing = [n for n in named if not registry.is_known(n)]
        return Target(path, factory, _resolve_codes(known, registry) or [], missing)
    if folder and registry.get(path.stem) is not None:
        return Target(path, factory, [registry.get(path.stem).code])
    return Target(path, factory, None)


def _resolve_codes(rule_args: list[str], registry) -> Optional[list[str]]:
    if not rule_args:
        return None
    codes: set[str] = set()
    for r in rule_args:
        codes |= registry.resolve(r)
    return sorted(codes)


@dataclass
class Variant:
    codes: list[str]
    text: str
    factory: str
    fix: str
    applied: int


def plan_variants(t: Target, text: str, registry, config) -> tuple[list[Variant], list[str], list[str]]:
    """The fixed versions to verify, the codes that fire in the file, and messages (refused fixes ...)."""
    from ..engine import Settings, check_text, fix_text

    if t.codes == []:
        return [], [], []
    settings = Settings.create(registry, config, select=t.codes, unsafe_fixes=True)
    path = str(t.path)
    fired = sorted({f.code for f in check_text(text, path, settings).findings if f.code in settings.selected})
    result = fix_text(text, path, settings)
    messages = list(result.messages)
    applied = sorted(result.applied_by_code)
    variants: list[Variant] = []
    if len(applied) > 1:
        for code in applied:
            one = fix_text(text, path, Settings.create(registry, config, select=[code], unsafe_fixes=True))
            if one.applied:
                variants.append(Variant([code], one.text, t.factory, "tflint", one.applied))
    if applied:
        variants.append(Variant(applied, result.text, t.factory, "tflint", result.applied))
    elif fired and has_function(text, t.factory + "_fixed"):
        variants.append(Variant(fired, text, t.factory + "_fixed", "manual", 0))
    return variants, fired, messages


def order_changing(codes: list[str], registry) -> bool:
    """Whether any of these rules documents (`order-changing: true` in its YAML) that its fix changes the order
    of a dataset's elements: only then are the elements compared as a multiset."""
    for c in codes:
        meta = registry.get(c)
        if meta is not None and meta.raw.get("order-changing") is True:
            return True
    return False


# ================================================================================================================
# one pair
# ================================================================================================================
class PairRunner:
    def __init__(self, t: Target, text: str, variant: Variant, registry, timeout: float, budget: float,
                 progress: Progress, pairs: Optional[int] = None) -> None:
        self.t, self.text, self.v, self.registry = t, text, variant, registry
        self.timeout, self.budget, self.progress = timeout, budget, progress
        self.pairs = pairs  # a fixed number of A/B pairs per measurement: the budget no longer decides
        self.opts = module_options(text)
        self.label = f"{t.path.name}::{t.factory} [{', '.join(variant.codes) or 'manual'}]"

    def _ordered(self) -> bool:
        return not order_changing(self.v.codes, self.registry)

    def run(self) -> VariantResult:
        names = [self.registry.get(c).name if self.registry.get(c) else c for c in self.v.codes]
        res = VariantResult(str(self.t.path), self.t.factory, list(self.v.codes), names, self.v.fix, self.v.applied)
        if self.v.fix == "manual":
            res.note = f"display-only/no fix: the after side is the documented manual fix `{self.v.factory}`"
        modes = self.opts.get("mode", "steady")
        modes = [modes] if isinstance(modes, str) else list(modes)
        rtol = float(self.opts.get("rtol", bench.DEFAULT_RTOL))
        atol = float(self.opts.get("atol", bench.DEFAULT_ATOL))
        with tempfile.TemporaryDirectory(prefix="tflint-verify-") as tmp:
            # each side is compiled under a file holding exactly its text (AutoGraph re-reads sources): the
            # original under its own path, the fixed text under a temporary `<name>.tflint-fixed.py`
            src_a = self.t.path.resolve()
            if src_a.read_text(encoding="utf-8") != self.text:  # edited meanwhile: use what was fixed
                src_a = Path(tmp) / f"{self.t.path.stem}.tflint-original.py"
                src_a.write_text(self.text, encoding="utf-8")
            src_b = Path(tmp) / f"{self.t.path.stem}.tflint-fixed.py"
            src_b.write_text(self.v.text, encoding="utf-8")
            a = Worker("original", self.timeout)
            b = Worker("fixed", self.timeout)
            try:
                self.progress.update(f"{self.label}: starting two workers (importing TensorFlow)", force=True)
                a.start(), b.start()
                executed: set = set()
                res.equivalence, res.device, res.kind = check_equivalence(
                    a, b, self.t.path, (src_a, self.t.factory), (src_b, self.v.factory), modes[0], Path(tmp),
                    ordered=self._ordered(), rtol=rtol, atol=atol, progress=lambda: self.progress.update(
                        f"{self.label}: checking equivalence", force=True), executed=executed)
                res.unit = "el/s" if res.kind == "dataset" else "calls/s"
                if not res.equivalence.ok:
                    return res  # no point timing a fix that computes something else
                if self.v.fix == "tflint":
                    changed = changed_statements(self.text, self.v.text)
                    if changed and not any(statement_ran(self.text, span, executed) for span in changed):
                        shown = ", ".join(str(lo) for lo, _ in changed[:5])
                        res.status = "not run"
                        res.note = (f"the fix changes line(s) {shown}, which the factory never runs: timing it would "
                                    "compare identical work (not measured)")
                        return res
                uses_data = self._uses_tf_data(res.kind)
                # one budget per pair, shared by the modes: a measurement stops as soon as its verdict is decided,
                # so an undecided one may use its whole share; an "optimizations off" one (tf.data pairs not
                # `faster`) gets what is left, at least a quarter of the budget
                share = self.budget / len(modes)
                spent = 0.0
                for i, mode in enumerate(modes):
                    if i:
                        self._send_all(a, b, {"cmd": "mode", "mode": mode})
                    res.measurements.append(self.measure(a, b, mode, True, share))
                    spent += res.measurements[-1].seconds
                if uses_data and res.measurements[0].verdict != FASTER:  # ~1x or unclear with the defaults
                    if len(modes) > 1:
                        self._send_all(a, b, {"cmd": "mode", "mode": modes[0]})
                    self._send_all(a, b, {"cmd": "options", "static_optimizations": False})
                    res.measurements.append(self.measure(a, b, modes[0], False, max(self.budget - spent, self.budget / 4)))
            except WorkerError as exc:
                res.status = "error"
                res.error = str(exc)
            finally:
                a.close()
                b.close()
        return res

    @staticmethod
    def _send_all(a: Worker, b: Worker, req: dict[str, Any]) -> None:
        a.send(req)
        b.send(req)
        a.receive(req)
        b.receive(req)

    def _uses_tf_data(self, kind: str) -> bool:
        return kind == "dataset" or bool(re.search(r"\bDataset\b|TFRecordDataset|TextLineDataset", self.text))

    def _done(self, ratios: list[float], seconds: float, budget: float) -> bool:
        if self.pairs:
            return len(ratios) >= self.pairs
        return bench.enough_pairs(ratios, seconds, min_seconds=min(bench.STOP_MIN_S, budget / 4))

    def measure(self, a: Worker, b: Worker, mode: str, static_opts: bool, budget: float) -> Measurement:
        m = Measurement(mode, static_opts, load=_load())
        tag = "" if static_opts else " (static tf.data optimizations off)"
        self.progress.update(f"{self.label}: warming up{tag}", force=True)
        wa = a.request({"cmd": "warmup"})
        wb = b.request({"cmd": "warmup"})
        runs_a, runs_b = bench.runs_for(wa["wall"] / wa["runs"]), bench.runs_for(wb["wall"] / wb["runs"])
        m.runs = (runs_a, runs_b)
        m.items = (wa["items"] / wa["runs"], wb["items"] / wb["runs"])
        start = time.monotonic()
        ratios: list[float] = []
        last_pair = 0.0
        m.stopped = "budget"
        while True:
            if self._done(ratios, time.monotonic() - start, budget):
                m.stopped = ("pairs" if self.pairs else "max pairs" if len(ratios) >= bench.MAX_PAIRS else "decided")
                break
            elapsed = time.monotonic() - start
            n = len(m.pairs)
            if not self.pairs:  # a fixed count is taken whatever it costs (each request is bounded by --timeout)
                if n >= bench.MIN_PAIRS and elapsed + last_pair > budget:
                    break
                if n < bench.MIN_PAIRS and n and elapsed + last_pair > max(3 * budget, self.budget):
                    break  # a pair so slow that even the minimum does not fit: inconclusive
            t0 = time.monotonic()
            order = ((a, runs_a, 0), (b, runs_b, 1)) if n % 2 == 0 else ((b, runs_b, 1), (a, runs_a, 0))
            got: dict[int, dict[str, Any]] = {}
            for w, runs, side in order:  # A and B alternate which goes first (ABBA), one at a time
                got[side] = w.request({"cmd": "trial", "runs": runs})
            pa, pb = got[0], got[1]
            m.pairs.append((pa["wall"] / pa["runs"], pb["wall"] / pb["runs"]))
            m.cpu_pairs.append((pa["cpu"] / pa["runs"], pb["cpu"] / pb["runs"]))
            m.items = (pa["items"] / pa["runs"], pb["items"] / pb["runs"])
            ratios = bench.ratios_of(m.pairs)
            last_pair = time.monotonic() - t0
            s = bench.summarize(ratios)
            if s:
                self.progress.update(
                    f"{self.label}{tag}: pair {len(ratios)}  median {s.median:.2f}x  {bench.CONFIDENCE:.0%} CI "
                    f"{s.ci_low:.2f}-{s.ci_high:.2f}  {time.monotonic() - start:.0f}/{budget:.0f} s"
                )
        m.seconds = time.monotonic() - start
        m.load = max(m.load, _load())
        return m


def check_equivalence(a: bench.Worker, b: bench.Worker, path: Path, original: tuple[Path, str], fixed: tuple[Path, str],
                      mode: str, tmp: Path, ordered: bool = True, rtol: float = bench.DEFAULT_RTOL,
                      atol: float = bench.DEFAULT_ATOL, progress=None,
                      executed: Optional[set] = None) -> tuple[bench.Equivalence, dict, str]:
    """Load the original (`a`) and the fixed side (`b`; may be the same worker, loaded in turn) and compare their
    outputs. A failure of the original raises WorkerError (nothing to compare against); a fixed side that raises
    where the original ran is the verdict "broken". Returns (equivalence, device, kind)."""
    same = a is b

    def load(w: bench.Worker, src: tuple[Path, str]) -> dict[str, Any]:
        return {"cmd": "load", "path": str(path), "source_file": str(src[0]), "factory": src[1], "mode": mode, "seed": 0}

    def outputs(w: bench.Worker, name: str) -> dict[str, Any]:
        return {"cmd": "outputs", "out": str(tmp / f"{name}.pkl"), "max_items": bench.MAX_ELEMENTS,
                "lines": executed is not None and name == "a"}

    def record(info: dict[str, Any]) -> dict[str, Any]:
        if executed is not None:
            executed.update(info.get("lines") or ())
        return info

    def broken(exc: bench.WorkerError) -> bench.Equivalence:
        detail = str(exc).split(": ", 1)[-1].strip()
        return bench.Equivalence("broken", f"the fixed code raises where the original ran: {detail}")

    if same:
        ra = a.request(load(a, original))
        record(a.request(outputs(a, "a")))
        try:
            a.request(load(a, fixed))
            b_info = a.request(outputs(a, "b"))
        except bench.WorkerError as exc:
            return broken(exc), ra.get("device", {}), ""
    else:
        a.send(load(a, original))
        b.send(load(b, fixed))
        ra = a.receive({"cmd": "load"})
        try:
            b.receive({"cmd": "load"})
            fixed_loaded = True
        except bench.WorkerError as exc:
            fixed_loaded, failure = False, exc
        if progress is not None:
            progress()
        a_info = record(a.request(outputs(a, "a")))
        if not fixed_loaded:
            return broken(failure), ra.get("device", {}), a_info.get("kind") or ""
        try:
            b_info = b.request(outputs(b, "b"))
        except bench.WorkerError as exc:
            return broken(exc), ra.get("device", {}), a_info.get("kind") or ""
    outs = [bench.load_outputs(tmp / "a.pkl"), bench.load_outputs(tmp / "b.pkl")]
    eq = bench.compare_outputs(outs[0], outs[1], ordered=ordered, rtol=rtol, atol=atol)
    return eq, ra.get("device", {}), b_info.get("kind") or ""


def changed_statements(before: str, after: str) -> list[tuple[int, int]]:
    """The (first, last) lines of the original's innermost statements that a fix changes: a fix is measured only
    when one of them ran (a statement spanning several lines counts as run when any of its lines did)."""
    import difflib

    a, b = before.splitlines(), after.splitlines()
    rows: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            rows.update(range(i1 + 1, i2 + 1) if i2 > i1 else (max(i1, 1),))
    try:
        tree = ast.parse(before)
    except SyntaxError:
        return sorted((r, r) for r in rows)
    spans = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree) if isinstance(n, ast.stmt)
             and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For,
                                    ast.While, ast.If, ast.Try))]
    out = set()
    for r in rows:
        inner = [sp for sp in spans if sp[0] <= r <= sp[1]]
        out.add(min(inner, key=lambda sp: sp[1] - sp[0]) if inner else (r, r))
    return sorted(out)


def statement_ran(text: str, span: tuple[int, int], executed: set) -> bool:
    """Whether the statement at `span` ran while the factory's outputs were recorded. `executed` holds line numbers
    and `def:NAME` for every function of the file that was called (AutoGraph's converted copies included, which run
    from a generated file). Module-level code ran when the module was loaded; a statement inside a function ran
    when one of its lines did or when its outermost function (a traced one included) was called. Unknown counts
    as run: only a fix in a function that was never called is left unmeasured."""
    lo, hi = span
    if any(isinstance(n, int) and lo <= n <= hi for n in executed):
        return True
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True
    for node in tree.body:
        body = node.body if isinstance(node, ast.ClassDef) else [node]
        for fn in body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= lo <= (fn.end_lineno or lo):
                names = {fn.name} | {n.name for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                return any(f"def:{name}" in executed for name in names)
        if isinstance(node, ast.ClassDef) and node.lineno <= lo <= (node.end_lineno or lo):
            return True  # a class attribute or something the class body ran
    return True  # module-level code


def pending_reason(t: Target, fired: list[str]) -> str:
    """Why a pair has nothing to verify (the text report's note and the JSON's `reason`)."""
    if t.missing:
        return f"pending: {', '.join(t.missing)} is not a rule of this tflint yet"
    if fired:
        return f"{', '.join(fired)} fires but offers no applicable fix and there is no `{t.factory}_fixed`"
    return f"no selected rule fires{' (' + ', '.join(t.codes) + ')' if t.codes else ''}: pending"


def unmeasured(t: Target, fired: list[str], variants: list[Variant], registry) -> list[tuple[str, str]]:
    """(code, why) for each rule that fires in the file but that none of the pairs measures (no fix tflint
    applies here, and no `FACTORY_fixed` to measure instead), so a report of the other rules' fixes does not pass
    for a verdict on the whole file."""
    covered = {c for v in variants for c in v.codes}
    out = []
    for code in fired:
        if code in covered:
            continue
        meta = registry.get(code)
        automatic = meta is not None and any(k in ("safe", "unsafe") for k in meta.fix)
        why = ("no fix of it applies to this code" if automatic else
               "it has no automatic fix" + (" (its fix is a suggestion to read)" if meta and "display" in meta.fix else ""))
        out.append((code, f"{code} fires but {why}, and there is no `{t.factory}_fixed` to measure instead: not measured"))
    return out


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):  # pragma: no cover - not on every platform
        return 0.0


# ================================================================================================================
# rendering
# ================================================================================================================
def _fmt_rate(x: Optional[float], unit: str) -> str:
    if x is None:
        return "-"
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.1f}{suffix} {unit}"
    return f"{x:.3g} {unit}"


def _fmt_speed(s: Optional[bench.Summary]) -> str:
    if s is None:
        return "-"
    return f"{s.median:.2f}x ({s.ci_low:.2f}-{s.ci_high:.2f})"


def _equiv_cell(e: Optional[bench.Equivalence]) -> str:
    if e is None:
        return "-"
    return {"equivalent": "yes" if e.ordered else "yes (multiset)", "not equivalent": "NO",
            "not comparable": "random", "no outputs": "no outputs",
            "broken": "BROKEN"}.get(e.status, e.status)


def render_table(results: list[VariantResult], pending: list[tuple[Target, list[str]]],
                 skipped: Optional[list[tuple[Target, str, str]]] = None) -> str:
    rows = [("pair", "rule", "fix", "equal", "before", "after", "speedup (90% CI)", "trials", "CPU", "verdict",
             "static opts off")]
    for r in results:
        m = r.primary
        off = r.opts_off
        pair = Path(r.file).stem + ("" if r.factory == DEFAULT_FACTORY else f"::{r.factory}")
        if m is not None and m.mode != "steady":
            pair += f" [{m.mode}]"
        rows.append((
            pair,
            ",".join(r.codes) or "-",
            r.fix,
            _equiv_cell(r.equivalence) if r.status != "error" else "-",
            _fmt_rate(m.throughput(0), r.unit) if m else "-",
            _fmt_rate(m.throughput(1), r.unit) if m else "-",
            _fmt_speed(m.summary) if m else "-",
            str(len(m.pairs)) if m else "-",
            f"{m.cpu_summary.median:.2f}x" if m and m.cpu_summary else "-",
            (m.verdict if m else ("ERROR" if r.status == "error" else "not run" if r.status == "not run" else
                                  "BROKEN" if r.equivalence is not None and r.equivalence.status == "broken" else "not timed")),
            (f"{off.summary.median:.2f}x {off.verdict}" if off and off.summary else "-"),
        ))
        for extra in r.measurements[1:]:
            if extra.static_optimizations:
                rows.append((f"  [{extra.mode}]", "", "", "", _fmt_rate(extra.throughput(0), r.unit),
                             _fmt_rate(extra.throughput(1), r.unit), _fmt_speed(extra.summary), str(len(extra.pairs)),
                             f"{extra.cpu_summary.median:.2f}x" if extra.cpu_summary else "-", extra.verdict, ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = []
    for r in results:
        where = f"{Path(r.file).name}::{r.factory} [{','.join(r.codes)}]"
        if r.status == "error":
            notes.append(f"{where}: error: {r.error}")
        elif r.equivalence is not None and r.equivalence.status != "equivalent":
            notes.append(f"{where}: {r.equivalence.status}: {r.equivalence.detail}")
        if r.note:
            notes.append(f"{where}: {r.note}")
        m = r.primary
        if m is not None and m.verdict == bench.INCONCLUSIVE and m.why_inconclusive():
            notes.append(f"{where}: {m.why_inconclusive()}")
    for t, fired in pending:
        notes.append(f"{t.path.name}::{t.factory}: {pending_reason(t, fired)}")
    for t, _, why in skipped or []:
        notes.append(f"{t.path.name}::{t.factory}: {why}")
    dev = next((r.device for r in results if r.device), None)
    head = []
    if dev:
        head.append(f"Device: {dev['name']}; TensorFlow {dev['tensorflow']}")
        busiest = max((m.load for r in results for m in r.measurements), default=0.0)
        cores = dev.get("cores") or 1
        if busiest > cores:
            head.append(f"Warning: the machine was busy (1-minute load average up to {busiest:.1f} on {cores} cores): "
                        "other processes make these timings noisier")
    head.append(f"A/B interleaved (ABBA); trials >= {bench.MIN_TRIAL_S:g} s; speedup = before/after wall time per run: "
                f"the median over the pairs and its {bench.CONFIDENCE:.0%} confidence interval; faster/slower when the "
                f"whole interval is beyond {bench.MARGIN:g}x / {1 / bench.MARGIN:g}x, no difference when it is wholly "
                f"inside {1 / bench.MARGIN:g}-{bench.MARGIN:g}x (>= {bench.MIN_PAIRS} pairs)")
    return "\n".join(head + [""] + lines + ([""] + notes if notes else [])) + "\n"


# ================================================================================================================
# entry point
# ================================================================================================================
def run_verify(args) -> int:
    from ..project import Project, ProjectError

    from .child import missing_runtime

    why = missing_runtime()
    if why:
        print(f"tflint: error: {why}", file=sys.stderr)
        return EXIT_ERROR
    progress = Progress(enabled=sys.stderr.isatty() and not args.json)
    where = Path(args.target.rpartition("::")[0] if "::" in args.target else args.target)
    try:
        project = Project.load(getattr(args, "config", None), start=(where if where.is_dir() else where.parent).resolve())
        registry, config = project.registry, project.config
        targets = discover(args.target, list(args.rule or []), registry)
    except (ValueError, *ProjectError) as exc:
        print(f"tflint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - a broken rule module: say which, do not crash
        print(f"tflint: error: loading the rules failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    budget = args.budget if args.budget is not None else bench.DEFAULT_BUDGET_S
    results: list[VariantResult] = []
    pending: list[tuple[Target, list[str]]] = []
    skipped: list[tuple[Target, str, str]] = []  # rules that fire in a measured file but that no pair measures
    messages: list[str] = []
    for t in targets:
        text = t.path.read_text(encoding="utf-8")
        variants, fired, msgs = plan_variants(t, text, registry, config)
        messages += msgs
        if not variants:
            pending.append((t, fired))
            continue
        skipped += [(t, code, why) for code, why in unmeasured(t, fired, variants, registry)]
        for v in variants:
            r = PairRunner(t, text, v, registry, args.timeout, budget, progress, args.pairs).run()
            results.append(r)
            progress.clear()
            if not args.json and len(targets) > 1:
                m = r.primary
                status = (m.verdict + f" {m.summary.median:.2f}x" if m and m.summary else
                          (r.equivalence.status if r.equivalence else r.status))
                print(f"{t.path.name} [{','.join(v.codes)}]: {status}", file=sys.stderr)
    progress.clear()
    for m in messages:
        print(f"tflint: warning: {m}", file=sys.stderr)
    if args.json:
        out = {"results": [r.to_json() for r in results],
               "pending": [{"file": str(t.path), "factory": t.factory, "rules": t.codes, "missing": t.missing,
                            "fired": fired, "reason": pending_reason(t, fired)}
                           for t, fired in pending],
               "unmeasured": [{"file": str(t.path), "factory": t.factory, "rule": code, "reason": why}
                              for t, code, why in skipped],
               "settings": {"min_pairs": bench.MIN_PAIRS, "stop_min_pairs": bench.STOP_MIN_PAIRS,
                            "stop_min_s": bench.STOP_MIN_S, "max_pairs": bench.MAX_PAIRS,
                            "min_trial_s": bench.MIN_TRIAL_S, "margin": bench.MARGIN,
                            "confidence": bench.CONFIDENCE, "budget_s": budget, "pairs": args.pairs,
                            "timeout_s": args.timeout},
               "verified": sum(r.status != "not run" for r in results),
               "nothing_verified": nothing_verified(results, pending)}
        print(json.dumps(out, indent=2))
    else:
        sys.stdout.write(render_table(results, pending, skipped))
    if any(r.failed for r in results):
        return EXIT_FAIL
    if any(r.status == "error" for r in results):
        return EXIT_ERROR
    nothing = nothing_verified(results, pending)
    if nothing:
        # as `check` with a path that names nothing it can check: exit 2, and the reason on stderr (a "not run"
        # fix compared identical work: a 0 would read as "verified, no regression")
        print(f"tflint: error: nothing was verified: {nothing}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def nothing_verified(results: list[VariantResult], pending: list[tuple[Target, list[str]]]) -> Optional[str]:
    """Why no fix was verified (no pair had a fix to apply, or every fix is in code the factory never runs), else
    None when at least one pair was checked and timed (or found broken or not equivalent)."""
    if any(r.status != "not run" for r in results):
        return None
    if not results and not pending:
        return None
    if results:
        n = len(results)
        return (f"{'the fix is' if n == 1 else f'all {n} fixes are'} in code the factory never runs, so timing would "
                "compare identical work; point FACTORY at code that runs the changed lines, or select the rule whose "
                "fix it exercises (--rule)")
    return "no selected rule has a fix to apply here" + (
        f" ({len(pending)} pair(s) pending)" if len(pending) > 1 else "")
