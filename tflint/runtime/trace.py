"""Tracing a function for the factory's calls: concrete functions, retracing causes (TFL801), source lines.

Runs in the child. A `tf.function` is called as given. A plain Python callable runs as Python, the way the user
runs it, while a `CallRecorder` watches every `tf.function` it calls (arguments, traces, concrete functions): a
Python driver loop that retraces a step on Python ints is reported as retracing of that step, not as a loop
unrolled into a graph of our making. Only a plain callable that calls no `tf.function` at all is wrapped in
`tf.function` to get a graph to inspect (and the report says so).
"""
from __future__ import annotations

import ast
import inspect
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .child import UserCodeError, first_line, user_traceback

_LIB_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_TFLINT_DIR = str(Path(__file__).resolve().parent.parent)
_STDLIB = os.path.dirname(os.__file__)


def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    if any(m in filename for m in _LIB_MARKERS):
        return False
    if filename.startswith(_TFLINT_DIR) or filename.startswith(_STDLIB):
        return False
    return True


def user_frame(frames) -> Optional[tuple[str, int]]:
    """The innermost frame of user code in a list of (filename, lineno)-like frames (outermost first)."""
    for fr in reversed(list(frames)):
        filename = getattr(fr, "filename", None) or fr[0]
        lineno = getattr(fr, "lineno", None) or fr[1]
        if is_user_file(filename):
            return (str(Path(filename).resolve()), int(lineno))
    return None


def op_location(op) -> Optional[tuple[str, int]]:
    try:
        return user_frame(op.traceback)
    except Exception:  # noqa: BLE001 - ops without a traceback
        return None


def _graph_operations(func_graph):
    """(function name or "" for the main graph, op) over the graph and every function it calls (nested
    tf.functions, cond/while branches)."""
    seen: set[int] = set()
    todo = [(func_graph, "")]
    while todo:
        graph, gname = todo.pop()
        if id(graph) in seen:
            continue
        seen.add(id(graph))
        for op in graph.get_operations():
            yield gname, op
        for fname, fobj in getattr(graph, "_functions", {}).items():
            sub = getattr(fobj, "graph", None)
            if sub is not None:
                todo.append((sub, fname))


# ops that pull tf.data elements inside a graph: `next(iterator)` on an iterator passed in, and what AutoGraph makes
# of `for x in dataset` in a tf.function (a `reduce` over the dataset, or a loop on an iterator's optional)
ITERATOR_OPS = frozenset({"IteratorGetNext", "IteratorGetNextAsOptional", "IteratorGetNextSync", "ReduceDataset"})


def iterator_ops(func_graph) -> list[Any]:
    """The ops of a graph (and the functions it calls) that fetch a tf.data element inside the graph."""
    return [op for _, op in _graph_operations(func_graph) if op.type in ITERATOR_OPS]


def source_map(func_graph) -> dict[tuple[str, str], tuple[str, int]]:
    """{(function name or "" for the main graph, node name): (file, line)} over the graph and every function it
    calls, from the ops' creation tracebacks."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for gname, op in _graph_operations(func_graph):
        loc = op_location(op)
        if loc:
            out[(gname, op.name)] = loc
    return out


_TRACE_ENTRY = ("func_graph.py", "func_graph_from_py_func")  # where tracing enters the user's function


def traced_user_frames(op) -> list[tuple[str, int]]:
    """The user's frames (innermost first) that created `op` while its function was being traced: the frames
    outside the trace (a Python driver that called the tf.function) are not part of the graph's making."""
    try:
        frames = list(op.traceback)
    except Exception:  # noqa: BLE001 - ops without a traceback
        return []
    out = []
    for fr in reversed(frames):
        filename, name = getattr(fr, "filename", None) or fr[0], getattr(fr, "name", "")
        if filename.endswith(_TRACE_ENTRY[0]) and name == _TRACE_ENTRY[1]:
            break
        if is_user_file(filename):
            out.append((str(Path(filename).resolve()), int(getattr(fr, "lineno", None) or fr[1])))
    return out


class OpMap:
    """{(function name or "" for the main graph, node name): what `where(op)` says of the op}, computed per op when
    asked, as `source_map`/`loop_map` would hold it: reading an op's creation traceback is the costly part, a graph
    has hundreds of ops, and a few of them have findings."""

    def __init__(self, func_graph, where) -> None:
        self._ops: dict[tuple[str, str], Any] = {}
        self._by_name: dict[str, list[Any]] = {}
        for gname, op in _graph_operations(func_graph):
            self._ops.setdefault((gname, op.name), op)
            self._by_name.setdefault(op.name, []).append(op)
        self._where = where
        self._cache: dict[int, Optional[tuple[str, int]]] = {}

    def _of(self, op) -> Optional[tuple[str, int]]:
        if id(op) not in self._cache:
            self._cache[id(op)] = self._where(op)
        return self._cache[id(op)]

    def get(self, key: tuple[str, str]) -> Optional[tuple[str, int]]:
        op = self._ops.get(key)
        return self._of(op) if op is not None else None

    def first_named(self, name: str) -> Optional[tuple[str, int]]:
        """The first op of that name, in any function, that has a location (graph order)."""
        for op in self._by_name.get(name, ()):
            loc = self._of(op)
            if loc:
                return loc
        return None


def loop_of_op(op, loops: "LoopIndex") -> Optional[tuple[str, int]]:
    """The user's `for`/`while` line that ran while `op` was created (see loop_map)."""
    for frame in traced_user_frames(op):
        loop = loops.loop_at(frame)
        if loop:
            return loop
    return None


def loop_map(func_graph, loops: "LoopIndex") -> dict[tuple[str, str], tuple[str, int]]:
    """{(function name, node name): the user's `for`/`while` line} for the ops that a loop of the user's code ran
    while the function was traced (in the line that created the op or in a caller inside the trace). An op
    repeated without one (the layers of a Keras `Sequential`) was not unrolled from a loop of the user's."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for gname, op in _graph_operations(func_graph):
        for frame in traced_user_frames(op):
            loop = loops.loop_at(frame)
            if loop:
                out[(gname, op.name)] = loop
                break
    return out


class LoopIndex:
    """`for`/`while` statements of the user's files, to point an unrolled loop at its loop line."""

    def __init__(self) -> None:
        self._cache: dict[str, list[tuple[int, int, int]]] = {}

    def loop_at(self, loc: tuple[str, int]) -> Optional[tuple[str, int]]:
        file, line = loc
        if file not in self._cache:
            spans = []
            try:
                tree = ast.parse(Path(file).read_text(encoding="utf-8"))
                for node in ast.walk(tree):
                    if isinstance(node, (ast.For, ast.While, ast.comprehension)):
                        target = node if not isinstance(node, ast.comprehension) else node.iter
                        start = target.lineno if hasattr(target, "lineno") else 0
                        body = getattr(node, "body", None)
                        end = getattr(node, "end_lineno", None) or max(
                            (getattr(b, "end_lineno", start) for b in (body or [])), default=start)
                        spans.append((start, end, start))
            except (OSError, SyntaxError, ValueError):
                pass
            self._cache[file] = spans
        inner = [s for s in self._cache[file] if s[0] <= line <= s[1]]
        if not inner:
            return None
        best = max(inner, key=lambda s: s[0])
        return (file, best[2])


def _describe_value(value) -> tuple:
    import tensorflow as tf

    if isinstance(value, (tf.Tensor, tf.Variable)) or hasattr(value, "dtype") and hasattr(value, "shape"):
        try:
            shape = tuple(value.shape.as_list()) if hasattr(value.shape, "as_list") else tuple(value.shape)
        except ValueError:
            shape = None
        kind = "variable" if isinstance(value, tf.Variable) else "tensor"
        if not isinstance(value, (tf.Tensor, tf.Variable)):
            kind = "array"
        return (kind, str(getattr(value.dtype, "name", value.dtype)), shape)
    if isinstance(value, (bool, int, float, str, type(None))):
        return ("python", type(value).__name__, value)
    if isinstance(value, (list, tuple, dict)):
        return ("python", type(value).__name__, repr(value)[:60])
    return ("object", type(value).__name__, id(value))


def _show(desc: tuple) -> str:
    kind, typ, v = desc
    if kind == "python":
        return f"{v!r}" if not isinstance(v, str) or typ == "str" else v
    if kind in ("tensor", "array", "variable"):
        return f"{typ}{list(v) if v is not None else '[?]'}"
    return f"a {typ}"


@dataclass
class TraceResult:
    fn: Any
    name: str
    wrapped: bool  # a plain callable we wrapped in tf.function
    calls: int
    traces: int
    concrete: list[Any] = field(default_factory=list)  # one per distinct trace, in order
    causes: list[dict[str, Any]] = field(default_factory=list)  # per retrace: call index, argument, before/after
    def_location: Optional[tuple[str, int]] = None


def is_tf_function(fn) -> bool:
    return hasattr(fn, "get_concrete_function") and hasattr(fn, "experimental_get_tracing_count")


def _def_location(py) -> Optional[tuple[str, int]]:
    try:
        src_file = inspect.getsourcefile(inspect.unwrap(py))
        lines, line = inspect.getsourcelines(inspect.unwrap(py))
    except (OSError, TypeError):
        return None
    for offset, text in enumerate(lines):  # point at the `def`, not at its decorators
        if text.lstrip().startswith(("def ", "async def ")):
            line += offset
            break
    return (str(Path(src_file).resolve()), line) if src_file else None


@dataclass
class _Call:
    args: tuple
    kwargs: dict
    traces: int  # how many traces this call caused
    concrete: Any = None
    site: Optional[tuple[str, int]] = None  # the user's line that made the call
    seconds: float = 0.0  # wall time of the call (tracing included when it traced)


_UNTRACED = _Call((), {}, 0)  # CallRecorder(keep_arguments=False): every call that did not trace


def _result(fn, name: str, wrapped: bool, log: list[_Call]) -> TraceResult:
    """A TraceResult from the calls of one tf.function: traces, retrace causes, one concrete function per trace."""
    py = getattr(fn, "python_function", fn)
    try:
        sig = inspect.signature(py)
    except (TypeError, ValueError):
        sig = None
    result = TraceResult(fn, name, wrapped, len(log), 0, def_location=_def_location(py))
    traced_calls: list[dict[str, tuple]] = []
    seen_concrete: set[str] = set()
    for i, call in enumerate(log, start=1):
        cf = call.concrete
        if cf is not None and cf.name not in seen_concrete:
            seen_concrete.add(cf.name)
            result.concrete.append(cf)
        if call.traces:
            bound = _bind(sig, call.args, call.kwargs)  # only a call that traced is compared
            result.traces += call.traces
            if traced_calls:
                cause = _cause(i, traced_calls, bound)
                if call.site:
                    cause["site"] = list(call.site)
                result.causes.append(cause)
            traced_calls.append(bound)
    return result


def run_calls(fn, calls: list[tuple[tuple, dict]]) -> TraceResult:
    """Call a tf.function (a plain callable is wrapped in one) for each of `calls`."""
    import tensorflow as tf

    wrapped = False
    original = fn
    if not is_tf_function(fn):
        fn = tf.function(fn)
        wrapped = True
    py = getattr(fn, "python_function", fn)
    name = getattr(original if wrapped else py, "__qualname__", None) or type(original).__name__
    log: list[_Call] = []
    for i, (args, kwargs) in enumerate(calls, start=1):
        before = fn.experimental_get_tracing_count()
        try:
            fn(*args, **kwargs)
            cf = fn.get_concrete_function(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            raise UserCodeError(
                f"calling `{name}` (call {i} of {len(calls)}) raised {type(exc).__name__}: {first_line(exc)}",
                user_traceback(exc)) from None
        log.append(_Call(args, kwargs, fn.experimental_get_tracing_count() - before, cf))
    return _result(fn, name, wrapped, log)


class CallRecorder:
    """While active, records every call of every `tf.function` made from eager (Python) code: its arguments,
    how many traces it caused, the concrete function it ran and the user's line that called it. Calls made while
    tracing another function are part of that graph and are not recorded."""

    def __init__(self, on_call=None, keep_arguments: bool = True) -> None:
        """`on_call(fn, call, n, seconds)`, when given, runs after each recorded call (`n`: that function's calls
        so far; `seconds`: the call's wall time) and may raise to stop the caller (`tflint run --steps`). With
        `keep_arguments=False` (a long run) only the first call and the calls that traced keep their arguments,
        call site and time; the others are one shared `_Call` (counted; their time goes to `on_call`), so the
        tensors they were given are not kept alive."""
        self.logs: dict[int, tuple[Any, list[_Call]]] = {}  # id(function) -> (function, calls), in first-call order
        self._cls = None
        self._original = None
        self._on_call = on_call
        self._keep = keep_arguments

    def __enter__(self) -> "CallRecorder":
        import tensorflow as tf

        cls = type(tf.function(lambda: None))
        original = cls.__call__
        recorder = self

        def __call__(fn, *args, **kwargs):
            if not tf.executing_eagerly():
                return original(fn, *args, **kwargs)
            before = fn.experimental_get_tracing_count()
            t0 = time.perf_counter()
            out = original(fn, *args, **kwargs)
            seconds = time.perf_counter() - t0
            traced = fn.experimental_get_tracing_count() - before
            entry = recorder.logs.get(id(fn))
            if traced or entry is None or recorder._keep:
                concrete = None
                if traced or entry is None:  # a call that did not trace runs a graph already recorded
                    try:
                        concrete = fn.get_concrete_function(*args, **kwargs)
                    except Exception:  # noqa: BLE001 - arguments get_concrete_function cannot take: still a call
                        pass
                call = _Call(args, kwargs, traced, concrete, user_frame(_stack()), seconds)
                if entry is None:
                    entry = recorder.logs[id(fn)] = (fn, [])
            else:
                call = _UNTRACED  # one shared record: a million steps cost a million references, no more
            log = entry[1]
            log.append(call)
            if recorder._on_call is not None:
                recorder._on_call(fn, call, len(log), seconds)
            return out

        self._cls, self._original = cls, original
        cls.__call__ = __call__
        return self

    def __exit__(self, *exc) -> None:
        if self._cls is not None:
            self._cls.__call__ = self._original

    def results(self) -> list[TraceResult]:
        out = []
        for fn, log in self.logs.values():
            py = getattr(fn, "python_function", fn)
            name = getattr(py, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
            out.append(_result(fn, name, False, log))
        return out


def _stack():
    import traceback

    return [(f.filename, f.lineno) for f in traceback.extract_stack()[:-2]]


def observe_calls(fn, calls: list[tuple[tuple, dict]]) -> tuple[list[TraceResult], bool]:
    """Run the factory's calls the way the user runs them. Returns (one TraceResult per tf.function called, whether
    `fn` itself is a plain Python driver). A plain callable that calls no tf.function is wrapped (run_calls)."""
    if is_tf_function(fn):
        return [run_calls(fn, calls)], False
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    with CallRecorder() as rec:
        for i, (args, kwargs) in enumerate(calls, start=1):
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise UserCodeError(
                    f"calling `{name}` (call {i} of {len(calls)}) raised {type(exc).__name__}: {first_line(exc)}",
                    user_traceback(exc)) from None
    found = rec.results()
    if found:
        return found, True
    return [run_calls(fn, calls)], False


def _bind(sig, args, kwargs) -> dict[str, tuple]:
    if sig is not None:
        try:
            ba = sig.bind(*args, **kwargs)
            return {k: _describe_value(v) for k, v in ba.arguments.items()}
        except TypeError:
            pass
    out = {f"argument {i + 1}": _describe_value(v) for i, v in enumerate(args)}
    out.update({k: _describe_value(v) for k, v in kwargs.items()})
    return out


def _cause(call_index: int, previous: list[dict[str, tuple]], now: dict[str, tuple]) -> dict[str, Any]:
    """Why call `call_index` traced again: the arguments that differ from the closest earlier trace."""
    best, best_diff = None, None
    for prev in previous:
        diff = [k for k in set(prev) | set(now) if prev.get(k) != now.get(k)]
        if best_diff is None or len(diff) < len(best_diff):
            best, best_diff = prev, diff
    assert best is not None and best_diff is not None
    changes = []
    for k in sorted(best_diff):
        a, b = best.get(k), now.get(k)
        kind = "other"
        if a and b and a[0] == "python" and b[0] == "python":
            kind = "python-value"
        elif a and b and a[0] == b[0] and a[0] in ("tensor", "array", "variable") and a[1] == b[1] and a[2] != b[2]:
            kind = "shape"
        elif a and b and a[0] in ("tensor", "array") and b[0] in ("tensor", "array") and a[1] != b[1]:
            kind = "dtype"
        elif a and b and a[0] == "object" and b[0] == "object":
            kind = "python-object"
        changes.append({"argument": k, "kind": kind, "before": _show(a) if a else "absent",
                        "after": _show(b) if b else "absent"})
    return {"call": call_index, "changes": changes}


_SHAREABLE = {"python-value", "shape", "python-object"}


def call_sites(sites: list, home: Optional[tuple[str, int]] = None) -> str:
    """" (called from line 157)" for the user's lines that made these calls ("file.py:157" outside `home`'s file;
    at most three lines), or "" when no call site was recorded (a tf.function the factory returned is called by
    inspect itself)."""
    shown = []
    for site in sites:
        if not site:
            continue
        file, line = site[0], int(site[1])
        text = f"line {line}" if home and Path(file) == Path(home[0]) else f"{Path(file).name}:{line}"
        if text not in shown:
            shown.append(text)
    if not shown:
        return ""
    return " (called from " + ", ".join(shown[:3]) + (", …" if len(shown) > 3 else "") + ")"


def retracing_message(tr: TraceResult) -> Optional[tuple[str, dict[str, Any]]]:
    """TFL801's message, or None when every retrace was unavoidable (a dtype change) or there was none."""
    shareable = [c for c in tr.causes if any(ch["kind"] in _SHAREABLE for ch in c["changes"])]
    if not shareable:
        return None
    by_arg: dict[str, list[dict[str, Any]]] = {}
    for c in shareable:
        for ch in c["changes"]:
            if ch["kind"] in _SHAREABLE:
                by_arg.setdefault(ch["argument"], []).append({"call": c["call"], **ch})
    sites = {c["call"]: c.get("site") for c in shareable}
    parts = []
    advice = []
    for arg, chs in by_arg.items():
        kind = chs[0]["kind"]
        values = [chs[0]["before"]] + [c["after"] for c in chs]
        shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
        calls = ", ".join(str(c["call"]) for c in chs[:6]) + (", …" if len(chs) > 6 else "")
        calls += call_sites([sites.get(c["call"]) for c in chs], tr.def_location)
        if kind == "python-value":
            parts.append(f"`{arg}` is a Python value that changed ({shown}) at call {calls}")
            advice.append(f"pass `{arg}` as a tensor (`tf.constant(...)`), which traces once for every value "
                          "(static counterpart: TFL202)")
        elif kind == "shape":
            parts.append(f"`{arg}` changed shape ({shown}) at call {calls}")
            advice.append(f"give `{arg}` a relaxed shape (`input_signature=[tf.TensorSpec([None, ...])]` or "
                          "`reduce_retracing=True`)")
        else:
            parts.append(f"`{arg}` is a Python object that was a new one ({shown}) at call {calls}")
            advice.append(f"reuse the same `{arg}` object or pass its tensors instead")
    msg = (f"`{tr.name}` was traced {tr.traces} times for {tr.calls} calls: " + "; ".join(parts) + ". Each trace "
           "costs tracing time and a new graph; " + "; ".join(dict.fromkeys(advice)))
    return msg, {"traces": tr.traces, "calls": tr.calls, "causes": tr.causes}


def silence_tf_logging() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import absl.logging

        absl.logging.set_verbosity(absl.logging.ERROR)
    except ImportError:  # pragma: no cover
        pass
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    _ = sys  # keep import for callers that patch streams
