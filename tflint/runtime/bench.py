"""A/B benchmarking and equivalence checking for `tflint verify`.

Three layers, from pure to effectful:

* statistics over paired timings (`summarize`, `sign_test`, `verdict`): pure functions, tested on synthetic
  numbers;
* the equivalence checker (`compare_outputs`): pure, over nested numpy/Python values;
* the worker protocol: `Worker` (parent side) starts `python -m tflint.runtime.bench` as a child process that
  loads one side (original or fixed) of a user module, calls its factory and answers JSON-line requests
  (`load`, `outputs`, `warmup`, `trial`). User code runs only in these children, each request under a time
  limit. TensorFlow is imported only in the child.

This module has its own minimal child runner (a persistent worker with a request/response protocol): the
generic one-shot runner of `tflint inspect` does not fit an interleaved A/B benchmark, which needs both sides
alive at once so that each trial is a single request.
"""
from __future__ import annotations

import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional

# -- measuring constants (see "Measuring" in the interface spec and docs/verify.md: measured on a 2-core machine) ----
MIN_PAIRS = 5  # fewer pairs than this never give a verdict
STOP_MIN_PAIRS = 10  # a decided verdict ends the measurement only after this many pairs ...
STOP_MIN_S = 6.0  # ... spread over at least this many seconds (or a quarter of the budget, when that is less): the
# noise of a loaded machine comes in bursts of seconds, and five short pairs inside one burst once called an A/A pair
# "faster 1.44x" (all five pairs 1.37-1.67x, load 7.5)
MAX_PAIRS = 400  # pairs are short (MIN_TRIAL_S): the budget, not this cap, normally ends an undecided measurement
MIN_TRIAL_S = 0.15  # each trial runs the workload enough times to take at least this long
MARGIN = 1.25  # the equivalence margin: speedups inside [1/MARGIN, MARGIN] count as "no difference"
CONFIDENCE = 0.90  # the median's confidence interval (two one-sided tests at 5% each)
ALPHA = (1.0 - CONFIDENCE) / 2  # the level of each one-sided test the interval stands for
# benchmarking seconds per pair, all measurements: only an undecided pair uses it all (a decided one stops early), and
# then stays within ~60 s with its workers' start and the equivalence runs
DEFAULT_BUDGET_S = 40.0
SIZING_S = 0.25  # seconds of runs after the warm-up that estimate one run's time
MAX_ELEMENTS = 100_000  # dataset elements per run / compared for equivalence
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6

FASTER, SLOWER, SAME, INCONCLUSIVE = "faster", "slower", "no difference", "inconclusive"


# ================================================================================================================
# statistics (pure)
# ================================================================================================================
def percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    if not values:
        raise ValueError("percentile of no values")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(values: list[float]) -> float:
    return percentile(values, 50.0)


def sign_test(wins: int, losses: int) -> float:
    """One-sided sign test: P(at least `wins` successes in wins+losses fair coin flips). Ties are dropped."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2.0**n


def median_interval(ratios: list[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A distribution-free confidence interval for the median ratio (the sign test inverted): the order statistics
    (r_(k), r_(n+1-k)) with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) < k), is still at least
    `confidence` (with 5 pairs: the smallest and the largest ratio, 94%)."""
    s = sorted(ratios)
    n = len(s)
    if n == 0:
        raise ValueError("median interval of no values")
    k, below = 1, 0.0  # below: P(Bin(n, 1/2) < k)
    while k < (n + 1) // 2:
        nxt = below + math.comb(n, k) / 2.0**n  # P(Bin < k + 1)
        if 1.0 - 2.0 * nxt < confidence:
            break
        k, below = k + 1, nxt
    return s[k - 1], s[n - k]


@dataclass
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    lo: float
    hi: float
    ci_low: float  # the median's CONFIDENCE interval (order statistics): what the verdict is read from
    ci_high: float
    wins: int  # pairs where the fixed side was faster (ratio > 1) / slower (< 1): descriptive
    losses: int

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        return (self.q3 - self.q1) / self.median if self.median > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {"pairs": self.n, "median": self.median, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "confidence": CONFIDENCE, "q1": self.q1, "q3": self.q3, "min": self.lo, "max": self.hi,
                "spread": self.spread, "wins": self.wins, "losses": self.losses}


def ratios_of(pairs: list[tuple[float, float]]) -> list[float]:
    """Speedups from paired per-run times (before, after): > 1 means the fixed side is faster."""
    return [a / b for a, b in pairs if a > 0 and b > 0]


def summarize(ratios: list[float], confidence: float = CONFIDENCE) -> Optional[Summary]:
    """The pairs' ratios summarized: median, quartiles, range and the median's confidence interval."""
    if not ratios:
        return None
    lo, hi = median_interval(ratios, confidence)
    return Summary(
        n=len(ratios), median=median(ratios), q1=percentile(ratios, 25), q3=percentile(ratios, 75),
        lo=min(ratios), hi=max(ratios), ci_low=lo, ci_high=hi,
        wins=sum(1 for r in ratios if r > 1.0), losses=sum(1 for r in ratios if r < 1.0),
    )


def verdict(s: Optional[Summary], margin: float = MARGIN, min_pairs: int = MIN_PAIRS) -> str:
    """Read from the median's confidence interval against the equivalence margin [1/margin, margin]:

    * `faster`: the whole interval at or above `margin` (a one-sided sign test at ALPHA that the median speedup
      exceeds the margin, not merely 1: an A/A pair on a loaded machine once had 5 of 5 pairs above 1);
    * `slower`: the whole interval at or below 1/`margin`;
    * `no difference`: the whole interval strictly inside the margin (two one-sided tests: an equivalence test);
    * `inconclusive`: the interval crosses an edge of the margin (too few pairs or too noisy to decide)."""
    if s is None or s.n < min_pairs:
        return INCONCLUSIVE
    if s.ci_low >= margin:
        return FASTER
    if s.ci_high <= 1.0 / margin:
        return SLOWER
    if 1.0 / margin < s.ci_low and s.ci_high < margin:
        return SAME
    return INCONCLUSIVE


def region(ratio: float, margin: float = MARGIN) -> str:
    """The verdict a median at `ratio` would point to: beyond the margin either way, or inside it."""
    return FASTER if ratio >= margin else SLOWER if ratio <= 1.0 / margin else SAME


def enough_pairs(ratios: list[float], seconds: float = math.inf, min_seconds: float = STOP_MIN_S,
                 stop_min_pairs: int = STOP_MIN_PAIRS, max_pairs: int = MAX_PAIRS) -> bool:
    """Stop adding pairs once the verdict is decided (the median's interval lies inside one verdict region) and
    the pairs so far are at least `stop_min_pairs` spread over at least `min_seconds` of measuring (`seconds`), or
    at `max_pairs`. While the interval crosses an edge of the margin, more pairs narrow it; the caller's time
    budget ends an undecided measurement, which then stays `inconclusive` (or keeps the verdict of the pairs it
    has, at least MIN_PAIRS, when the budget ends before the minimum span)."""
    if len(ratios) >= max_pairs:
        return True
    if len(ratios) < stop_min_pairs or seconds < min_seconds:
        return False
    return verdict(summarize(ratios)) != INCONCLUSIVE


def runs_for(run_time: float, min_trial: float = MIN_TRIAL_S, cap: int = 100_000) -> int:
    """How many runs of the workload one trial needs to last at least `min_trial` seconds."""
    if run_time <= 0:
        return cap
    return max(1, min(cap, math.ceil(min_trial / run_time)))


# ================================================================================================================
# equivalence (pure)
# ================================================================================================================
@dataclass
class Equivalence:
    status: str  # "equivalent", "not equivalent", "not comparable", "no outputs"
    detail: str = ""
    compared: int = 0  # top-level items compared (dataset elements, calls)
    ordered: bool = True

    @property
    def ok(self) -> bool:
        return self.status not in ("not equivalent", "broken")

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "compared": self.compared, "ordered": self.ordered}


def _np():
    import numpy as np

    return np


def _is_array(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "dtype")


def _describe(path: str) -> str:
    return path or "the output"


def compare_values(a: Any, b: Any, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL, path: str = "") -> Optional[str]:
    """None when `a` and `b` match (same structure, dtype kinds, shapes; floats within rtol/atol), else the
    first difference, described with its path."""
    np = _np()
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return f"{_describe(path)}: a dict on one side, {type(b if isinstance(a, dict) else a).__name__} on the other"
        if set(a) != set(b):
            return f"{_describe(path)}: keys differ ({sorted(map(str, set(a) ^ set(b)))})"
        for k in a:
            d = compare_values(a[k], b[k], rtol, atol, f"{path}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
            return f"{_describe(path)}: a sequence on one side only"
        if len(a) != len(b):
            return f"{_describe(path)}: {len(a)} items before the fix, {len(b)} after"
        for i, (x, y) in enumerate(zip(a, b)):
            d = compare_values(x, y, rtol, atol, f"{path}[{i}]")
            if d:
                return d
        return None
    if a is None or b is None:
        return None if a is b else f"{_describe(path)}: None on one side only"
    if isinstance(a, str) or isinstance(b, str):
        return None if a == b else f"{_describe(path)}: {a!r} != {b!r}"
    xa, xb = np.asarray(a), np.asarray(b)
    if xa.shape != xb.shape:
        return f"{_describe(path)}: shape {xa.shape} before the fix, {xb.shape} after"
    ka, kb = xa.dtype.kind, xb.dtype.kind
    numeric = "biufc"
    if ka in numeric and kb in numeric and xa.dtype != xb.dtype:
        # a fix that changes an element's dtype (float32 -> float64, int32 -> int64) changes what the code computes
        return f"{_describe(path)}: dtype {xa.dtype} before the fix, {xb.dtype} after"
    if ka in numeric and kb in numeric:
        if ka in "fc" or kb in "fc":
            if not np.allclose(xa.astype(np.complex128 if "c" in ka + kb else np.float64),
                               xb.astype(np.complex128 if "c" in ka + kb else np.float64),
                               rtol=rtol, atol=atol, equal_nan=True):
                diff = np.abs(xa.astype(np.float64) - xb.astype(np.float64)) if "c" not in ka + kb else np.abs(xa - xb)
                return f"{_describe(path)}: values differ beyond rtol={rtol:g}, atol={atol:g} (max abs difference {np.nanmax(diff):.3g})"
            return None
        if not np.array_equal(xa, xb):
            return f"{_describe(path)}: integer values differ"
        return None
    if ka != kb and not ({ka, kb} <= {"S", "O", "U"}):
        return f"{_describe(path)}: dtype {xa.dtype} before the fix, {xb.dtype} after"
    if xa.dtype.kind == "O" or xb.dtype.kind == "O":
        same = xa.tolist() == xb.tolist()
    else:
        same = np.array_equal(xa, xb)
    return None if same else f"{_describe(path)}: values differ"


def _canonical_key(x: Any) -> bytes:
    """A sort key for multiset comparison: the element's bytes (floats rounded so that tolerance-level noise
    does not change the order)."""
    np = _np()
    if isinstance(x, dict):
        return b"{" + b",".join(str(k).encode() + b":" + _canonical_key(x[k]) for k in sorted(x, key=str)) + b"}"
    if isinstance(x, (list, tuple)):
        return b"(" + b",".join(_canonical_key(v) for v in x) + b")"
    if x is None:
        return b"None"
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        arr = np.round(arr.astype(np.float64), 4)
    if arr.dtype.kind == "O":
        return repr(arr.tolist()).encode()
    return str(arr.dtype.kind).encode() + str(arr.shape).encode() + arr.tobytes()


def _multiset_difference(a: list, b: list, rtol: float, atol: float) -> Optional[str]:
    if len(a) != len(b):
        return f"{len(a)} items before the fix, {len(b)} after"
    d = compare_values(sorted(a, key=_canonical_key), sorted(b, key=_canonical_key), rtol, atol)
    return d.replace("the output[", "sorted item [") if d else None


def _leaves(x: Any) -> list:
    if isinstance(x, dict):
        return [leaf for k in sorted(x, key=str) for leaf in _leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _rebuild(x: Any, leaves: list) -> Any:
    if isinstance(x, dict):
        return {k: _rebuild(x[k], leaves) for k in sorted(x, key=str)}
    if isinstance(x, (list, tuple)):
        return tuple(_rebuild(v, leaves) for v in x)
    return leaves.pop(0)


def unbatch(items: list) -> Optional[list]:
    """Split batched items into rows (every leaf of an item shares one leading dimension); None when they are
    not batches."""
    np = _np()
    rows: list = []
    for item in items:
        leaves = [np.asarray(v) for v in _leaves(item)]
        if not leaves or any(v.ndim == 0 for v in leaves):
            return None
        n = leaves[0].shape[0]
        if any(v.shape[0] != n for v in leaves):
            return None
        for i in range(n):
            rows.append(_rebuild(item, [v[i] for v in leaves]))
    return rows


def spec_leaves(spec: Any, path: str = "") -> list:
    """A dataset's `element_spec` as plain leaves `[path, dtype name, shape or None]` (computed in the worker)."""
    if isinstance(spec, dict):
        return [leaf for k in sorted(spec, key=str) for leaf in spec_leaves(spec[k], f"{path}[{k!r}]")]
    if isinstance(spec, (list, tuple)):
        return [leaf for i, v in enumerate(spec) for leaf in spec_leaves(v, f"{path}[{i}]")]
    dtype = getattr(spec, "dtype", None)
    shape = getattr(spec, "shape", None)
    dims = None
    if shape is not None and getattr(shape, "rank", None) is not None:
        dims = [d if d is None else int(d) for d in shape.as_list()]
    return [[path, getattr(dtype, "name", type(spec).__name__), dims]]


def spec_difference(a: Optional[list], b: Optional[list]) -> Optional[str]:
    """None when two datasets' element specs agree: the same components and dtypes, and shapes that are
    compatible (a fix may make a dimension known that was unknown, e.g. a generator's `None` becomes 3)."""
    if a is None or b is None:
        return None
    if [x[0] for x in a] != [y[0] for y in b]:
        return f"element_spec structure differs ({len(a)} components before the fix, {len(b)} after)"
    for (path, da, sa), (_, db, sb) in zip(a, b):
        where = f"element_spec{path}"
        if da != db:
            return f"{where}: dtype {da} before the fix, {db} after"
        if sa is not None and sb is not None:
            if len(sa) != len(sb) or any(x is not None and y is not None and x != y for x, y in zip(sa, sb)):
                return f"{where}: shape {tuple(sa)} before the fix, {tuple(sb)} after"
    return None


def compare_outputs(before: dict[str, Any], after: dict[str, Any], ordered: bool = True,
                    rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Equivalence:
    """Compare what the original and the fixed factory produced (`items`: dataset elements or call results, in
    order; `deterministic`: whether two seeded runs of that side agreed; `truncated`: whether `items` stops at
    the element cap). `ordered=False` compares the items as multisets (for fixes documented to change order)."""
    for side, name in ((before, "original"), (after, "fixed")):
        if side.get("uncomparable"):
            return Equivalence("not comparable", f"the {name} side returns values that cannot be compared ({side['uncomparable']})")
    if not before.get("deterministic", True):
        return Equivalence("not comparable", "the original's outputs differ between two runs with the same seeds "
                           "(random ops or nondeterministic order): equality is not claimed")
    if not after.get("deterministic", True):
        return Equivalence("not comparable", "the fixed code's outputs differ between two runs with the same seeds "
                           "(the fix introduces nondeterminism, e.g. random ops run in parallel): equality is not claimed")
    a, b = before.get("items") or [], after.get("items") or []
    spec = spec_difference(before.get("spec"), after.get("spec"))
    if spec:
        return Equivalence("not equivalent", spec, ordered=ordered)
    if before.get("truncated") != after.get("truncated"):
        return Equivalence("not equivalent", "one side produced more elements than the other")
    if not a and not b:
        return Equivalence("no outputs", "neither side returns anything to compare")
    if all(x is None for x in a) and all(y is None for y in b) and len(a) == len(b):
        return Equivalence("no outputs", "the function returns None: equivalence of its effects is not checked",
                           compared=len(a))
    note = f" (first {len(a)} elements)" if before.get("truncated") else ""
    tol = f"floats within rtol={rtol:g}, atol={atol:g}"
    if ordered:
        d = compare_values(a, b, rtol, atol)
        if d:
            return Equivalence("not equivalent", d.replace("the output[", "item ["), compared=min(len(a), len(b)))
        return Equivalence("equivalent", f"{len(a)} items equal in order{note}; {tol}", compared=len(a))
    d = _multiset_difference(a, b, rtol, atol)
    if d:
        # batches of reordered records differ batch by batch: compare the records (rows) instead
        ra, rb = unbatch(a), unbatch(b)
        if ra is not None and rb is not None and _multiset_difference(ra, rb, rtol, atol) is None:
            return Equivalence("equivalent", f"{len(ra)} rows (of {len(a)} batches) equal as a multiset{note}: the fix "
                               f"is documented to change order; {tol}", compared=len(ra), ordered=False)
        return Equivalence("not equivalent", "as multisets: " + d, compared=min(len(a), len(b)), ordered=False)
    same_order = compare_values(a, b, rtol, atol) is None
    extra = "" if not same_order else " (and in the same order this run)"
    return Equivalence("equivalent", f"{len(a)} items equal as a multiset{extra}{note}: the fix is documented to "
                       f"change order; {tol}", compared=len(a), ordered=False)


# ================================================================================================================
# the worker (child side)
# ================================================================================================================
_OPTS_OFF = False  # static tf.data optimizations (map_parallelization, inject_prefetch) switched off


def _seed_everything(seed: int) -> None:
    import random

    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # pragma: no cover
        pass
    if "keras" in sys.modules:
        try:
            sys.modules["keras"].utils.set_random_seed(seed)
            return
        except Exception:  # pragma: no cover
            pass
    if "tensorflow" in sys.modules:
        sys.modules["tensorflow"].random.set_seed(seed)


def _reset_global_state() -> None:
    """Undo what a previously loaded module may have set process-wide (a worker of the equivalence suite loads
    many modules in turn): the Keras mixed-precision policy, eager execution of functions, Keras's session."""
    if "tensorflow" not in sys.modules:
        return
    tf = sys.modules["tensorflow"]
    try:
        tf.config.run_functions_eagerly(False)
    except Exception:  # pragma: no cover - an old TensorFlow
        pass
    keras = sys.modules.get("keras")
    if keras is not None:
        try:
            keras.mixed_precision.set_global_policy("float32")
            keras.backend.clear_session()
        except Exception:  # pragma: no cover - a Keras without these
            pass


def _opts_off_options(tf):
    opts = tf.data.Options()
    opts.experimental_optimization.map_parallelization = False
    opts.experimental_optimization.inject_prefetch = False
    return opts


def _install_opts_off(tf) -> None:
    """Make every dataset iterated from Python in this process run with the static optimizations off."""
    cls = tf.data.Dataset
    if getattr(cls, "_tflint_patched", False):
        return
    original_iter = cls.__iter__
    state = {"inside": False}

    def __iter__(self):
        if not _OPTS_OFF or state["inside"]:
            return original_iter(self)
        state["inside"] = True
        try:
            return iter(self.with_options(_opts_off_options(tf)))
        finally:
            state["inside"] = False

    cls.__iter__ = __iter__
    cls._tflint_patched = True


# What a worker's outputs file may name when it is read back in the parent: plain containers and numpy values only,
# so that no value the user's code returned can run code in tflint's own process (pickle would call anything).
_SAFE_GLOBALS = {
    ("builtins", n) for n in ("list", "tuple", "dict", "set", "frozenset", "int", "float", "complex", "str", "bytes",
                              "bytearray", "bool", "slice", "range")
} | {
    (m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}


def load_outputs(path) -> Any:
    """Read a worker's outputs file, refusing any global but plain containers and numpy arrays, scalars and dtypes
    (a refused value is reported as not comparable, never loaded)."""
    import io
    import pickle

    class _Restricted(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            if (module, name) in _SAFE_GLOBALS or (module == "numpy.dtypes" and name.endswith("DType")):
                return super().find_class(module, name)
            raise pickle.UnpicklingError(f"a value of type {module}.{name}")

    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return _Restricted(io.BytesIO(data)).load()
    except Exception as exc:  # noqa: BLE001 - anything but plain values: say so, load nothing
        return {"uncomparable": f"{type(exc).__name__}: {exc}"}


class _LineRecorder:
    """While active (and given a set), records the line numbers of `filename` that run, in every thread: which
    code the factory executes (`verify` measures only fixes in code that runs). Frames of other files are not
    traced line by line."""

    def __init__(self, filename: str, lines: Optional[set]) -> None:
        self.filename, self.lines = filename, lines

    def _global(self, frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        if code.co_filename == self.filename:
            self.lines.add(frame.f_lineno)
            self.lines.add(f"def:{code.co_name}")
            return self._local
        if "__autograph_generated" in code.co_filename and code.co_name.startswith("tf__"):
            # AutoGraph runs a converted copy of a traced function from a generated file: its lines are not the
            # original's, but its name says which function ran
            self.lines.add(f"def:{code.co_name[4:]}")
        return None

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self._local

    def __enter__(self) -> "_LineRecorder":
        if self.lines is not None:
            import threading

            threading.settrace(self._global)
            sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        if self.lines is not None:
            import threading

            sys.settrace(None)
            threading.settrace(None)


class Uncomparable(Exception):
    """A factory output that cannot be turned into numpy/Python values."""


def to_plain(x: Any, tf) -> Any:
    """Tensors -> numpy, nested structures kept; raises Uncomparable for values that cannot be compared."""
    import numpy as np

    if x is None or isinstance(x, (bool, int, float, complex, str, bytes, np.ndarray, np.generic)):
        return x
    if isinstance(x, dict):
        return {k: to_plain(v, tf) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_plain(v, tf) for v in x) if not hasattr(x, "_fields") else tuple(to_plain(v, tf) for v in x)
    if isinstance(x, tf.RaggedTensor):
        return {"ragged": x.to_list()}
    if isinstance(x, tf.SparseTensor):
        return {"indices": x.indices.numpy(), "values": x.values.numpy(), "dense_shape": x.dense_shape.numpy()}
    if hasattr(x, "numpy"):
        return x.numpy()
    if hasattr(x, "__array__"):
        return np.asarray(x)
    raise Uncomparable(f"a value of type {type(x).__name__}")


class _Side:
    """One loaded side: the module, the factory and the workload built from it."""

    def __init__(self, path: str, source_file: str, factory: str, mode: str, seed: int) -> None:
        import types

        self.path, self.factory_name, self.mode, self.seed = path, factory, mode, seed
        self.source_file = os.path.abspath(source_file)
        text = open(source_file, encoding="utf-8").read()
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.insert(0, folder)
        _reset_global_state()
        mod = types.ModuleType("tflint_verify_target")
        mod.__file__ = os.path.abspath(path)
        sys.modules["tflint_verify_target"] = mod
        _seed_everything(seed)
        # compiled under the file that holds exactly this text: AutoGraph and `inspect` re-read a function's source
        # from its code object's file, so the fixed side must not point at the original file
        exec(compile(text, os.path.abspath(source_file), "exec"), mod.__dict__)
        self.module = mod
        fn = getattr(mod, factory, None)
        if not callable(fn):
            raise LookupError(f"{path} has no function {factory!r}")
        self.factory = fn
        import tensorflow as tf

        self.tf = tf
        _install_opts_off(tf)
        self.workload = None
        self.kind = None
        self.spec: Optional[list] = None

    def build(self):
        """Call the factory (seeded) and normalize what it returns: ("dataset", ds) or ("function", (fn, calls))."""
        from .child import UserCodeError, classify, user_traceback

        _seed_everything(self.seed)
        try:
            made = self.factory()
        except Exception as exc:  # noqa: BLE001 - the user's error, shown with the user's frames
            raise UserCodeError(f"{self.factory_name}() raised {type(exc).__name__}: {exc}", user_traceback(exc)) from None
        res = classify(made, f"{os.path.basename(self.path)}::{self.factory_name}()")
        if res.kind == "dataset":
            ds = res.dataset
            if _OPTS_OFF:
                ds = ds.with_options(_opts_off_options(self.tf))
            return "dataset", ds
        return "function", (res.fn, res.calls)

    def _sync(self, out: Any) -> None:
        for t in self.tf.nest.flatten(out, expand_composites=True):
            if hasattr(t, "numpy"):
                t.numpy()

    def run_once(self, workload) -> int:
        """One run of the workload; returns the number of items produced (elements or calls)."""
        kind, w = workload
        if kind == "dataset":
            n = 0
            for _ in w:
                n += 1
                if n >= MAX_ELEMENTS:
                    break
            return n
        fn, calls = w
        for args, kwargs in calls:
            self._sync(fn(*args, **kwargs))
        return len(calls)

    def outputs_once(self, max_items: int) -> tuple[list, bool]:
        kind, w = self.build()
        self.kind = kind
        tf = self.tf
        if kind == "dataset":
            self.spec = spec_leaves(w.element_spec)
            items = []
            truncated = False
            for el in w:
                if len(items) >= max_items:
                    truncated = True
                    break
                items.append(to_plain(el, tf))
            return items, truncated
        fn, calls = w
        return [to_plain(fn(*args, **kwargs), tf) for args, kwargs in calls], False

    def timed(self, runs: int) -> dict[str, Any]:
        items = 0
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(runs):
            if self.mode == "cold":
                wl = self.build()
            else:
                wl = self.workload
            items += self.run_once(wl)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return {"wall": wall, "cpu": cpu, "runs": runs, "items": items}


def _device(tf) -> dict[str, Any]:
    gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import platform

    cpu = cpu or platform.processor() or platform.machine()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    name = f"GPU ({', '.join(gpus)})" if gpus else f"CPU ({cpu}, {cores} cores)"
    return {"name": name, "gpus": gpus, "cpu": cpu, "cores": cores, "tensorflow": tf.__version__}


def worker_main() -> int:
    """Serve JSON-line requests on the original stdout; user output goes to stderr."""
    import pickle

    from .child import UserCodeError, user_traceback

    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    side: Optional[_Side] = None
    global _OPTS_OFF

    def reply(obj: dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        cmd = req.get("cmd")
        try:
            if cmd == "exit":
                reply({"ok": True})
                return 0
            if cmd == "load":
                side = _Side(req["path"], req["source_file"], req["factory"], req.get("mode", "steady"), req.get("seed", 0))
                reply({"ok": True, "device": _device(side.tf)})
            elif cmd == "outputs":
                assert side is not None
                max_items = int(req.get("max_items", MAX_ELEMENTS))
                executed: Optional[set] = set() if req.get("lines") else None
                with _LineRecorder(side.source_file, executed):
                    first, truncated = side.outputs_once(max_items)
                second, _ = side.outputs_once(max_items)
                deterministic = compare_values(first, second, 0.0, 0.0) is None
                info: dict[str, Any] = {"items": first, "truncated": truncated, "deterministic": deterministic,
                                        "spec": side.spec}
                try:
                    with open(req["out"], "wb") as fh:
                        pickle.dump(info, fh, protocol=4)
                except Exception as exc:  # values that cannot be pickled
                    with open(req["out"], "wb") as fh:
                        pickle.dump({"uncomparable": f"{type(exc).__name__}: {exc}"}, fh)
                reply({"ok": True, "kind": side.kind, "items": len(first), "truncated": truncated,
                       "deterministic": deterministic,
                       "lines": sorted(executed, key=str) if executed is not None else None})
            elif cmd == "mode":
                assert side is not None
                side.mode = req["mode"]
                reply({"ok": True})
            elif cmd == "options":
                _OPTS_OFF = not req.get("static_optimizations", True)
                reply({"ok": True})
            elif cmd == "warmup":
                assert side is not None
                side.workload = side.build()
                side.kind = side.workload[0]
                side.timed(1)  # untimed warm-up: the first run traces (cold mode: builds and traces anew)
                timing = side.timed(1)  # then size the trials over at least SIZING_S seconds of runs
                while timing["wall"] < SIZING_S:
                    more = side.timed(max(1, int(timing["runs"])))
                    timing = {k: timing[k] + more[k] for k in timing}
                reply({"ok": True, "kind": side.kind, **timing})
            elif cmd == "trial":
                assert side is not None and side.workload is not None
                reply({"ok": True, **side.timed(int(req["runs"]))})
            else:
                reply({"ok": False, "error": f"unknown request {cmd!r}"})
        except Uncomparable as exc:
            with open(req["out"], "wb") as fh:
                pickle.dump({"uncomparable": str(exc)}, fh)
            reply({"ok": True, "kind": side.kind if side else None, "items": 0, "truncated": False,
                   "deterministic": True})
        except UserCodeError as exc:
            reply({"ok": False, "error": exc.message + ("\n" + exc.details if exc.details else "")})
        except Exception as exc:  # noqa: BLE001 - report anything the user code raises, with the user's frames
            reply({"ok": False, "error": f"{type(exc).__name__}: {exc}\n{user_traceback(exc)}"})
    return 0


# ================================================================================================================
# the worker (parent side)
# ================================================================================================================
class WorkerError(RuntimeError):
    pass


@dataclass
class Worker:
    """A child process holding one side of a pair. Every request has a time limit; on timeout the child is
    killed."""

    label: str
    timeout: float
    proc: Optional[subprocess.Popen] = None
    log: Any = None
    _buf: bytes = b""
    device: dict[str, Any] = field(default_factory=dict)

    def start(self) -> Worker:
        self.log = tempfile.TemporaryFile(mode="w+b")
        from .child import child_env

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tflint.runtime.bench", "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env=child_env({"PYTHONHASHSEED": "0"}), start_new_session=True,
        )
        return self

    def _stderr_tail(self, n: int = 1500) -> str:
        if self.log is None:
            return ""
        try:
            self.log.seek(0)
            data = self.log.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in data.splitlines() if ln.strip()]
        return "\n".join(lines)[-n:]

    def request(self, obj: dict[str, Any], timeout: Optional[float] = None) -> dict[str, Any]:
        self.send(obj)
        return self.receive(obj, timeout)

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(f"{self.label}: the child process died\n{self._stderr_tail()}") from None

    def receive(self, obj: dict[str, Any], timeout: Optional[float] = None) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerError(f"{self.label}: `{obj.get('cmd')}` timed out after {limit:g} s (--timeout)")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self.proc.wait()
                raise WorkerError(f"{self.label}: the child process exited with code {self.proc.returncode}\n"
                                  f"{self._stderr_tail()}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        resp = json.loads(line)
        if not resp.get("ok"):
            raise WorkerError(f"{self.label}: {resp.get('error', 'failed')}".rstrip())
        return resp

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            from .child import kill_group

            kill_group(self.proc)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.request({"cmd": "exit"}, timeout=5)
                self.proc.wait(timeout=5)
            except (WorkerError, subprocess.TimeoutExpired, OSError, ValueError):
                self.kill()
        if self.log is not None:
            self.log.close()
            self.log = None


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        sys.exit(worker_main())
    print("usage: python -m tflint.runtime.bench --worker (started by `tflint verify`)", file=sys.stderr)
    sys.exit(2)
