"""Helpers shared by rules: spelling AUTOTUNE in the file's own alias, adding an argument to a call, and
deciding whether a mapped function is provably pure TensorFlow."""
from __future__ import annotations

from typing import Optional, Union

import libcst as cst

from ..semantics import Semantics

# Calls whose result depends on hidden state or that act on the outside world: a function that calls one is not
# pure, so running it in parallel may change results (random streams) or effects (printing, Python code).
IMPURE_PREFIXES = (
    "tensorflow.random.", "tensorflow.image.random_", "tensorflow.compat.v1.random", "tensorflow.py_function",
    "tensorflow.numpy_function", "tensorflow.compat.v1.py_func", "tensorflow.print", "tensorflow.Variable",
    "tensorflow.io.write_file", "tensorflow.summary.", "tensorflow.debugging.", "tensorflow.keras.backend.random",
    "keras.random.", "tensorflow.experimental.numpy.random", "tensorflow.data.experimental.", "builtins.print",
    "builtins.open", "builtins.next",
)
PYTHON_FUNCTIONS = frozenset({"tensorflow.py_function", "tensorflow.numpy_function", "tensorflow.compat.v1.py_func",
                              "tensorflow.compat.v1.numpy_function", "tensorflow.compat.v1.py_function"})
RANDOM_PREFIXES = ("tensorflow.random.", "tensorflow.image.random_", "tensorflow.image.stateless_random_",
                   "tensorflow.compat.v1.random", "keras.random.", "tensorflow.keras.backend.random",
                   "tensorflow.experimental.numpy.random")
PURE_BUILTINS = frozenset({"builtins.len", "builtins.range", "builtins.int", "builtins.float", "builtins.isinstance",
                           "builtins.dict", "builtins.tuple", "builtins.list", "builtins.zip", "builtins.min",
                           "builtins.max", "builtins.abs", "builtins.str", "builtins.bool"})
# Tensor methods that are pure
PURE_METHODS = frozenset({"get_shape", "set_shape", "numpy", "astype", "items", "keys", "values", "get"})


def autotune(sem: Semantics, target_version: tuple[int, int]) -> Optional[str]:
    """`tf.data.AUTOTUNE` as this file spells it (an existing `AUTOTUNE` name first), or
    `tf.data.experimental.AUTOTUNE` for targets older than 2.4; None if no import allows spelling it."""
    names = sem.names
    if target_version < (2, 4):
        return names.alias_for("tensorflow.data.experimental.AUTOTUNE")
    best = names.alias_for("tensorflow.data.AUTOTUNE")
    # an existing name bound to the older spelling is the same object; prefer the shorter spelling
    older = names.alias_for("tensorflow.data.experimental.AUTOTUNE")
    if older and "." not in older and (best is None or "." in best):
        return older
    return best


def add_keyword_arg(call: cst.Call, keyword: str, value: Union[str, cst.BaseExpression]) -> cst.Call:
    """`call` with `keyword=value` appended, keeping the call's layout (trailing commas, one arg a line)."""
    expr = cst.parse_expression(value) if isinstance(value, str) else value
    new_arg = cst.Arg(
        value=expr,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        # trailing comma: the new arg goes after it, laid out as the previous ones are
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            between = args[-2].comma.whitespace_after
        else:
            between = call.whitespace_before_args
            if isinstance(between, cst.ParenthesizedWhitespace):
                # same layout as before the first argument, without the comment that may follow `(`
                between = between.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        new_comma = last.comma
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=between))
        args.append(new_arg.with_changes(comma=new_comma))
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(new_arg)
    return call.with_changes(args=args)


def method_call(receiver: cst.BaseExpression, method: str, args: list[Union[str, cst.BaseExpression]]) -> cst.Call:
    """`receiver.method(args...)`."""
    arg_nodes = []
    for i, a in enumerate(args):
        expr = cst.parse_expression(a) if isinstance(a, str) else a
        arg_nodes.append(cst.Arg(expr))
    lpar = getattr(receiver, "lpar", ())
    if lpar:
        # `(a\n .b())` -> `(a\n .b().method())`: keep the parentheses around the whole chain
        inner = receiver.with_changes(lpar=[], rpar=[])
        return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name(method)), args=arg_nodes,
                        lpar=receiver.lpar, rpar=receiver.rpar)
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(method)), args=arg_nodes)


def calls_in_function(sem: Semantics, fn, depth: int = 1) -> list[tuple[cst.Call, Optional[str]]]:
    """Every call inside `fn` (a def or lambda) and, `depth` levels down, in same-file helpers it calls, with
    the call's qualified name (None when it does not resolve)."""
    out: list[tuple[cst.Call, Optional[str]]] = []
    seen: set[int] = set()

    def walk(f, d: int) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        for call in sem.functions.body_nodes(f, cst.Call):
            out.append((call, sem.call_name(call)))
            if d > 0:
                target = sem.functions.resolve_callable(call.func)
                if target is not None:
                    walk(target, d - 1)

    walk(fn, depth)
    return out


def is_pure_tf(sem: Semantics, fn, depth: int = 2) -> bool:
    """True when every call in `fn` (and same-file helpers, `depth` levels) resolves to a TensorFlow or Keras
    op that is not random, not a Python function and not an effect, or to a pure builtin/tensor method."""
    if fn is None:
        return False
    for call, q in calls_in_function(sem, fn, depth):
        if q is None:
            func = call.func
            if sem.functions.resolve_callable(func) is not None:
                continue  # a same-file helper: walked by calls_in_function
            if isinstance(func, cst.Attribute) and func.attr.value in PURE_METHODS:
                continue
            return False
        if any(q.startswith(p) for p in IMPURE_PREFIXES):
            return False
        if q in PURE_BUILTINS:
            continue
        if not sem.names.is_tf(q):
            return False
    return True


def uses_random(sem: Semantics, fn, depth: int = 1) -> Optional[cst.Call]:
    """The first random-op call in `fn` or its same-file helpers, if any."""
    for call, q in calls_in_function(sem, fn, depth):
        if q and any(q.startswith(p) for p in RANDOM_PREFIXES) and "stateless" not in q:
            return call
        if q and q.startswith("keras.layers.Random"):
            return call
    return None


def python_function_call(sem: Semantics, fn, depth: int = 1) -> Optional[cst.Call]:
    for call, q in calls_in_function(sem, fn, depth):
        if q in PYTHON_FUNCTIONS:
            return call
    return None


def method_name(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None
