"""The child side of `tflint run SCRIPT`: `observe_script(payload)`, called through `run_in_child`.

The script runs as `python SCRIPT ARGS` would run it (`runpy.run_path` as `__main__`, its own `sys.argv`,
`sys.path[0]` its folder, the user's environment, stdin/stdout/stderr inherited). TensorFlow is not imported
before the script imports it: an import hook installs the observers when `tensorflow` finishes importing, so a
script that sets `TF_CPP_MIN_LOG_LEVEL` or `CUDA_VISIBLE_DEVICES` before its import behaves as without tflint.

Observers: a `CallRecorder` (every eager call of every `tf.function`, Keras's step functions included: calls,
traces, time in calls that traced, and for each retrace the argument that changed and the user's call site).
`--steps N` stops the script after N calls of the most-called function, `--seconds S` after S seconds, by raising
`StopRun` (a BaseException, like KeyboardInterrupt, so the script's `except Exception` does not swallow it).

Returns a JSON-able report: the outcome (finished, stopped, exited with a status, crashed with the user's
traceback, interrupted), per-function statistics and the raw findings (code, message, file, line) that the parent
turns into `Finding`s.
"""
from __future__ import annotations

import importlib.abc
import io
import json
import os
import runpy
import signal
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

from .trace import is_user_file, iterator_ops, op_location


class StopRun(BaseException):
    """Raised inside the script to stop it at `--steps` / `--seconds`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_FAILURES: list[str] = []  # what tflint could not observe (a TensorFlow whose internals moved), for the report


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `callback()` once, right after the top-level package `name` has finished importing."""

    def __init__(self, name: str, callback) -> None:
        self.name = name
        self.callback = callback
        self.done = False

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name or self.done:
            return None
        self.done = True
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, callback = spec.loader, self.callback

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                try:
                    callback()
                except Exception as exc:  # noqa: BLE001 - never break the script's import: report it instead
                    _FAILURES.append(f"the observers could not be installed: {type(exc).__name__}: {exc}")

        spec.loader = _Loader()
        return spec


_SAMPLE = 2000  # calls that did not trace whose times are kept, per function, for the typical call time


class _Timing:
    __slots__ = ("total", "traced", "sample")

    def __init__(self) -> None:
        self.total = 0.0  # seconds in all calls
        self.traced = 0.0  # seconds in the calls that traced
        self.sample: list[float] = []  # the first calls that did not trace


class Observer:
    """What runs alongside the script: the call recorder and the stop conditions."""

    def __init__(self, steps: Optional[int]) -> None:
        self.steps = steps
        self.recorder = None
        self.iterators: Optional[IteratorWatch] = None
        self.function_calls = 0  # eager tf.function calls so far (a loop that calls none is not a training loop)
        self.timing: dict[int, _Timing] = {}  # id(function) -> time in its calls
        self.tf_version: Optional[str] = None
        self.import_s: Optional[float] = None
        self.fits: list[Any] = []  # fit.FitRecord per `model.fit(dataset)` from the user's code
        self.syncs = None  # hostsync.SyncWatch: tensor values read back to Python by the user's lines
        self._uninstalls: list[Any] = []  # the Keras patches (fit.install), Keras 3's and tf_keras's
        self._t_import = time.perf_counter()

    def start_tensorflow(self) -> None:
        """Called when the script's `import tensorflow` has finished."""
        import tensorflow as tf

        from .trace import CallRecorder

        self.tf_version = tf.__version__
        self.import_s = time.perf_counter() - self._t_import
        self.recorder = CallRecorder(on_call=self._on_call, keep_arguments=False)
        self.recorder.__enter__()
        from . import data

        data.record_sites()
        data.time_generators()
        self.iterators = IteratorWatch(self)
        self.iterators.install()
        from .hostsync import SyncWatch

        self.syncs = SyncWatch()
        self.syncs.install()

    def start_keras(self) -> None:
        """Called when the script's Keras has finished importing: time the steps of `fit` on a tf.data dataset."""
        import keras

        if keras.backend.backend() != "tensorflow":  # pragma: no cover - another backend: nothing of ours runs
            return
        from . import fit

        self._uninstalls.append(fit.install(self.fits))

    def start_tf_keras(self) -> None:
        """Called when the script's `tf_keras` (Keras 2) has finished importing: its `fit` as Keras 3's."""
        from . import fit

        self._uninstalls.append(fit.install(self.fits, flavor="tf_keras"))

    def _on_call(self, fn, call, n: int, seconds: float) -> None:
        self.function_calls += 1
        t = self.timing.get(id(fn))
        if t is None:
            t = self.timing[id(fn)] = _Timing()
        t.total += seconds
        if call.traces:
            t.traced += seconds
        elif len(t.sample) < _SAMPLE:
            t.sample.append(seconds)
        if self.steps is not None and n >= self.steps:
            log = self.recorder.logs.get(id(fn), (None, []))[1] if self.recorder else []
            site = next((c.site for c in log if c.site), None)
            name = _keras_step_name(getattr(fn, "python_function", fn), site) or _plain_name(fn)
            raise StopRun(f"--steps {self.steps}: {n} calls of `{name}`")

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.__exit__(None, None, None)
        if self.iterators is not None:
            self.iterators.uninstall()
        if self.syncs is not None:
            self.syncs.uninstall()
        while self._uninstalls:
            self._uninstalls.pop()()


class _Loop:
    """One consumer of a dataset: the iterators created at one user line from one dataset (a `for` over the
    dataset, once per epoch). Times are summed over the `next()` calls after each iterator's first (the first
    fills buffers and starts threads, and the step after it traces: both are counted apart)."""

    def __init__(self, ds, site, loop_site) -> None:
        self.ds_ref = _weak(ds)
        self.site = site  # where the dataset was created
        self.loop_site = loop_site  # where it was iterated
        self.iterators = 0
        self.nexts = 0  # steady next() calls (each iterator's first two excluded)
        self.wait_s = 0.0  # time inside those next() calls
        self.gap_s = 0.0  # time between the end of one next() and the start of the next: the consumer's step
        self.first_wait_s = 0.0
        self.calls_in_loop = 0  # tf.function calls made between next() calls
        self.stages: Optional[list[dict[str, Any]]] = None
        # a tf.distribute dataset: `wait_s` is the time its iterator waited for the pipeline's element (inside
        # next(): the per-device iterators' get_next), `overhead_s` the rest of next(), the distributed iterator's
        # own work (device placement, the end-of-data check), which a faster pipeline would not remove
        self.distributed = False
        self.overhead_s = 0.0


class _IterState:
    __slots__ = ("ref", "loop", "last_end", "calls_at_last", "count", "inner_s")

    def __init__(self, it, loop) -> None:
        self.ref = _weak(it)
        self.loop = loop
        self.last_end: Optional[float] = None
        self.calls_at_last = 0
        self.count = 0
        self.inner_s = 0.0  # a distributed iterator: time in its per-device get_next during the current next()


def _weak(obj):
    import weakref

    try:
        return weakref.ref(obj)
    except TypeError:  # pragma: no cover - not weak-referenceable: keep it
        return lambda: obj


class IteratorWatch:
    """Times every `next()` of the tf.data iterators the script's own code creates (`for x in ds`, `iter(ds)`):
    how long the consumer waited for an element against how long it spent between elements (its step).

    A `tf.distribute` dataset (`strategy.experimental_distribute_dataset(ds)`,
    `distribute_datasets_from_function`) is watched the same way, from its own `__iter__`/`__next__`; inside its
    `next()`, the time its per-device tf.data iterators spend in `get_next` is the wait for the pipeline, and the
    rest is the distributed iterator's own cost (a few hundred µs to a few ms per element even when the data is
    ready), kept apart so that it does not pass for a slow pipeline."""

    def __init__(self, observer: Observer) -> None:
        self.observer = observer
        self.loops: dict[tuple, _Loop] = {}
        self.states: dict[int, _IterState] = {}
        self._restore: list[tuple[Any, str, Any]] = []
        self._inner: Optional[_IterState] = None  # the distributed next() in progress

    def install(self) -> None:
        import tensorflow as tf
        from tensorflow.python.data.ops import dataset_ops, iterator_ops

        from . import data

        watch = self
        ds_cls, it_cls = dataset_ops.DatasetV2, iterator_ops.OwnedIterator
        orig_iter, orig_next = ds_cls.__iter__, it_cls.__next__

        def register(ds, it, caller, pipeline, distributed: bool) -> None:
            if not is_user_file(caller.f_code.co_filename) or not tf.executing_eagerly():
                return
            loop_site = (os.path.abspath(caller.f_code.co_filename), caller.f_lineno)
            site = data.site_of(pipeline) if pipeline is not None else None
            key = (loop_site, site, id(ds))
            loop = watch.loops.get(key)
            if loop is None or loop.ds_ref() is not pipeline:
                loop = watch.loops[key] = _Loop(pipeline, site, loop_site)
                loop.distributed = distributed
            loop.iterators += 1
            watch.states[id(it)] = _IterState(it, loop)

        def __iter__(ds):
            it = orig_iter(ds)
            register(ds, it, sys._getframe(1), ds, False)
            return it

        def timed_next(original, it):
            state = watch.states.get(id(it))
            if state is None or state.ref() is not it:
                return original(it)
            loop = state.loop
            outer, state.inner_s = watch._inner, 0.0
            if loop.distributed:
                watch._inner = state
            t0 = time.perf_counter()
            try:
                out = original(it)
            except StopIteration:
                del watch.states[id(it)]
                raise
            finally:
                watch._inner = outer
            t1 = time.perf_counter()
            calls = watch.observer.function_calls
            wait = min(state.inner_s, t1 - t0) if loop.distributed else t1 - t0
            if state.count < 2:  # the first element, and the first step (it traced): warm-up, counted apart
                loop.first_wait_s += t1 - t0
            else:
                loop.nexts += 1
                loop.wait_s += wait
                loop.overhead_s += (t1 - t0) - wait
                loop.gap_s += t0 - state.last_end
                loop.calls_in_loop += calls - state.calls_at_last
            state.count += 1
            state.last_end = t1
            state.calls_at_last = calls
            return out

        def __next__(it):
            return timed_next(orig_next, it)

        self._restore = [(ds_cls, "__iter__", orig_iter), (it_cls, "__next__", orig_next)]
        ds_cls.__iter__ = __iter__
        it_cls.__next__ = __next__
        try:
            self._install_distributed(register, timed_next)
        except (ImportError, AttributeError, KeyError) as exc:  # internals moved: plain loops are still timed
            _FAILURES.append(f"tf.distribute datasets are not watched: {type(exc).__name__}: {exc}")

    def _install_distributed(self, register, timed_next) -> None:
        """`for batch in strategy.experimental_distribute_dataset(ds)`: the distributed dataset's `__iter__` and
        its iterator's `__next__`, and (during that `next()`) the per-device iterators' `get_next`."""
        from tensorflow.python.data.ops import iterator_ops
        from tensorflow.python.distribute import input_lib

        watch = self

        def make_iter(original):
            def __iter__(dds):
                it = original(dds)
                pipeline = getattr(dds, "_original_dataset", None)  # experimental_distribute_dataset(ds)
                if pipeline is None:  # distribute_datasets_from_function: the first worker's dataset
                    made = getattr(dds, "_datasets", None)
                    pipeline = made[0] if isinstance(made, (list, tuple)) and made else None
                register(dds, it, sys._getframe(1), pipeline, True)
                return it

            return __iter__

        def make_inner(original):
            def get_next(it, *args, **kwargs):
                state = watch._inner
                if state is None:
                    return original(it, *args, **kwargs)
                t0 = time.perf_counter()
                try:
                    return original(it, *args, **kwargs)
                finally:
                    state.inner_s += time.perf_counter() - t0

            return get_next

        orig_dnext = input_lib.DistributedIteratorBase.__next__

        def dist_next(it):
            return timed_next(orig_dnext, it)

        patches = [(cls, "__iter__", make_iter(vars(cls)["__iter__"]))
                   for cls in (input_lib.DistributedDataset, input_lib.DistributedDatasetsFromFunction)]
        patches.append((input_lib.DistributedIteratorBase, "__next__", dist_next))
        # the per-device fetch: OwnedIterator.get_next_as_optional (finite datasets) or _next_internal (endless)
        patches += [(iterator_ops.OwnedIterator, name, make_inner(vars(iterator_ops.OwnedIterator)[name]))
                    for name in ("get_next_as_optional", "_next_internal")]
        for cls, name, hooked in patches:
            self._restore.append((cls, name, vars(cls)[name]))
            setattr(cls, name, hooked)

    def uninstall(self) -> None:
        for cls, name, original in self._restore:
            setattr(cls, name, original)
        self._restore = []


class RunProgress:
    """`tflint run`'s progress line on a terminal, drawn by the child (where the counts are) on stderr while the
    script runs: elapsed time, tf.function calls, and the `--steps`/`--seconds` goal. Only when stderr is a
    terminal and the parent asked for it (a human report format); erased before the report.

    The script writes to the same terminal, so the line is drawn only once the script has been quiet for a second
    with its last line ended (a Keras progress bar redraws its own line: the two never fight), and erased before
    the script writes again: the terminal's `sys.stdout`/`sys.stderr` are, while the script runs, text streams of
    the same class over the same buffers whose `write` erases the line first. Output written below Python (C++
    logs) can still land beside it."""

    def __init__(self, observer: "Observer", steps: Optional[int], seconds: Optional[float]) -> None:
        import threading

        self.observer, self.steps, self.seconds = observer, steps, seconds
        env = os.environ.get("TFLINT_PROGRESS_DELAY")  # tests set 0 to see the line at once
        self.delay = float(env) if env else 1.0  # and the quiet time the script must have kept
        self._start = time.monotonic()
        self._last_write = self._start
        self._at_line_start = True
        self._shown = 0  # the width of the line on the terminal, 0 when none is shown
        self._drawn = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tflint-run-progress", daemon=True)
        self._swapped: list[tuple[str, Any, Any]] = []

    def start(self) -> "RunProgress":
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            try:
                if not stream.isatty() or type(stream) is not io.TextIOWrapper:
                    continue
                stream.flush()
                mine = _Erasing(stream.buffer, encoding=stream.encoding, errors=stream.errors,
                                line_buffering=stream.line_buffering, write_through=stream.write_through)
            except (AttributeError, ValueError, OSError):
                continue
            mine.progress = self
            setattr(sys, name, mine)
            self._swapped.append((name, stream, mine))
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._erase()
        for name, original, mine in self._swapped:
            try:
                mine.flush()
            except (ValueError, OSError):
                pass
            mine.progress = None
            if getattr(sys, name) is mine:
                setattr(sys, name, original)

    def before_write(self, text: str) -> None:
        with self._lock:
            self._erase()
            self._last_write = time.monotonic()
            if text:
                self._at_line_start = text.endswith("\n")

    def _erase(self) -> None:
        if self._shown:
            _write_stderr("\r" + " " * self._shown + "\r")
            self._shown = 0

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.wait(0.25 if self.delay else 0.02):
            with self._lock:
                if self._at_line_start and time.monotonic() - self._last_write >= self.delay:
                    self._draw()

    def text(self) -> str:
        elapsed = time.monotonic() - self._start
        calls = self.observer.function_calls
        text = f"tflint run: {elapsed:.0f} s"
        if self.seconds:
            text += f" of --seconds {self.seconds:g}"
        text += f", {calls:,} tf.function call{'s' if calls != 1 else ''}"
        if self.steps:
            text += f" (--steps {self.steps})"
        return text + "; Ctrl-C stops the script and reports"

    def _draw(self) -> None:
        text = self.text()
        try:
            columns = os.get_terminal_size(2).columns
        except OSError:
            columns = 0
        text = text[:(columns if columns > 20 else 80) - 1]
        if self._shown and text == self._drawn:
            return
        _write_stderr("\r" + text + " " * max(0, self._shown - len(text)))
        self._shown = max(len(text), self._shown)
        self._drawn = text


def _write_stderr(text: str) -> None:
    try:
        os.write(2, text.encode("utf-8", "replace"))
    except OSError:  # pragma: no cover - the terminal went away
        pass


class _Erasing(io.TextIOWrapper):
    """A terminal's text stream whose writes erase `tflint run`'s progress line first (RunProgress)."""

    progress: Optional[RunProgress] = None

    def write(self, text):  # type: ignore[override]
        progress = self.progress
        if progress is not None:
            progress.before_write(text)
        return super().write(text)

    def __del__(self) -> None:  # flushed, never closed: the buffer under it is the original stream's
        try:
            self.flush()
        except (ValueError, OSError):
            pass


def _plain_name(fn) -> str:
    py = getattr(fn, "python_function", fn)
    return getattr(py, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _arm_timer(seconds: Optional[float]):
    """Raise StopRun in the main thread after `seconds` (SIGALRM: it also interrupts a sleep). Returns a disarm."""
    if not seconds:
        return lambda: None
    if hasattr(signal, "setitimer"):
        def on_alarm(signum, frame):
            raise StopRun(f"--seconds {seconds:g}")

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)

        def disarm() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

        return disarm
    import _thread  # pragma: no cover - Windows: a KeyboardInterrupt, reported as the --seconds stop
    import threading

    timer = threading.Timer(seconds, _thread.interrupt_main)
    timer.daemon = True
    timer.start()
    return timer.cancel


def script_traceback(exc: BaseException, script: str) -> str:
    """The traceback Python would print for an uncaught exception, from the script's first frame on (no runpy,
    no tflint frames)."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = str(Path(__file__).resolve().parent.parent)
    start = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == script), 0)
    kept = [f for f in frames[start:] if not f.filename.startswith(here)]
    lines = ["Traceback (most recent call last):"]
    lines += [ln.rstrip("\n") for ln in traceback.format_list(kept)]
    lines += [ln.rstrip("\n") for ln in traceback.format_exception_only(type(exc), exc)]
    return "\n".join(lines)


def _crash_site(exc: BaseException) -> Optional[tuple[str, int]]:
    site = None
    for f in traceback.extract_tb(exc.__traceback__):
        if is_user_file(f.filename):
            site = (os.path.abspath(f.filename), f.lineno)
    return site


def observe_script(payload: dict[str, Any]) -> dict[str, Any]:
    script = os.path.abspath(payload["script"])
    argv = [payload.get("argv0") or payload["script"], *payload.get("args", [])]  # a notebook: its own path
    steps = payload.get("steps")
    seconds = payload.get("seconds")
    # the script sees its own environment: PYTHONPATH as the user had it (tflint is already imported)
    original = payload.get("pythonpath")
    if original is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = original
    control = payload.get("control")
    if control and payload.get("gate"):  # a configuration to validate first: the script waits for the parent's go
        message = read_control(control, CONTROL_WAIT_S)
        if not (message or {}).get("go"):
            return {"aborted": True}
    obs = Observer(steps)
    hook = _AfterImport("tensorflow", obs.start_tensorflow)
    keras_hook = _AfterImport("keras", obs.start_keras)
    if "tensorflow" in sys.modules:  # pragma: no cover - the worker does not import it
        obs.start_tensorflow()
    else:
        sys.meta_path.insert(0, hook)
    if "keras" in sys.modules:  # pragma: no cover
        obs.start_keras()
    else:
        sys.meta_path.insert(0, keras_hook)
    tf_keras_hook = _AfterImport("tf_keras", obs.start_tf_keras)
    sys.meta_path.insert(0, tf_keras_hook)
    sys.argv = argv
    sys.path[0] = payload.get("path0") or os.path.dirname(script)
    outcome: dict[str, Any] = {"status": "finished", "exit_code": 0}
    t0 = time.perf_counter()
    progress = RunProgress(obs, steps, seconds).start() if payload.get("progress") and os.isatty(2) else None
    disarm = _arm_timer(seconds)
    try:
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            disarm()
            if progress is not None:  # erased before anything else is written: a traceback, the report
                progress.stop()
    except StopRun as stop:
        outcome = {"status": "stopped", "reason": stop.reason, "exit_code": None}
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            outcome = {"status": "finished", "exit_code": 0}
        else:
            if not isinstance(code, int):
                print(code, file=sys.stderr)  # as Python does for sys.exit("message")
                code = 1
            outcome = {"status": "exited", "exit_code": code}
    except KeyboardInterrupt as exc:
        if seconds and not hasattr(signal, "setitimer"):  # pragma: no cover - the Windows --seconds stop
            outcome = {"status": "stopped", "reason": f"--seconds {seconds:g}", "exit_code": None}
        else:
            outcome = {"status": "interrupted", "exit_code": 130, "traceback": script_traceback(exc, script)}
    except BaseException as exc:  # noqa: BLE001 - the script's own failure: reported, with its traceback
        tb = script_traceback(exc, script)
        sys.stdout.flush()
        print(tb, file=sys.stderr, flush=True)  # what Python would have printed, without tflint's frames
        site = _crash_site(exc)
        outcome = {"status": "crashed", "exit_code": 1, "exception": type(exc).__name__,
                   "message": _first_line(exc), "traceback": tb,
                   "file": site[0] if site else None, "line": site[1] if site else None}
    script_s = time.perf_counter() - t0
    obs.stop()
    for h in (hook, keras_hook, tf_keras_hook):
        if h in sys.meta_path:
            sys.meta_path.remove(h)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # pragma: no cover - the script closed its streams
        pass
    given = payload.get("options")
    if given is None and control:  # the parent sends the rules' options while the script runs
        message = read_control(control, CONTROL_WAIT_S)
        if message is None:
            _FAILURES.append("the configuration's options did not arrive from the parent: the defaults were used")
        given = (message or {}).get("options")
    options = {**INPUT_DEFAULTS, **(given or {})}
    t_after = time.perf_counter()
    if obs.fits:  # after the script: the step on batches in memory, the pipeline alone (see fit.py)
        from . import fit

        fit.measure_fits(obs.fits, options)
    after_s = time.perf_counter() - t_after
    report = build_report(obs, script, options)
    report["outcome"] = outcome
    report["script"] = script
    report["argv"] = argv
    graphs_s = report.pop("graphs_s", 0.0)
    report["timings"] = {"script_s": round(script_s, 3), "after_run_s": round(after_s + graphs_s, 3),
                         "graphs_s": graphs_s,
                         "import_tensorflow_s": round(obs.import_s, 3) if obs.import_s is not None else None}
    report["limits"] = {"steps": steps, "seconds": seconds}
    report["observer_errors"] = list(_FAILURES)
    report["tensorflow_import_unfinished"] = hook.done and obs.tf_version is None and not _FAILURES
    return report


CONTROL_WAIT_S = 120.0  # the parent writes its message in well under a second; it may have died


def read_control(path: str, limit: float) -> Optional[dict[str, Any]]:
    """The parent's message (run.write_control), waiting for it at most `limit` seconds; None when it did not come
    (or the parent has gone: the child was re-parented)."""
    parent = os.getppid()
    deadline = time.monotonic() + limit
    while True:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline or os.getppid() != parent:
            return None
        time.sleep(0.005)


def _first_line(exc: BaseException) -> str:
    from .child import first_line

    return first_line(exc)


# ---------------------------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------------------------

# Keras 3's step functions (`TensorFlowTrainer.make_train_function.<locals>...`), Keras 2's as tf_keras
# (`Model.make_train_function.<locals>.train_function`)
_KERAS_MARKERS = ("Trainer.", "trainer.", "Model.make_train_function", "Model.make_test_function",
                  "Model.make_predict_function")
# TFL801 in a run needs this many retraces of one function: a single one (the smaller last batch of an epoch, a
# `training=False` evaluation call) costs one trace for the whole run
RUN_MIN_RETRACES = 2


def _keras_step_name(py, site: Optional[tuple[str, int]]) -> Optional[str]:
    """`Keras train step (model.fit)` for the step functions Keras makes in fit/evaluate/predict."""
    qual = getattr(py, "__qualname__", "") or ""
    module = getattr(py, "__module__", "") or ""
    if not (module.startswith("keras") or module.startswith("tf_keras")) or not any(m in qual for m in _KERAS_MARKERS):
        return None
    method = None
    if site is not None:
        try:
            text = Path(site[0]).read_text(encoding="utf-8").splitlines()[site[1] - 1]
        except (OSError, IndexError, UnicodeDecodeError):
            text = ""
        for m in ("fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch"):
            if f".{m}(" in text:
                method = m
                break
    kind = {"fit": "train", "train_on_batch": "train", "evaluate": "test", "test_on_batch": "test"}.get(
        method or "", "predict" if method and method.startswith("predict") else "step")
    return f"Keras {kind} function ({method or 'model'} step)" if kind != "step" else "Keras step function"


def build_report(obs: Observer, script: str, options: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    options = options or {}
    from .trace import retracing_message

    functions: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    if obs.recorder is None:
        return {"tensorflow": None, "functions": [], "graphs": [], "iterators": [], "iterators_in_graph": [],
                "fits": [], "host_syncs": [], "findings": [], "graphs_s": 0.0}
    results = obs.recorder.results()
    logs = list(obs.recorder.logs.values())
    by_code: dict[int, list[int]] = {}
    for i, ((fn, log), tr) in enumerate(zip(logs, results)):
        py = getattr(fn, "python_function", fn)
        first_site = next((c.site for c in log if c.site), None)
        keras = _keras_step_name(py, first_site)
        if keras:
            tr.name = keras
        traced = [c.seconds for c in log if c.traces]
        timing = obs.timing.get(id(fn)) or _Timing()
        typical = statistics.median(timing.sample) if timing.sample else 0.0
        trace_s = sum(max(0.0, s - typical) for s in traced)
        loc = tr.def_location if tr.def_location and is_user_file(tr.def_location[0]) else first_site
        entry = {
            "name": tr.name, "keras": bool(keras), "calls": tr.calls, "traces": tr.traces,
            "file": loc[0] if loc else None, "line": loc[1] if loc else None,
            "call_site": list(first_site) if first_site else None,
            "seconds_in_calls": round(timing.total, 4),
            "seconds_in_traced_calls": round(sum(traced), 4),
            "tracing_s": round(trace_s, 4),
            "retraces": tr.causes,
        }
        functions.append(entry)
        code = getattr(py, "__code__", None)
        if code is not None and not keras:
            by_code.setdefault(id(code), []).append(i)
        msg = retracing_message(tr)
        if msg and len(tr.causes) < RUN_MIN_RETRACES:
            msg = None  # one retrace in a whole run (an epoch's smaller last batch): in the report, not a finding
        if msg:
            text, extra = msg
            sites = sorted({tuple(c["site"]) for c in tr.causes if c.get("site")})
            where = ""
            if sites:
                where = "; called at " + ", ".join(f"{_short(f)}:{ln}" for f, ln in sites[:3]) + (
                    ", …" if len(sites) > 3 else "")
            if trace_s >= 0.001:
                where += f" (about {trace_s:.2f} s spent tracing in this run)"
            text = text.replace(". Each trace costs", f"{where}. Each trace costs", 1)
            findings.append({"code": "TFL801", "message": text, "file": loc[0] if loc else None,
                             "line": loc[1] if loc else None,
                             "extra": {**extra, "sites": [list(s) for s in sites], "tracing_s": round(trace_s, 4)}})
    # the user's tf.functions that fetch tf.data elements inside their graph (`next(iterator)` in the step, `for x
    # in ds` in the function): there is no Python `next()` to time, so no input-wait verdict, and the report says so
    in_graph = []
    for entry, tr in zip(functions, results):
        if entry["keras"] or not tr.concrete:
            continue
        try:
            ops = iterator_ops(tr.concrete[-1].graph)
        except Exception:  # noqa: BLE001 - a graph that cannot be walked: nothing said
            continue
        if ops:
            where = next((loc for loc in map(op_location, ops) if loc), None)
            in_graph.append({"function": entry["name"], "file": entry["file"], "line": entry["line"],
                             "fetch_file": where[0] if where else None, "fetch_line": where[1] if where else None,
                             "note": IN_GRAPH_NOTE})
    # the same Python function wrapped in a new tf.function again and again (tf.function inside a loop)
    for idxs in by_code.values():
        if len(idxs) < 3:
            continue
        group = [functions[i] for i in idxs]
        if group[0]["file"] is None or not is_user_file(group[0]["file"]):
            continue
        traces = sum(g["traces"] for g in group)
        site = group[0]["call_site"]
        shown = f" (called at {_short(site[0])}:{site[1]})" if site else ""
        findings.append({
            "code": "TFL801",
            "message": (f"`{group[0]['name']}` was wrapped in a new tf.function {len(group)} times{shown}, and each "
                        f"new function traced again ({traces} traces in all): a tf.function keeps its traces only "
                        "as long as the object lives; create it once, outside the loop, and call that object"),
            "file": group[0]["file"], "line": group[0]["line"],
            "extra": {"objects": len(group), "traces": traces, "sites": [[group[0]["file"], group[0]["line"]]],
                      "loop_sites": [list(site)] if site else []},
        })
    # the graphs that ran most: Grappler before/after, as `inspect` shows them (hotgraphs.py)
    from .hotgraphs import hot_graphs

    t_graphs = time.perf_counter()
    graphs = hot_graphs(functions, results, findings, options) if options.get("graphs", True) else []
    graphs_s = time.perf_counter() - t_graphs
    iterators = input_report(obs, findings, options)
    from . import fit

    fits = fit.fit_report(obs.fits, findings, _short)
    from .hostsync import sync_report

    step = max(functions, key=lambda f: f["calls"], default=None)
    syncs = sync_report(obs.syncs, step["calls"] if step else 0, step["name"] if step else None, findings, options,
                        _short)
    return {"tensorflow": obs.tf_version, "functions": functions, "graphs": graphs, "iterators": iterators,
            "iterators_in_graph": in_graph, "fits": fits, "host_syncs": syncs, "findings": findings,
            "graphs_s": round(graphs_s, 3)}


INPUT_DEFAULTS = {"input_min_wait_share": 0.5, "input_min_wait_ms": 1.0, "input_min_elements": 5}
IN_GRAPH_NOTE = ("fetches its tf.data elements inside the graph: the wait for them happens inside the function's "
                 "call, where Python cannot time it, so no input-wait verdict (not measured); to have it judged, "
                 "iterate the dataset in Python (`for batch in ds: step(batch)`)")


def input_report(obs: Observer, findings: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
    """Per loop over a dataset: waits against steps, and TFL809 when the loop waited for its input most of the
    time (and long enough per element to matter)."""
    from . import data

    if obs.iterators is None:
        return []
    opts = {**INPUT_DEFAULTS, **options}
    out = []
    for loop in obs.iterators.loops.values():
        ds = loop.ds_ref()
        stages = []
        try:
            stages = data.chain(ds) if ds is not None else []
        except Exception:  # noqa: BLE001 - a dataset whose chain cannot be followed: still timed
            stages = []
        # the loop's time: waiting for the pipeline, the step between elements, and (a distributed dataset) the
        # distributed iterator's own work in next(), which is neither. With Python stages in the pipeline
        # (`from_generator`, `py_function`) the two cannot be told apart: the pipeline's Python holds the GIL while
        # the iterator's own Python waits for it, so where the time lands depends on scheduling, and all of next()
        # counts as waiting for the input
        python_stages = any(st.py_ops or st.kind == "from_generator" for st in stages)
        merged = loop.distributed and python_stages
        wait_s = loop.wait_s + (loop.overhead_s if merged else 0.0)
        overhead_s = 0.0 if merged else loop.overhead_s
        total = wait_s + loop.gap_s + overhead_s
        share = wait_s / total if total > 0 else 0.0
        wait_ms = 1e3 * wait_s / loop.nexts if loop.nexts else 0.0
        step_ms = 1e3 * loop.gap_s / loop.nexts if loop.nexts else 0.0
        overhead_ms = 1e3 * overhead_s / loop.nexts if loop.nexts else 0.0
        entry = {
            "file": loop.site[0] if loop.site else None, "line": loop.site[1] if loop.site else None,
            "loop_file": loop.loop_site[0], "loop_line": loop.loop_site[1], "iterators": loop.iterators,
            "elements": loop.nexts, "wait_s": round(wait_s, 4), "step_s": round(loop.gap_s, 4),
            "first_wait_s": round(loop.first_wait_s, 4), "wait_share": round(share, 3),
            "wait_ms_per_element": round(wait_ms, 3), "step_ms_per_element": round(step_ms, 3),
            "tf_function_calls": loop.calls_in_loop, "distributed": loop.distributed,
            "iterator_ms_per_element": round(overhead_ms, 3) if loop.distributed else None,
            "stages": [{"label": st.label, "kind": st.kind, "file": st.site[0] if st.site else None,
                        "line": st.site[1] if st.site else None, "python": bool(st.py_ops) or st.kind == "from_generator",
                        "parallel": st.parallel} for st in stages],
            "input_bound": False,
        }
        works = loop.calls_in_loop > 0 or step_ms >= 1.0  # a loop that only reads the data is not training
        if (loop.nexts >= int(opts["input_min_elements"]) and works and share >= float(opts["input_min_wait_share"])
                and wait_ms >= float(opts["input_min_wait_ms"])):
            entry["input_bound"] = True
            loc = loop.site or loop.loop_site
            chain_text = " -> ".join(
                st.label + (f" (line {st.site[1]})" if st.site and st.site[0] == loc[0] else "") for st in stages)
            suspect = data.likely_limit(stages)
            if suspect is not None and suspect.site:
                advice = (f"the likely limit is `{suspect.label}` at {_short(suspect.site[0])}:{suspect.site[1]}: "
                          + data.recommendation(suspect, stages))
            elif stages and not any(st.kind == "prefetch" for st in stages):
                advice = "end the pipeline with `.prefetch(tf.data.AUTOTUNE)` so it overlaps the step (TFL102)"
            else:
                advice = "measure its stages with `tflint inspect FILE::FACTORY` (TFL806) to find the slow one"
            own = ""
            if merged:
                own = (" (the distributed iterator's own work counted as waiting: the pipeline's Python stages hold "
                       "the GIL while it runs)")
            elif loop.distributed:
                own = (f" (and {overhead_ms:.1f} ms per element in the distributed iterator's own work, not counted as "
                       "waiting)")
            msg = (f"input-bound: the loop at {_short(loop.loop_site[0])}:{loop.loop_site[1]} waited for this "
                   f"{'distributed ' if loop.distributed else ''}dataset {share:.0%} of the time, {wait_ms:.1f} ms per "
                   f"element in `next()` against {step_ms:.1f} ms of work between elements{own} ({loop.nexts} "
                   "elements): a faster step would not train faster. "
                   + (f"Pipeline: {chain_text}. " if chain_text else "") + advice[0].upper() + advice[1:])
            findings.append({"code": "TFL809", "message": msg, "file": loc[0], "line": loc[1],
                             "extra": {"wait_share": round(share, 3), "wait_ms": round(wait_ms, 3),
                                       "step_ms": round(step_ms, 3), "hint": "." + stages[-1].kind + "(" if stages else None,
                                       "sites": [[st.site[0], st.site[1]] for st in stages if st.site]}})
        out.append(entry)
    return out


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
