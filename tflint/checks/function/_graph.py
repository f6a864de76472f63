"""Helpers shared by the tf.function rules (TFL2xx): where graph code is, how to spell TF names, indentation."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import literal_value
from ...semantics.functions import PYTHON_FUNCTION_OPS
from ...semantics.index import syntax_children

from ...semantics.tensors import Tensors, tensors_of

LIST_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
                           "popitem", "discard", "sort", "reverse"})


INIT_SCOPE = frozenset({"tensorflow.init_scope", "tensorflow.compat.v1.init_scope"})


def graph_function(check, node: cst.CSTNode):
    """The graph function (tf.function, Keras step, traced helper) whose body runs `node`, or None; code under
    an `if tf.executing_eagerly():` guard counts as eager."""
    fn = check.functions.tf_function_of(node)
    if fn is None:
        return None
    for a in check.index.ancestors(node):
        if isinstance(a, cst.FunctionDef) and _python_op_decorated(check, a):
            return None  # `@tf.py_function(Tout=...)`: the body runs as Python, eagerly, on every call
        if a is fn:
            break
        if isinstance(a, cst.If) and _mentions_executing_eagerly(check, a.test):
            return None
        if isinstance(a, cst.With) and any(isinstance(i.item, cst.Call) and
                                           check.names.call_name(i.item) in INIT_SCOPE for i in a.items):
            return None  # `with tf.init_scope():` lifts its body out of the graph: it runs eagerly, once per trace
    return fn


def _python_op_decorated(check, fn: cst.FunctionDef) -> bool:
    """`@tf.py_function(Tout=...)` / `@tf.numpy_function(Tout=...)` (TF >= 2.12 allows them as decorators)."""
    for d in fn.decorators:
        expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if check.names.qualified_name(expr) in PYTHON_FUNCTION_OPS:
            return True
    return False


def _mentions_executing_eagerly(check, expr: cst.CSTNode) -> bool:
    for call in _walk(expr, cst.Call):
        q = check.names.call_name(call) or ""
        if q.endswith(("executing_eagerly", "inside_function")):
            return True
    return False


def _walk(node: cst.CSTNode, typ: type):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, typ):
            yield n
        stack.extend(syntax_children(n))


def walk(node: cst.CSTNode, typ: type):
    return list(_walk(node, typ))


def tensors(check) -> Tensors:
    return tensors_of(check.sem)


def spell(check, qualified: str) -> Optional[str]:
    return check.names.alias_for(qualified)


def indentation(check, node: cst.CSTNode) -> str:
    """The indentation of the line where statement `node` starts."""
    module = check.index.module
    parts = []
    for a in check.index.ancestors(node):
        if isinstance(a, cst.IndentedBlock):
            parts.append(a.indent if a.indent is not None else module.default_indent)
    return "".join(reversed(parts))


def enclosing_ifs(check, node: cst.CSTNode, stop: Optional[cst.CSTNode] = None) -> list[cst.If]:
    out = []
    child = node
    for a in check.index.ancestors(node):
        if a is stop or isinstance(a, (cst.FunctionDef, cst.Lambda)) and stop is None:
            break
        if isinstance(a, cst.If) and child is not a.test:
            out.append(a)
        child = a
    return out


def is_outer_container(check, expr: cst.BaseExpression, fn) -> bool:
    """`expr` is a list/dict/set created outside graph function `fn` (a module or enclosing-function name, or a
    `self.<attr>` initialized to one): mutating it inside `fn` happens once, at trace time."""
    if isinstance(expr, cst.Name):
        b = check.index.lookup(expr.value, expr)
        if b is None or b.kind not in ("assign", "annassign") or b.value is None:
            return False
        if b.scope is fn or (b.scope is not None and check.functions.is_inside(b.scope, fn)):
            return False
        if isinstance(b.scope, (cst.FunctionDef, cst.Lambda)) and (
                check.functions.is_tf_function(b.scope) or check.functions.in_tf_function(b.scope)):
            return False  # made by an enclosing function that itself runs while tracing: a new one every trace
        return _is_container_literal(check, b.value)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        cls = check.index.enclosing_class(expr)
        if cls is None:
            return False
        values = tensors(check).self_attribute_values(cls).get(expr.attr.value, [])
        return bool(values) and all(_is_container_literal(check, v) for v in values)
    return False


def _is_container_literal(check, v: cst.BaseExpression) -> bool:
    if isinstance(v, (cst.List, cst.Dict, cst.Set)):
        return True
    if isinstance(v, cst.Call):
        q = check.names.call_name(v)
        return q in ("builtins.list", "builtins.dict", "builtins.set", "collections.defaultdict",
                     "collections.OrderedDict", "collections.deque")
    return False


def only_traced(check, fn) -> bool:
    """A decorated def used only through `.get_concrete_function(...)`: it is traced, never called, so its
    trace-time Python effects are the point (e.g. capturing static shapes)."""
    if not isinstance(fn, cst.FunctionDef):
        return False
    cache = check.__dict__.setdefault("_only_traced", {})
    if id(fn) not in cache:
        cache[id(fn)] = _only_traced(check, fn)
    return cache[id(fn)]


def _only_traced(check, fn: cst.FunctionDef) -> bool:
    refs = [n for n in check.index.names_named(fn.name.value) if n is not fn.name]
    if not refs:
        return False
    for n in refs:
        parent = check.index.parent(n)
        if not (isinstance(parent, cst.Attribute) and parent.value is n and
                parent.attr.value in ("get_concrete_function", "experimental_get_tracing_count")):
            return False
    return True


SHORT_LOOP = 5


def short_loop(loop: cst.For | cst.While) -> bool:
    """A `for` over a literal collection (`(10, 250)`, `enumerate(["a", "b"])`) or `range(n)` with n at most
    SHORT_LOOP: a function made per iteration costs a few traces in all, and the items, which differ by design,
    usually change the traced signature anyway (TensorFlow Probability's notebooks: a function per model over two
    models, a jit-compiled window per size over four sizes; judged false in round 15)."""
    if not isinstance(loop, cst.For):
        return False
    it = loop.iter
    while isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in ("enumerate", "zip", "reversed") \
            and it.args:
        it = it.args[0].value
    if isinstance(it, (cst.Tuple, cst.List, cst.Set)):
        return len(it.elements) <= SHORT_LOOP and not any(isinstance(e, cst.StarredElement) for e in it.elements)
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" and len(it.args) == 1:
        n = literal_value(it.args[0].value)
        return isinstance(n, int) and n <= SHORT_LOOP
    return False
