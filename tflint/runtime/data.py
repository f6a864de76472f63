"""tf.data pipelines: the transformation chain, Python ops in its functions, per-prefix throughput (TFL806).

Runs in the child. `record_sites()` must be called before the factory runs: it remembers, for every dataset
object created, the user source line that created it (the `.map(...)` call), so findings point at the stage.
The bottleneck analysis follows the input-pipeline analyzer / Plumber idea: measure the throughput of every
prefix of the chain on this machine (in units of source elements, so a `batch(32)` does not look like a 32×
slowdown), and report the stage that adds the most time per source element.
"""
from __future__ import annotations

import inspect
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from .trace import is_user_file, op_location

_SITES: dict[int, tuple[Any, tuple[str, int]]] = {}


def record_sites() -> None:
    from tensorflow.python.data.ops import dataset_ops

    cls = dataset_ops.DatasetV2
    if getattr(cls.__init__, "_tflint_hook", False):
        return
    original = cls.__init__

    def hooked(self, *args, **kwargs):
        frame = inspect.currentframe()
        frame = frame.f_back if frame else None
        while frame is not None:
            if is_user_file(frame.f_code.co_filename):
                from pathlib import Path

                _SITES[id(self)] = (self, (str(Path(frame.f_code.co_filename).resolve()), frame.f_lineno))
                break
            frame = frame.f_back
        return original(self, *args, **kwargs)

    hooked._tflint_hook = True  # type: ignore[attr-defined]
    cls.__init__ = hooked


# id(the dataset `from_generator` returned) -> (that dataset, seconds each `next()` of its Python generator took),
# timed while the script runs (`time_generators`)
_GENERATOR_TIMES: dict[int, tuple[Any, list[float]]] = {}
_GENERATOR_SAMPLE = 4000


def time_generators() -> None:
    """Time the Python generators behind the user's `tf.data.Dataset.from_generator(...)` as the script runs: each
    iterator's generator is wrapped in one that times its `next()` (about 1 µs per element). `tflint run` names
    a `from_generator` source as the limit of an input-bound `fit` from these times, without pulling the pipeline
    again after the run."""
    from tensorflow.python.data.ops import dataset_ops

    cls = dataset_ops.DatasetV2
    original = cls.from_generator
    if getattr(original, "_tflint_hook", False):
        return

    def from_generator(generator, *args, **kwargs):
        caller = sys._getframe(1)
        if not callable(generator) or not is_user_file(caller.f_code.co_filename):
            return original(generator, *args, **kwargs)
        times: list[float] = []

        def timed(*gen_args):
            return _timed_elements(iter(generator(*gen_args)), times)

        ds = original(timed, *args, **kwargs)
        _GENERATOR_TIMES[id(ds)] = (ds, times)
        return ds

    from_generator._tflint_hook = True  # type: ignore[attr-defined]
    from_generator.__wrapped__ = original  # type: ignore[attr-defined]
    cls.from_generator = staticmethod(from_generator)


def _timed_elements(it, times: list[float]):
    while True:
        t0 = time.perf_counter()
        try:
            item = next(it)
        except StopIteration:
            return
        if len(times) < _GENERATOR_SAMPLE:
            times.append(time.perf_counter() - t0)
        yield item


def generator_times(ds) -> Optional[list[float]]:
    """The seconds per element of the Python generator behind `ds` (a `from_generator` dataset), timed during the
    run; None when it was not timed."""
    entry = _GENERATOR_TIMES.get(id(ds))
    return entry[1] if entry and entry[0] is ds else None


def site_of(ds) -> Optional[tuple[str, int]]:
    entry = _SITES.get(id(ds))
    return entry[1] if entry and entry[0] is ds else None


@dataclass
class Stage:
    obj: Any
    kind: str  # e.g. "map", "batch", "range", "prefetch"
    label: str  # e.g. "map(parse, num_parallel_calls=AUTOTUNE)"
    site: Optional[tuple[str, int]]
    parallel: Optional[bool] = None  # for map/interleave: whether it runs in parallel
    py_ops: list[dict[str, Any]] = field(default_factory=list)  # {"op", "node", "location"}
    parse_ops: list[str] = field(default_factory=list)  # the tf.Example parsing ops its functions run
    multiplier: float = 1.0  # source elements per element of this prefix
    exhausted: bool = False  # the prefix ran out of elements while being measured (a small, finite dataset)
    rate: Optional[float] = None  # source elements per second of the prefix ending here
    effective_rate: Optional[float] = None  # the best rate of this prefix or any longer one (see bottleneck)
    own_s: Optional[float] = None  # seconds this stage adds per source element over the stage before it (bottleneck)
    elements: int = 0
    seconds: float = 0.0


_KIND = {
    "_MapDataset": "map", "_ParallelMapDataset": "map", "ParallelMapDataset": "map", "MapDataset": "map",
    "_BatchDataset": "batch", "_ParallelBatchDataset": "batch", "_PaddedBatchDataset": "padded_batch",
    "_UnbatchDataset": "unbatch", "_FilterDataset": "filter", "_PrefetchDataset": "prefetch",
    "_ShuffleDataset": "shuffle", "_RepeatDataset": "repeat", "_CacheDataset": "cache", "_MemoryCacheDataset": "cache",
    "_TakeDataset": "take", "_SkipDataset": "skip", "_FlatMapDataset": "flat_map", "_InterleaveDataset": "interleave",
    "_ParallelInterleaveDataset": "interleave", "_OptionsDataset": "with_options", "_ShardDataset": "shard",
    "RangeDataset": "range", "_RangeDataset": "range", "TensorSliceDataset": "from_tensor_slices",
    "_TensorSliceDataset": "from_tensor_slices", "_TensorDataset": "from_tensors", "TFRecordDatasetV2": "TFRecordDataset",
    "TextLineDatasetV2": "TextLineDataset", "_GeneratorDataset": "from_generator", "_ZipDataset": "zip",
    "_ConcatenateDataset": "concatenate", "_FlatMapDataset_": "flat_map",
}


def _kind(obj) -> str:
    name = type(obj).__name__
    if name in _KIND:
        return _KIND[name]
    if "Generator" in name or "FlatMap" in name and _is_generator(obj):
        return "from_generator"
    return name.strip("_").replace("Dataset", "").lower() or name


def _is_generator(obj) -> bool:
    return "generator" in repr(getattr(obj, "_map_func", "")).lower()


def _functions_of(obj) -> list[Any]:
    """Concrete functions a stage applies (map/filter/interleave functions)."""
    out = []
    for value in vars(obj).values():
        fn = getattr(value, "function", None)
        if fn is not None and hasattr(fn, "graph"):
            out.append(fn)
    return out


def _py_ops(fn) -> list[dict[str, Any]]:
    from .graph import PY_FUNC_OPS

    return [{"op": op.type, "node": op.name, "graph": gname, "location": op_location(op)}
            for op, gname in _operations(fn) if op.type in PY_FUNC_OPS]


# `tf.io.parse_single_example`/`parse_example` (ParseExampleV2 in TF 2) and their sequence counterparts
PARSE_OPS = {"ParseExample", "ParseExampleV2", "ParseSingleExample", "ParseSequenceExample", "ParseSequenceExampleV2",
             "ParseSingleSequenceExample"}


def _parse_ops(fn) -> list[str]:
    return sorted({op.type for op, _ in _operations(fn) if op.type in PARSE_OPS})


def _operations(fn) -> list[tuple[Any, str]]:
    """The operations of a concrete function's graph and of the functions it calls (`tf.cond` branches...)."""
    found = []
    seen: set[int] = set()

    def walk(graph, gname):
        if id(graph) in seen:
            return
        seen.add(id(graph))
        found.extend((op, gname) for op in graph.get_operations())
        for name, f in getattr(graph, "_functions", {}).items():
            if getattr(f, "graph", None) is not None:
                walk(f.graph, name)

    walk(fn.graph, getattr(fn, "name", ""))
    return found


def parses_per_element(stage: Stage, stages: list[Stage]) -> bool:
    """A `map` that parses tf.Example records before a `batch`: one record per call (TFL107's pattern)."""
    if stage.kind != "map" or not stage.parse_ops or stage not in stages:
        return False
    return any(s.kind in ("batch", "padded_batch") for s in stages[stages.index(stage) + 1:])


def _label(obj, kind: str) -> str:
    args = []
    for value in vars(obj).values():
        if getattr(value, "function", None) is not None and hasattr(value.function, "graph"):
            py = getattr(value, "_func", None)
            name = getattr(py, "__name__", "") or "fn"
            args.append("lambda" if name == "<lambda>" else name)
    n_par = getattr(obj, "_num_parallel_calls", None)
    parallel = None
    if kind in ("map", "interleave"):
        parallel = n_par is not None and type(obj).__name__.startswith(("_Parallel", "Parallel"))
        if parallel:
            try:
                v = int(n_par.numpy()) if hasattr(n_par, "numpy") else int(n_par)
                args.append("num_parallel_calls=AUTOTUNE" if v == -1 else f"num_parallel_calls={v}")
            except (TypeError, ValueError):
                args.append("num_parallel_calls=?")
    size = getattr(obj, "_batch_size", None)
    if size is not None:
        try:
            args.append(str(int(size.numpy()) if hasattr(size, "numpy") else int(size)))
        except (TypeError, ValueError):
            pass
    return f"{kind}({', '.join(args)})"


def chain(ds) -> list[Stage]:
    """The stages from the source to `ds`, following each stage's first input."""
    objs = []
    cur = ds
    while cur is not None and len(objs) < 200:
        objs.append(cur)
        nxt = getattr(cur, "_input_dataset", None)
        if nxt is None:
            ins = getattr(cur, "_input_datasets", None) or getattr(cur, "_datasets", None)
            nxt = ins[0] if isinstance(ins, (list, tuple)) and ins else None
        cur = nxt
    objs.reverse()
    stages = []
    mult = 1.0
    for obj in objs:
        kind = _kind(obj)
        st = Stage(obj, kind, _label(obj, kind), site_of(obj))
        if kind in ("map", "interleave"):
            st.parallel = "num_parallel_calls" in st.label
        for fn in _functions_of(obj):
            st.py_ops.extend(_py_ops(fn))
            st.parse_ops.extend(op for op in _parse_ops(fn) if op not in st.parse_ops)
        size = getattr(obj, "_batch_size", None)
        if kind in ("batch", "padded_batch") and size is not None:
            try:
                mult *= float(size.numpy()) if hasattr(size, "numpy") else float(size)
            except (TypeError, ValueError):
                pass
        elif kind == "unbatch":
            mult = 1.0  # todo: the unbatched size is not known statically; assume it undoes the last batch
        st.multiplier = mult
        prev = stages[-1] if stages else None
        if (kind == "flat_map" and prev is not None and prev.kind == "from_tensors" and prev.site == st.site
                and "flat_map_fn" in st.label and st.py_ops):
            st.kind, st.label = "from_generator", "from_generator()"
            stages.pop()
        stages.append(st)
    return stages


def _iteration_error(st: Stage, exc: BaseException):
    from .child import UserCodeError, first_line, user_traceback

    where = f" (created at line {st.site[1]})" if st.site else ""
    return UserCodeError(f"iterating the pipeline up to `{st.label}`{where} raised {type(exc).__name__}: "
                         f"{first_line(exc)}", user_traceback(exc))


def measure(stages: list[Stage], min_seconds: float, max_elements: int, budget: float, endless: bool = False) -> float:
    """Throughput of each prefix: one iterator per prefix, started and warmed up (its first elements pay for
    thread pools, shuffle buffers and autotuning) before three timed windows of `min_seconds / 3`; the fastest
    window counts (other load on the machine only ever slows a window down). Returns the cost of pulling an
    element itself (seconds per element, measured on an endless `range`), which `bottleneck` subtracts.
    `endless`: measure each prefix repeated (`tflint run` measures a training set whose epoch may be short)."""
    import tensorflow as tf

    deadline = time.perf_counter() + budget
    floor = Stage(tf.data.Dataset.range(1 << 62), "range", "range()", None)
    todo = [floor, *[s for s in stages if s.kind != "with_options"]]
    window = max(min_seconds / 3, 0.02)
    for i, st in enumerate(todo):
        per_stage_end = time.perf_counter() + max((deadline - time.perf_counter()) / (len(todo) - i), window)
        try:
            it = iter(st.obj.repeat() if endless and st is not floor else st.obj)
            for _ in range(2):
                next(it)
        except StopIteration:
            st.elements, st.seconds, st.rate, st.exhausted = 0, 0.0, None, True
            continue
        except Exception as exc:  # noqa: BLE001 - the user's pipeline failed while running
            raise _iteration_error(st, exc) from None
        best, total_n, total_t = None, 0, 0.0
        for _ in range(3):
            n, t0 = 0, time.perf_counter()
            stop = t0 + window
            try:
                while n < max_elements:
                    next(it)
                    n += 1
                    if (n % 8 == 0 or n < 8) and time.perf_counter() >= stop:  # slow elements: check early
                        break
            except StopIteration:
                st.exhausted = True
            except Exception as exc:  # noqa: BLE001
                raise _iteration_error(st, exc) from None
            dt = time.perf_counter() - t0
            total_n, total_t = total_n + n, total_t + dt
            if n and dt > 0 and (best is None or n / dt > best):
                best = n / dt
            if n == 0 or time.perf_counter() > per_stage_end:
                break
        st.elements, st.seconds = total_n, total_t
        st.rate = best * st.multiplier if best else None
    return 1.0 / floor.rate if floor.rate else 0.0


def cache_passes(stage: Stage, budget: float) -> dict[str, Any]:
    """The prefix ending at an in-memory `cache()`, iterated to its end twice: the first pass runs every stage
    before the cache and fills it (its rate is the first epoch's), the second reads from memory (every later
    epoch's). A pass that has not ended within `budget` seconds is abandoned (TensorFlow then discards the partial
    cache) and `filled` stays False: later epochs cannot be measured. Rates are in source elements per second."""
    import tensorflow as tf

    out: dict[str, Any] = {"line": stage.site[1] if stage.site else None, "filled": False, "first_rate": None,
                           "cached_rate": None, "elements": 0, "first_s": None, "cached_s": None, "note": None}
    filename = getattr(stage.obj, "_filename", None)
    try:
        name = filename.numpy().decode() if hasattr(filename, "numpy") else (filename or "")
    except Exception:  # noqa: BLE001 - not a constant: treat as a file cache
        name = "?"
    if name:
        out["note"] = "a file cache (`cache(filename)`): not filled by inspect, which would write the file"
        return out
    if int(stage.obj.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
        out["note"] = "the dataset before the cache never ends (a `repeat()` before `cache()`?): the cache never fills"
        return out
    for which in ("first", "cached"):
        n, t0 = 0, time.perf_counter()
        deadline = t0 + budget
        done = False
        try:
            it = iter(stage.obj)
            while True:
                try:
                    next(it)
                except StopIteration:
                    done = True
                    break
                n += 1
                if n % 64 == 0 and time.perf_counter() > deadline:
                    break
        except Exception as exc:  # noqa: BLE001 - the user's pipeline failed while running
            raise _iteration_error(stage, exc) from None
        finally:
            it = None  # an unfinished first pass: TensorFlow drops the partial cache with the iterator
        dt = time.perf_counter() - t0
        if not done:
            out["note"] = (f"the {'first' if which == 'first' else 'second'} pass over `{stage.label}` did not end "
                           f"within {budget:.0f} s ({n * stage.multiplier:,.0f} source elements)")
            if which == "first":
                out["first_rate"] = n * stage.multiplier / dt if dt > 0 and n else None
            return out
        out[f"{which}_rate"] = n * stage.multiplier / dt if dt > 0 and n else None
        out[f"{which}_s"] = round(dt, 4)
        out["elements"] = n
    out["filled"] = True
    return out


# Stages that do no work on the elements (they only move it to another thread or select elements): never the
# bottleneck themselves; a slowdown measured across them is the consumer's thread hand-off.
_NO_WORK = {"prefetch", "with_options", "take", "skip", "repeat", "shard", "cache"}


MIN_SOURCE_ELEMENTS = 1000  # a dataset that runs out before this many source elements: its rates are warm-up noise
MIN_SECONDS = 0.05  # nor from a prefix measured for less time than this


def too_few(stages: list[Stage]) -> Optional[str]:
    """Why the measured sample cannot support a verdict (a small dataset that runs out, a prefix measured for a
    few milliseconds), else None."""
    measured = [s for s in stages if s.kind != "with_options"]
    if not measured:
        return "nothing was measured"
    # a slow stage measured for the whole window is fine with few elements; a dataset that ran out is not
    thin = [s for s in measured if (s.exhausted and s.elements * s.multiplier < MIN_SOURCE_ELEMENTS)
            or s.seconds < MIN_SECONDS]
    if not thin:
        return None
    fewest = min(int(s.elements * s.multiplier) for s in thin)
    why = "the dataset ran out" if any(s.exhausted for s in thin) else "the time budget ran out"
    return (f"too few elements to judge a bottleneck: a prefix yielded {fewest:,} source elements before {why} "
            f"(a verdict needs >= {MIN_SOURCE_ELEMENTS:,} and >= {MIN_SECONDS:g} s per prefix)")


def bottleneck(
    stages: list[Stage], min_added_us: float, min_ratio: float, floor: float = 0.0, after: Optional[Stage] = None
) -> Optional[dict[str, Any]]:
    """The stage adding the most time per source element, when it adds at least `min_added_us` µs and slows
    its prefix by at least `min_ratio`×; None when no stage stands out. `floor` is the measurement's own cost
    per element (subtracted, per element of each prefix). `after` (a filled `cache()`): only the stages after it
    are candidates, against its rate (what every epoch after the first runs)."""
    if after is not None:
        stages = stages[stages.index(after):]
    measured = [s for s in stages if s.rate]
    # A prefix does all the work of the shorter ones, so it cannot really be faster than they are: a shorter
    # prefix measured slower was held back by how it was consumed (one element at a time from Python, which
    # waits on a parallel stage's thread hand-off), and is credited with the best rate seen after it.
    envelope = 0.0
    for st in reversed(measured):
        envelope = max(envelope, st.rate)
        st.effective_rate = envelope
    best = None
    prev_cost = 0.0
    prev_rate = None
    for st in measured:
        if st is after:  # the baseline: reading the filled cache
            prev_cost = max(1.0 / st.effective_rate - floor / max(st.multiplier, 1.0), 1e-9)
            prev_rate = st.effective_rate
            continue
        if st.kind in _NO_WORK:
            continue
        cost = max(1.0 / st.effective_rate - floor / max(st.multiplier, 1.0), 1e-9)
        added = cost - prev_cost
        st.own_s = max(added, 0.0)
        ratio = (prev_rate / st.effective_rate) if prev_rate else float("inf")
        if best is None or added > best["added_s"]:
            best = {"stage": st, "added_s": added, "ratio": ratio, "rate_before": prev_rate,
                    "rate": st.effective_rate}
        prev_cost, prev_rate = cost, st.effective_rate
    if best is None or best["added_s"] * 1e6 < min_added_us or best["ratio"] < min_ratio:
        return None
    return best


def likely_limit(stages: list[Stage]) -> Optional[Stage]:
    """The stage most likely to limit a pipeline, from what it is (not measured): a Python generator or
    `py_function`, then a sequential map/interleave, then a map that parses records one at a time before a
    `batch`, then a file source."""
    for test in (lambda st: st.kind == "from_generator" or bool(st.py_ops),
                 lambda st: st.kind in ("map", "interleave") and st.parallel is False,
                 lambda st: parses_per_element(st, stages),
                 lambda st: st.kind in ("TFRecordDataset", "TextLineDataset")):
        found = [st for st in stages if test(st)]
        if found:
            return found[0]
    return None


def recommendation(stage: Stage, stages: list[Stage]) -> str:
    """What to do about the bottleneck stage; never advice the pipeline already follows."""
    text = _recommendation(stage, stages)
    if any(s.kind == "cache" for s in stages):  # already cached: do not advise `.cache()`
        text = (text.replace(", cache its output with `.cache()` if it is deterministic and fits,", ",")
                .replace(" and `.cache()` after decoding when the data fits", "")
                .replace(", or cache before shuffling", "")
                .replace("cache the pipeline up to here (`.cache()`) if it is deterministic, or move the work offline",
                         "move the work offline (the pipeline is cached already: this is its first epoch)"))
    return text


def _recommendation(stage: Stage, stages: list[Stage]) -> str:
    has_prefetch = any(s.kind == "prefetch" for s in stages)
    tail = "" if has_prefetch else "; and end the pipeline with `.prefetch(tf.data.AUTOTUNE)` so it overlaps the consumer (TFL102)"
    if stage.kind in ("map", "filter", "flat_map", "interleave") and stage.py_ops:
        base = ("its function runs Python (`tf.py_function`/`numpy_function`), which holds the GIL: rewrite it with "
                "TensorFlow ops or move the work offline (preprocess once and save) (TFL105)")
        if stage.kind == "map" and not stage.parallel:
            base = "parallelize it with `num_parallel_calls=tf.data.AUTOTUNE` (TFL101), and " + base
        return base + tail
    if parses_per_element(stage, stages):
        sequential = (", and parallelize the map with `num_parallel_calls=tf.data.AUTOTUNE` (TFL101)"
                      if not stage.parallel else "")
        return ("it parses the records one at a time (`tf.io.parse_single_example` mapped before `batch`): batch the "
                "serialized records first and parse each batch with `tf.io.parse_example`, one vectorized op per "
                f"batch (TFL107){sequential}" + tail)
    if stage.kind == "map" and not stage.parallel:
        return ("parallelize it with `num_parallel_calls=tf.data.AUTOTUNE` (TFL101), or vectorize it: batch first "
                "and map over whole batches" + tail)
    if stage.kind == "map":
        return ("vectorize it (batch before the map so the function runs once per batch), cache its output "
                "with `.cache()` if it is deterministic and fits, or move the work offline" + tail)
    if stage.kind == "from_generator":
        return ("a Python generator feeds the pipeline one element at a time under the GIL: move the work offline "
                "(write TFRecords once) or build the source from tensors/files" + tail)
    if stage.kind in ("TFRecordDataset", "TextLineDataset"):
        return ("read files in parallel (`interleave(..., num_parallel_calls=tf.data.AUTOTUNE)` or "
                "`num_parallel_reads`) and `.cache()` after decoding when the data fits" + tail)
    if stage.kind == "filter":
        return "vectorize the predicate or filter the data offline" + tail
    if stage.kind == "shuffle":
        return "shuffle filenames or use a smaller buffer, or cache before shuffling" + tail
    return "cache the pipeline up to here (`.cache()`) if it is deterministic, or move the work offline" + tail


def serialized_stats(ds) -> dict[str, Any]:
    from collections import Counter

    from tensorflow.core.framework import graph_pb2

    try:
        gd = graph_pb2.GraphDef.FromString(ds._as_serialized_graph().numpy())
    except Exception as exc:  # noqa: BLE001 - a dataset that cannot be serialized (e.g. from_generator)
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    ops = Counter(n.op for n in gd.node)
    for f in gd.library.function:
        ops.update(n.op for n in f.node_def)
    return {
        "nodes": len(gd.node) + sum(len(f.node_def) for f in gd.library.function),
        "functions": len(gd.library.function),
        "dataset_ops": [n.op for n in gd.node if n.op.endswith("Dataset") or "Dataset" in n.op],
        "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
    }
