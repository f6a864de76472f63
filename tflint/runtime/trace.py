"""Tracing a function for the factory's calls: concrete functions, retracing causes (TFL801), source lines.

Runs in the child. A plain Python callable is wrapped in `tf.function` (and the report says so).
"""
from __future__ import annotations

import ast
import inspect
import os
import sys
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


def source_map(func_graph) -> dict[tuple[str, str], tuple[str, int]]:
    """{(function name or "" for the main graph, node name): (file, line)} over the graph and every function it
    calls (nested tf.functions, cond/while branches), from the ops' creation tracebacks."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    seen: set[int] = set()

    def walk(graph, gname: str) -> None:
        if id(graph) in seen:
            return
        seen.add(id(graph))
        for op in graph.get_operations():
            loc = op_location(op)
            if loc:
                out[(gname, op.name)] = loc
        for fname, fobj in getattr(graph, "_functions", {}).items():
            sub = getattr(fobj, "graph", None)
            if sub is not None:
                walk(sub, fname)

    walk(func_graph, "")
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


def run_calls(fn, calls: list[tuple[tuple, dict]]) -> TraceResult:
    import tensorflow as tf

    wrapped = False
    original = fn
    if not hasattr(fn, "get_concrete_function") or not hasattr(fn, "experimental_get_tracing_count"):
        fn = tf.function(fn)
        wrapped = True
    py = getattr(fn, "python_function", fn)
    name = getattr(original if wrapped else py, "__qualname__", None) or type(original).__name__
    try:
        sig = inspect.signature(py)
    except (TypeError, ValueError):
        sig = None
    def_loc = None
    try:
        src_file = inspect.getsourcefile(inspect.unwrap(py))
        lines, line = inspect.getsourcelines(inspect.unwrap(py))
        for offset, text in enumerate(lines):  # point at the `def`, not at its decorators
            if text.lstrip().startswith(("def ", "async def ")):
                line += offset
                break
        if src_file:
            def_loc = (str(Path(src_file).resolve()), line)
    except (OSError, TypeError):
        pass
    result = TraceResult(fn, name, wrapped, len(calls), 0, def_location=def_loc)
    traced_calls: list[dict[str, tuple]] = []
    traces = 0
    seen_concrete: set[str] = set()
    for i, (args, kwargs) in enumerate(calls, start=1):
        before = fn.experimental_get_tracing_count()
        try:
            fn(*args, **kwargs)
            cf = fn.get_concrete_function(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            raise UserCodeError(
                f"calling `{name}` (call {i} of {len(calls)}) raised {type(exc).__name__}: {first_line(exc)}",
                user_traceback(exc)) from None
        after = fn.experimental_get_tracing_count()
        bound = _bind(sig, args, kwargs)
        if cf.name not in seen_concrete:
            seen_concrete.add(cf.name)
            result.concrete.append(cf)
        if after > before:
            traces += after - before
            if traced_calls:
                result.causes.append(_cause(i, traced_calls, bound))
            traced_calls.append(bound)
    result.traces = traces
    return result


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
    parts = []
    advice = []
    for arg, chs in by_arg.items():
        kind = chs[0]["kind"]
        values = [chs[0]["before"]] + [c["after"] for c in chs]
        shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
        calls = ", ".join(str(c["call"]) for c in chs[:6]) + (", …" if len(chs) > 6 else "")
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
