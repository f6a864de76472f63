"""Input-boundness under Keras `model.fit` (TFL809), the child side of `tflint run`.

`model.fit` fetches its batches inside the graph (Keras 3's train function calls `iterator.get_next()` in a
`tf.function`), so there is no Python `next()` to time as for a custom loop. What is measured instead:

1. during the run, the time of each training step under `fit` (a Keras callback's `on_train_batch_begin` /
   `on_train_batch_end`; the first two steps of each epoch, which fill buffers and trace, are counted apart);
2. after the script has ended (so nothing it prints, returns or writes can change): the same train function on a
   few batches already in memory (`from_generator(batches).cache().repeat()`, the dataset's own element spec, so
   the step does not trace again), with the model's, optimizer's and metrics' variables saved before and put back
   after; and the pipeline alone, pulled from Python with no consumer. The script's stdout and stderr are closed
   to this work (it runs the user's pipeline and step again: a `print` or `tf.print` in them must not show).

`model.fit(generator)` (a Python generator, which Keras 3 wraps in `from_generator` and a prefetch): the generator
cannot be pulled again after the run, so it is wrapped in one that times each of its `next()` during the run (the
generator alone) and keeps its first batches, on which the train function is then timed in memory as above.

The step waits for input `W = S - C` per step (S: median step under fit, C: median step on batches in memory).
TFL809 needs both measurements to agree: W at least half of S (option `min-wait-share`) and `min-wait-ms`, and the
pipeline alone P per step explaining it: P at least W / 2, or P so much slower than C that even perfectly
overlapped the step would wait `min-wait-share` of the time (P * (1 - share) >= C; this one does not depend on the
machine's load staying the same between the run and the measurement after it). Otherwise the step was slower under
`fit` for another reason (the pipeline's threads competing for the CPU, other load). When input-bound, each
prefix of the pipeline is measured as `tflint inspect` does (twice; a stage is named only when both measurements
agree) to name the slowest stage; when the pipeline's source is the user's Python generator (`from_generator`),
whose `next()` was timed during the run (data.time_generators), and that source alone explains the wait, it is
named from those times instead, and the pipeline is pulled after the run only for the batches of the step in
memory (a few seconds less after the run).
"""
from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
import types
from typing import Any, Callable, Optional

from .trace import is_user_file

_SAMPLE = 2000  # steady step times kept per fit for the median
WARMUP_STEPS = 2  # per epoch: the first steps fill buffers (and the very first traces)
PROBE_SECONDS = 2.0  # the pipeline alone, pulled from Python
PROBE_MAX = 20
MEMORY_BATCHES = 8
MEMORY_SECONDS = 0.5  # the train step on batches in memory (at least 5 calls)
MEMORY_MAX_CALLS = 200
STAGE_BUDGET = 4.0  # the per-prefix measurement (two measurements of half each) when a fit is input-bound


# Keras's loop methods that fetch their batches inside a tf.function: the callback hooks that time each batch, the
# model attribute holding the step function, where `callbacks` sits among the positional arguments, and the words
# the report uses for them
METHODS = {
    "fit": {"begin": "on_train_batch_begin", "end": "on_train_batch_end", "epoch": "on_epoch_begin",
            "function": "train_function", "callbacks_at": 5, "step": "train step", "faster": "train"},
    "evaluate": {"begin": "on_test_batch_begin", "end": "on_test_batch_end", "epoch": "on_test_begin",
                 "function": "test_function", "callbacks_at": 6, "step": "test step", "faster": "evaluate"},
    "predict": {"begin": "on_predict_batch_begin", "end": "on_predict_batch_end", "epoch": "on_predict_begin",
                "function": "predict_function", "callbacks_at": 4, "step": "predict step", "faster": "predict"},
}


class FitRecord:
    """One `model.fit(dataset, ...)` or `model.fit(generator, ...)` call from the user's code (or `evaluate`,
    `predict`: `method`)."""

    def __init__(self, model, dataset, site: tuple[str, int], method: str = "fit", flavor: str = "keras") -> None:
        self.method = method
        self.flavor = flavor  # "keras" (Keras 3) or "tf_keras" (Keras 2 as the tf_keras package)
        self.model = model
        self.dataset = dataset  # a tf.data dataset, or None when fit was given a Python generator
        self.site = site
        # a Python generator: its name and `def` line, the seconds each of its `next()` took (measured in the run,
        # on the tf.data thread Keras pulls it from) and the first batches it yielded (for the step in memory)
        self.generator: Optional[dict[str, Any]] = None
        self.generator_times: list[float] = []
        self.generator_batches: list[Any] = []
        self.epochs = 0
        self.epoch_step = 0
        self.steps = 0  # all steps
        self.steady: list[float] = []  # seconds per step after each epoch's warm-up (a sample)
        self.steady_n = 0
        self.steady_s = 0.0
        self.t_begin: Optional[float] = None
        self.measured: dict[str, Any] = {}
        self.arrays = False  # given arrays (NumPy, tensors) that Keras slices and batches into a dataset itself


def install(observer_fits: list[FitRecord], flavor: str = "keras") -> Callable[[], None]:
    """Patch Keras 3's `fit`, `evaluate` and `predict` (TensorFlow backend), or with `flavor="tf_keras"` those of
    Keras 2 as the `tf_keras` package (its `Model`, whose train/test/predict functions also take an iterator), to
    time the steps of every call fed a tf.data dataset, a Python generator or (Keras 3) a PyDataset from the user's
    code. Returns the function that removes the patches."""
    from tensorflow.python.data.ops import dataset_ops

    if flavor == "tf_keras":
        import tf_keras as keras
        from tf_keras.src.engine.training import Model as TensorFlowTrainer
    else:
        import keras
        from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    originals = {m: getattr(TensorFlowTrainer, m) for m in METHODS}

    class _StepTimer(keras.callbacks.Callback):
        """Times each batch of one fit/evaluate/predict call (the hooks of its method, set on the instance)."""

        def __init__(self, record: FitRecord) -> None:
            super().__init__()
            self._supports_tf_logs = True  # never make Keras convert the logs to NumPy for us
            self.record = record
            hooks = METHODS[record.method]
            setattr(self, hooks["epoch"], self._epoch_begin)
            setattr(self, hooks["begin"], self._batch_begin)
            setattr(self, hooks["end"], self._batch_end)

        def _epoch_begin(self, *args, **kwargs):
            self.record.epochs += 1
            self.record.epoch_step = 0

        def _batch_begin(self, batch, logs=None):
            self.record.t_begin = time.perf_counter()

        def _batch_end(self, batch, logs=None):
            rec = self.record
            if rec.t_begin is None:
                return
            dt = time.perf_counter() - rec.t_begin
            rec.t_begin = None
            rec.steps += 1
            rec.epoch_step += 1
            if rec.epoch_step > WARMUP_STEPS:
                rec.steady_n += 1
                rec.steady_s += dt
                if len(rec.steady) < _SAMPLE:
                    rec.steady.append(dt)

    # a PyDataset given to fit (Keras 3): the batches its adapter hands tf.data, timed (id of the PyDataset -> its
    # record, while that fit runs)
    py_datasets: dict[int, FitRecord] = {}
    if flavor == "tf_keras":
        py_dataset_cls: Any = ()  # a `keras.utils.Sequence` is not timed
        adapter_cls = original_iterator = None
    else:
        from keras.src.trainers.data_adapters import py_dataset_adapter

        py_dataset_cls = py_dataset_adapter.PyDataset
        adapter_cls = py_dataset_adapter.PyDatasetAdapter
        original_iterator = adapter_cls._get_iterator

    def _get_iterator(adapter):
        it = original_iterator(adapter)
        rec = py_datasets.get(id(getattr(adapter, "py_dataset", None)))
        return it if rec is None else _timed_generator(it, rec)

    def watched(method: str, model, args: tuple, kwargs: dict):
        original = originals[method]
        at = METHODS[method]["callbacks_at"]
        x = args[0] if args else kwargs.get("x")
        caller = sys._getframe(2)
        given = args[at] if len(args) > at else kwargs.get("callbacks")
        is_generator = isinstance(x, types.GeneratorType)  # what Keras 3 takes for a Python generator
        is_py_dataset = bool(py_dataset_cls) and isinstance(x, py_dataset_cls)
        is_arrays = not isinstance(x, dataset_ops.DatasetV2) and in_memory(x)  # Keras makes the dataset itself
        if (not (isinstance(x, dataset_ops.DatasetV2) or is_generator or is_py_dataset or is_arrays)
                or not is_user_file(caller.f_code.co_filename)
                or not (given is None or isinstance(given, (list, tuple)))):  # a CallbackList of the user's: left alone
            return original(model, *args, **kwargs)
        site = (os.path.abspath(caller.f_code.co_filename), caller.f_lineno)
        record = FitRecord(model, x if isinstance(x, dataset_ops.DatasetV2) else None, site, method, flavor)
        record.arrays = is_arrays
        if is_generator:
            record.generator = _generator_info(x)
            timed = _timed_generator(x, record)
            if args:
                args = (timed, *args[1:])
            else:
                kwargs["x"] = timed
        elif is_py_dataset:
            record.generator = _py_dataset_info(x)
        observer_fits.append(record)
        timer = _StepTimer(record)
        if len(args) > at:  # fit(x, y, batch_size, epochs, verbose, callbacks, ...), evaluate(..., callbacks), ...
            args = (*args[:at], [*(args[at] or []), timer], *args[at + 1:])
        else:
            kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), timer]
        if not is_py_dataset:
            return original(model, *args, **kwargs)
        py_datasets[id(x)] = record
        try:
            return original(model, *args, **kwargs)
        finally:
            py_datasets.pop(id(x), None)

    def fit(model, *args, **kwargs):
        return watched("fit", model, args, kwargs)

    def evaluate(model, *args, **kwargs):
        return watched("evaluate", model, args, kwargs)

    def predict(model, *args, **kwargs):
        return watched("predict", model, args, kwargs)

    for name, patched in (("fit", fit), ("evaluate", evaluate), ("predict", predict)):
        patched.__wrapped__ = originals[name]  # type: ignore[attr-defined]
        setattr(TensorFlowTrainer, name, patched)
    if adapter_cls is not None:
        adapter_cls._get_iterator = _get_iterator

    def uninstall() -> None:
        for name, original in originals.items():
            setattr(TensorFlowTrainer, name, original)
        if adapter_cls is not None:
            adapter_cls._get_iterator = original_iterator

    return uninstall


def in_memory(x) -> bool:
    """`x` is arrays already in memory (a NumPy array or a tensor, or a list, tuple or dict of them)."""
    if isinstance(x, (list, tuple)):
        return bool(x) and all(in_memory(v) for v in x)
    if isinstance(x, dict):
        return bool(x) and all(in_memory(v) for v in x.values())
    return hasattr(x, "shape") and (type(x).__module__ or "").split(".")[0] in ("numpy", "tensorflow")


def _generator_info(gen) -> dict[str, Any]:
    return {"kind": "generator", **_code_site(getattr(gen, "gi_code", None),
                                              getattr(gen, "__name__", None) or "generator")}


def _py_dataset_info(ds) -> dict[str, Any]:
    """A `keras.utils.PyDataset`: its class, the `def` of its `__getitem__`, and how it runs (workers, processes)."""
    getitem = getattr(type(ds), "__getitem__", None)
    return {"kind": "py_dataset", **_code_site(getattr(getitem, "__code__", None), f"{type(ds).__name__}.__getitem__"),
            "workers": getattr(ds, "workers", 1) or 1, "processes": bool(getattr(ds, "use_multiprocessing", False))}


def _code_site(code, name: str) -> dict[str, Any]:
    file = os.path.abspath(code.co_filename) if code is not None else None
    user = bool(file and is_user_file(file))
    return {"name": name, "file": file if user else None, "line": code.co_firstlineno if user else None}


def _timed_generator(gen, record: FitRecord):
    """Yields what `gen` yields, timing each of its `next()`: the time the user's Python takes per batch (for a
    PyDataset, the time its adapter takes to hand over the next batch: `__getitem__`, or the wait on its workers'
    queue). Keras pulls it from a tf.data thread (`from_generator`), so this is the time the step would wait for
    when the input is the slower side. A generator, so that Keras takes it for the user's."""
    while True:
        t0 = time.perf_counter()
        try:
            item = next(gen)
        except StopIteration:
            return
        dt = time.perf_counter() - t0
        if len(record.generator_times) < _SAMPLE:
            record.generator_times.append(dt)
        if len(record.generator_batches) < MEMORY_BATCHES:
            record.generator_batches.append(item)
        yield item


@contextlib.contextmanager
def silenced():
    """Close stdout and stderr (the file descriptors: TensorFlow's C++ logs and `tf.print` too) for a while."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _variables(model) -> list[Any]:
    out, seen = [], set()
    groups = [getattr(model, "variables", [])]
    opt = getattr(model, "optimizer", None)
    if opt is not None:
        groups.append(getattr(opt, "variables", []))
    for m in getattr(model, "metrics", []) or []:
        groups.append(getattr(m, "variables", []))
    for group in groups:
        if callable(group):  # a method in some Keras 2 optimizers
            group = group()
        for v in group:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def _probe_pipeline(ds, batches_only: bool = False) -> tuple[Optional[float], list[Any]]:
    """The pipeline alone: median seconds per element pulled from Python after the first, and a few elements.
    `batches_only`: the elements for the step in memory are what is wanted (the source was timed in the run), so
    it stops when it has them."""
    it = iter(ds)
    try:
        batches = [next(it)]
    except StopIteration:
        return None, []
    times: list[float] = []
    deadline = time.perf_counter() + PROBE_SECONDS
    limit = MEMORY_BATCHES - 1 if batches_only else PROBE_MAX
    while len(times) < limit and (time.perf_counter() < deadline or len(times) < 3):
        t0 = time.perf_counter()
        try:
            b = next(it)
        except StopIteration:
            break
        times.append(time.perf_counter() - t0)
        if len(batches) < MEMORY_BATCHES:
            batches.append(b)
    return (statistics.median(times) if len(times) >= 3 else None), batches


def _generator_spec(batches: list[Any]):
    """The element spec Keras gives a generator's batches (`get_tensor_spec`: dimensions that vary are None), so
    that the train function it traced in the run takes them without tracing again."""
    import tensorflow as tf

    try:
        from keras.src.trainers.data_adapters import data_adapter_utils

        return data_adapter_utils.get_tensor_spec(batches)
    except (ImportError, AttributeError, TypeError, ValueError):  # another Keras: batch dimension relaxed only
        return tf.nest.map_structure(
            lambda a: tf.TensorSpec([None, *tf.convert_to_tensor(a).shape[1:]], tf.convert_to_tensor(a).dtype),
            batches[0])


def _memory_step(model, spec, batches: list[Any], method: str = "fit", flavor: str = "keras") -> Optional[float]:
    """Median seconds of the model's train function (test, predict function for `evaluate`, `predict`) on batches
    already in memory (no input wait). `spec`: the element spec of the dataset the function was traced for."""
    import tensorflow as tf

    fn = getattr(model, METHODS[method]["function"], None)
    if fn is None or not batches:
        return None
    mem = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=spec).cache().repeat()
    strategy = model.distribute_strategy
    dist = mem if isinstance(mem, tf.distribute.DistributedDataset) else strategy.experimental_distribute_dataset(mem)
    it = iter(dist)
    if method == "predict" and flavor == "keras":  # Keras 3's predict loop pulls the batches in Python and hands
        # the function a list of them (Keras 2's predict function takes the iterator, as its train function does)
        per_call = max(1, int(getattr(model, "steps_per_execution", 1) or 1))

        def step():
            return fn([next(it) for _ in range(per_call)])
    else:  # the train and test functions pull from the iterator inside the graph

        def step():
            return fn(it)
    variables = _variables(model)
    saved = [v.numpy() for v in variables]
    try:
        for _ in range(2):  # warm-up: fills the in-memory cache (and traces if the spec differs after all)
            step()
        times: list[float] = []
        start = time.perf_counter()
        while len(times) < MEMORY_MAX_CALLS and (time.perf_counter() - start < MEMORY_SECONDS or len(times) < 5):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    finally:
        for v, value in zip(variables, saved):
            v.assign(value)
    return statistics.median(times) if times else None


def measure_fits(records: list[FitRecord], opts: dict[str, Any]) -> None:
    """After the script has ended: the step on batches in memory, the pipeline alone, and (when input-bound) the
    pipeline's stages, for every fit with enough steady steps. Never raises."""
    from .child import first_line

    min_steps = int(opts.get("input_min_elements", 5))
    for rec in records:
        if rec.arrays:  # nothing of the user's to wait for, and nothing measured: said, no verdict
            rec.measured = {"step_s": statistics.median(rec.steady) if rec.steady else None, "note": ARRAYS_NOTE}
            continue
        if rec.steady_n < min_steps:
            rec.measured = {"note": f"too few steps to judge ({rec.steady_n} after the warm-up of each epoch)"}
            continue
        t0 = time.perf_counter()
        out: dict[str, Any] = {}
        try:
            with silenced():
                source = None
                if rec.generator is not None:  # the generator, timed in the run (it cannot be pulled again)
                    times = rec.generator_times[WARMUP_STEPS:]
                    per_batch = statistics.median(times) if len(times) >= 3 else None
                    batches = rec.generator_batches
                    memory = (_memory_step(rec.model, _generator_spec(batches), batches, rec.method, rec.flavor)
                              if batches else None)
                else:
                    source = _source_in_run(rec.dataset)  # a Python generator source, timed in the run
                    per_batch, batches = _probe_pipeline(rec.dataset, batches_only=source is not None)
                    if source is not None:  # the generator's own time in the run, not a few batches after it
                        per_batch = source["per_batch_s"]
                    memory = _memory_step(rec.model, rec.dataset.element_spec, batches, rec.method, rec.flavor)
                out = {"pipeline_s": per_batch, "memory_step_s": memory, "source_in_run": source is not None}
                verdict = _verdict(rec, out, opts)
                out.update(verdict)
                if verdict["input_bound"] and rec.dataset is not None:
                    if source is not None and _explains(rec, out, source["per_batch_s"], opts):
                        out["stages_measured"] = {"rates": [], "note": None, "slowest": source["slowest"]}
                    else:
                        out["stages_measured"] = _measure_stages(rec.dataset)
        except BaseException as exc:  # noqa: BLE001 - a failure here must not change the run's outcome
            out = {**out, "input_bound": False,
                   "note": f"could not measure after the run: {type(exc).__name__}: {first_line(exc)}"}
        out["measure_s"] = round(time.perf_counter() - t0, 3)
        rec.measured = out


ARRAYS_NOTE = ("on arrays in memory: Keras builds the tf.data dataset itself (slices of the arrays, batched in "
               "memory), so there is no input pipeline of yours to wait for; not judged for input wait (not measured)")


def _source_in_run(ds) -> Optional[dict[str, Any]]:
    """A pipeline whose source is the user's Python generator (`from_generator`), timed while the script ran
    (data.time_generators): the generator's seconds per batch (its median per element times the source elements
    per batch) and the stage to name. None when the source is something else or too few elements were timed.
    The pipeline alone cannot be faster than its source: a sequential Python generator, whatever follows it."""
    from . import data

    stages = data.chain(ds)
    if not stages or stages[0].kind != "from_generator":
        return None
    times = list(data.generator_times(stages[0].obj) or [])[2:]  # the first elements start the generator
    if len(times) < 8:
        return None
    per_element = statistics.median(times)
    st = stages[0]
    return {"per_batch_s": per_element * stages[-1].multiplier,
            "slowest": {"label": st.label, "file": st.site[0] if st.site else None,
                        "line": st.site[1] if st.site else None, "added_us": round(per_element * 1e6, 1),
                        "rate": 1.0 / per_element if per_element > 0 else None, "rate_before": None,
                        "timed": "in the run", "elements": len(times)}}


def _explains(rec: FitRecord, m: dict[str, Any], alone: float, opts: dict[str, Any]) -> bool:
    """Whether `alone` seconds per batch of input (the pipeline, or its source) explain the wait `_verdict`
    measured: at least half of it, or so much slower than the step on batches in memory that even perfectly
    overlapped the step would wait `min-wait-share` of the time."""
    memory, wait = m.get("memory_step_s"), m.get("wait_s")
    if memory is None or wait is None:
        return False
    per_call = max(1, int(getattr(rec.model, "steps_per_execution", 1) or 1))
    min_share = float(opts.get("input_min_wait_share", 0.5))
    alone *= per_call
    return alone >= 0.5 * wait or (alone * (1.0 - min_share) >= memory
                                   and (alone - memory) * 1e3 >= float(opts.get("input_min_wait_ms", 1.0)))


def _verdict(rec: FitRecord, m: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    step = statistics.median(rec.steady)
    memory, pipeline = m.get("memory_step_s"), m.get("pipeline_s")
    per_call = max(1, int(getattr(rec.model, "steps_per_execution", 1) or 1))
    out: dict[str, Any] = {"step_s": step, "steps_per_execution": per_call, "input_bound": False, "note": None}
    if memory is None:
        out["note"] = "the step on batches in memory could not be measured"
        return out
    wait = max(0.0, step - memory)
    share = wait / step if step > 0 else 0.0
    out.update(wait_s=wait, wait_share=share)
    if share < float(opts.get("input_min_wait_share", 0.5)) or wait * 1e3 < float(opts.get("input_min_wait_ms", 1.0)):
        return out
    if pipeline is None:
        out["note"] = ("the generator yielded too few batches to time: no verdict" if rec.generator is not None
                       else "the pipeline alone could not be timed (it ran out): no verdict")
        return out
    # the pipeline alone explains the wait when it needs half as long per step as the wait, or when it is so much
    # slower than the step on batches in memory that the step would wait `min-wait-share` of the time even with
    # input and step perfectly overlapped: the second holds however the machine's load moved between the run and
    # this measurement (the step under fit and the pipeline alone are timed seconds apart)
    if not _explains(rec, {**m, "wait_s": wait}, pipeline, opts):
        out["note"] = (f"steps were slower under fit than on batches in memory, but the pipeline alone delivers a "
                       f"batch in {pipeline * 1e3:.2f} ms: not waiting for input (other load on the machine, or the "
                       "pipeline's threads competing with the step for the CPU)")
        return out
    out["input_bound"] = True
    return out


def _measure_stages(ds) -> dict[str, Any]:
    """Each prefix of the pipeline, measured twice as `tflint inspect` does (repeated, so a short epoch does not
    run out); the slowest stage when both measurements name it."""
    from . import data

    stages = data.chain(ds)
    verdicts = []
    note = None
    for _ in range(2):
        floor = data.measure(stages, 0.3, 1 << 20, STAGE_BUDGET / 2, endless=True)
        note = data.too_few(stages)
        if note:
            break
        verdicts.append(data.bottleneck(stages, 50.0, 1.5, floor))
    found = None
    if not note and len(verdicts) == 2:
        a, b = verdicts
        if a and b and a["stage"] is b["stage"]:
            found = b
        elif a or b:
            note = "the two measurements of its stages disagreed ({} vs {})".format(
                *(v["stage"].label if v else "none" for v in verdicts))
        else:
            note = "no stage stands out"
    out: dict[str, Any] = {"rates": [{"label": s.label, "rate": s.effective_rate or s.rate} for s in stages],
                           "note": note}
    if found:
        st = found["stage"]
        out["slowest"] = {"label": st.label, "file": st.site[0] if st.site else None,
                          "line": st.site[1] if st.site else None, "added_us": round(found["added_s"] * 1e6, 1),
                          "rate": found["rate"], "rate_before": found["rate_before"]}
    return out


def fit_report(records: list[FitRecord], findings: list[dict[str, Any]], short: Callable[[str], str]) -> list[dict[str, Any]]:
    """One entry per fit fed a tf.data dataset or a Python generator; TFL809 at the `fit` line when it waited for
    its input."""
    from . import data

    out = []
    for rec in records:
        m = rec.measured
        stages = []
        try:
            stages = data.chain(rec.dataset) if rec.dataset is not None else []
        except Exception:  # noqa: BLE001 - a chain that cannot be followed: still timed
            stages = []
        ds_site = data.site_of(rec.dataset) if rec.dataset is not None else None
        entry = {
            "method": rec.method,
            "input": ("arrays" if rec.arrays else "dataset" if rec.dataset is not None else
                      (rec.generator or {}).get("kind", "generator")),
            "generator": rec.generator,
            "file": rec.site[0], "line": rec.site[1],
            "dataset_file": ds_site[0] if ds_site else None, "dataset_line": ds_site[1] if ds_site else None,
            "epochs": rec.epochs, "steps": rec.steps, "steady_steps": rec.steady_n,
            "step_ms": _ms(m.get("step_s")), "memory_step_ms": _ms(m.get("memory_step_s")),
            "pipeline_ms_per_batch": _ms(m.get("pipeline_s")), "steps_per_execution": m.get("steps_per_execution", 1),
            "pipeline_timed": "source in the run" if m.get("source_in_run") else "after the run",
            "wait_ms_per_step": _ms(m.get("wait_s")), "wait_share": _round(m.get("wait_share"), 3),
            "input_bound": bool(m.get("input_bound")), "note": m.get("note"),
            "stages": [{"label": st.label, "kind": st.kind, "file": st.site[0] if st.site else None,
                        "line": st.site[1] if st.site else None} for st in stages],
            "slowest_stage": (m.get("stages_measured") or {}).get("slowest"),
            "stages_note": (m.get("stages_measured") or {}).get("note"),
            "measure_s": m.get("measure_s"),
        }
        out.append(entry)
        if not entry["input_bound"]:
            continue
        file = rec.site[0]
        chain_text = " -> ".join(st.label + (f" (line {st.site[1]})" if st.site and st.site[0] == file else "")
                                 for st in stages)
        slowest = entry["slowest_stage"]
        by_label = {st.label: st for st in stages}
        gen = rec.generator
        offline = ("compute the features once before training and build the input with "
                   "`tf.data.Dataset.from_tensor_slices` (or write TFRecords once), then `batch` and "
                   "`prefetch(tf.data.AUTOTUNE)`; per-batch work that must stay goes in a `map` of TensorFlow ops "
                   "with `num_parallel_calls=tf.data.AUTOTUNE` (TFL104)")
        if gen is not None and gen.get("kind") == "py_dataset":
            where = f" (defined at {short(gen['file'])}:{gen['line']})" if gen.get("file") else ""
            how = (f"{gen['workers']} worker {'processes' if gen['processes'] else 'threads'}" if gen["workers"] > 1
                   else "one thread, one batch at a time")
            chain_text = f"the PyDataset `{gen['name']}`{where}, run on {how}"
            more = ("more workers (`workers=`, and `use_multiprocessing=True` for Python that holds the GIL) in its "
                    "constructor" if gen["workers"] > 1 else
                    "`workers=4` in its constructor (threads; `use_multiprocessing=True` for Python that holds the GIL)")
            advice = f"`{gen['name']}` builds the batches in Python while the step waits: give it {more}, or {offline}"
        elif gen is not None:
            where = f" (defined at {short(gen['file'])}:{gen['line']})" if gen.get("file") else ""
            chain_text = f"the Python generator `{gen['name']}`{where}, pulled by Keras from one tf.data thread"
            advice = (f"`{gen['name']}` produces each batch in Python, one at a time under the GIL, while the step "
                      f"waits: {offline}")
        elif slowest and slowest["label"] in by_label:
            st = by_label[slowest["label"]]
            where = f" at {short(slowest['file'])}:{slowest['line']}" if slowest.get("file") else ""
            if slowest.get("timed") == "in the run":  # the Python generator source, timed as the script ran
                advice = (f"its source `{st.label}`{where}, timed during the run, takes {slowest['added_us']:,.0f} µs "
                          "per element in your Python generator, one element at a time under the GIL, enough to "
                          "explain the wait: " + data.recommendation(st, stages))
            else:
                advice = (f"the slowest stage, measured after the run, is `{st.label}`{where} "
                          f"(+{slowest['added_us']:,.0f} µs per element): " + data.recommendation(st, stages))
        else:
            suspect = data.likely_limit(stages)
            why = f" ({entry['stages_note']})" if entry.get("stages_note") else ""
            if suspect is not None and suspect.site:
                advice = (f"the likely limit is `{suspect.label}` at {short(suspect.site[0])}:{suspect.site[1]} "
                          f"(chosen from what the stages are: their measurement named none{why}): "
                          + data.recommendation(suspect, stages))
            else:
                advice = f"measure its stages with `tflint inspect FILE::FACTORY` (TFL806) to find the slow one{why}"
        k = entry["steps_per_execution"]
        per = "step" if k == 1 else f"call of {k} steps"
        words = METHODS[rec.method]
        msg = (f"input-bound: `model.{rec.method}` waited for its input {entry['wait_share']:.0%} of each {per}: "
               f"{entry['step_ms']:.1f} ms per {per} under {rec.method} against {entry['memory_step_ms']:.1f} ms for "
               f"the same {words['step']} on batches already in memory, and the "
               f"{_SOURCE_NEEDS[gen['kind'] if gen else 'source' if m.get('source_in_run') else 'dataset']} "
               f"{entry['pipeline_ms_per_batch']:.1f} ms per batch ({rec.steady_n} steps measured): a faster model "
               f"would not {words['faster']} faster. " + (f"Input: {chain_text}. " if gen is not None else
                                             f"Pipeline: {chain_text}. " if chain_text else "")
               + advice[0].upper() + advice[1:])
        findings.append({"code": "TFL809", "message": msg, "file": file, "line": rec.site[1],
                         "extra": {"wait_share": entry["wait_share"], "wait_ms": entry["wait_ms_per_step"],
                                   "step_ms": entry["step_ms"], "memory_step_ms": entry["memory_step_ms"],
                                   "hint": f".{rec.method}(", "sites": [[st.site[0], st.site[1]] for st in stages if st.site]
                                   + ([[file, rec.site[1]]] if gen is not None else [])}})
    return out


_SOURCE_NEEDS = {"dataset": "pipeline alone needs", "generator": "generator alone needs",
                 "py_dataset": "PyDataset took", "source": "Python generator at its source took (timed in the run)"}


def _ms(seconds: Optional[float]) -> Optional[float]:
    return None if seconds is None else round(seconds * 1e3, 3)


def _round(value: Optional[float], digits: int) -> Optional[float]:
    return None if value is None else round(value, digits)
