"""TFL207 python-loop-unrolled: `for i in range(N)` with a large or non-constant Python N in a graph function."""
from __future__ import annotations

import re

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import NOT_LITERAL, literal_value
from ..base import Check
from ._graph import LIST_MUTATORS, graph_function, spell, tensors, walk

DEFAULT_MIN_ITERATIONS = 100


class PythonLoopUnrolled(Check):
    code = "TFL207"

    def visit_For(self, node: cst.For) -> None:
        it = node.iter
        if not isinstance(it, cst.Call) or self.names.call_name(it) != "builtins.range" or not it.args:
            return
        if any(a.star or a.keyword for a in it.args):
            return
        fn = graph_function(self, node)
        if fn is None:
            return
        t = tensors(self)
        if any(t.is_tensor(a.value) for a in it.args):
            return  # AutoGraph turns a range over a tensor into a graph loop
        if any(_counts_dimensions(self, a.value) for a in it.args):
            return  # `range(batch_rank)`, `range(len(x.shape))`: a tensor's rank, a handful of iterations
        why = self._size(it, fn)
        if why is None:
            return
        if why.startswith("a static dimension") and self._indexes_python_sequence(node):
            # `for i in range(x.shape[1]): one_hots.append(tf.one_hot(x[:, i], vocab_sizes[i]))`: the body pairs each
            # column with a Python value, so the dimension is as small as that Python list (feature columns)
            return
        message = (f"Python `for ... in range({self._args(it)})` inside a graph function ({why}): the loop is "
                   "unrolled into the graph at trace time (one copy of the body per iteration: slow tracing, a "
                   "large graph); `tf.range` makes it one graph loop. Per call, the unrolled graph can be faster")
        tf_range = spell(self, "tensorflow.range")
        if tf_range is None or not self._convertible(node):
            self.report(it, message)
            return
        self.report(it, message, target=it.func, replacement=tf_range, applicability=Applicability.UNSAFE,
                    fix_message=f"Use `{tf_range}` (a graph loop; trace once)")

    def _args(self, it: cst.Call) -> str:
        return ", ".join(self.code_for(a.value) for a in it.args)

    def _size(self, it: cst.Call, fn) -> Optional[str]:
        minimum = int(self.options.get("min-iterations", DEFAULT_MIN_ITERATIONS))
        args = [a.value for a in it.args]
        stop = args[0] if len(args) == 1 else args[1]
        start = literal_value(args[0]) if len(args) >= 2 else 0
        step = literal_value(args[2]) if len(args) == 3 else 1
        v = self._int_value(stop)
        if v is not None:
            if isinstance(start, int) and isinstance(step, int) and step > 0:
                n = max(0, (v - start + step - 1) // step)
                if n >= minimum:
                    return f"{n} iterations"
            return None
        # a Python size known only when tracing
        # `len(x)` is not reported: on a list it is what unrolling is for, and on a tensor AutoGraph's `len` gives a
        # tensor (a graph loop) unless the dimension is static
        if isinstance(stop, cst.Subscript) and isinstance(stop.value, cst.Attribute) and stop.value.attr.value == "shape":
            if tensors(self).is_tensor(stop.value.value):
                return "a static dimension of a tensor: one copy per element"
        if isinstance(stop, cst.Name):
            b = self.index.lookup(stop.value, stop)
            if b is not None and b.kind == "param" and isinstance(b.node, cst.Param) and b.node.default is None:
                ann = b.node.annotation
                if ann is not None and isinstance(ann.annotation, cst.Name) and ann.annotation.value == "int":
                    return f"`{stop.value}: int` is a Python value: one trace and one copy per value"
        return None

    def _int_value(self, expr: cst.BaseExpression) -> Optional[int]:
        v = literal_value(expr)
        if v is NOT_LITERAL and isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind in ("assign", "annassign") and b.value is not None:
                scope = self.index.scopes.get(id(b.scope))
                if scope is not None and len(scope.bindings.get(expr.value, [])) == 1:
                    v = literal_value(b.value)
            elif b is not None and b.kind == "param" and isinstance(b.node, cst.Param) and b.node.default is not None:
                if tensors(self).param_is_tensor(b.scope, b.node):
                    return None
                default = b.node.default
                return self._int_value(default) if isinstance(default, cst.Name) else self._int_value_literal(default)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        return None

    def _int_value_literal(self, expr: cst.BaseExpression) -> Optional[int]:
        v = literal_value(expr)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def _indexes_python_sequence(self, loop: cst.For) -> bool:
        """The body indexes a Python sequence (not a tensor) with the loop counter: `vocab_sizes[i]`."""
        names = {n.value for n in walk(loop.target, cst.Name)}
        t = tensors(self)
        for sub in walk(loop.body, cst.Subscript):
            used = {n.value for el in sub.slice for n in walk(el, cst.Name)}
            if used & names and isinstance(sub.value, cst.Name) and not t.is_tensor(sub.value):
                b = self.index.lookup(sub.value.value, sub.value)
                if b is None or b.kind in ("annassign", "import") or (b.kind == "assign" and not t.is_tensor(b.value)):
                    return True
        return False

    def _convertible(self, loop: cst.For) -> bool:
        """No Python-only use of the loop in its body: list mutation, indexing Python sequences with the loop
        variable, printing, or nested Python loops over the counter."""
        names = {n.value for n in walk(loop.target, cst.Name)}
        t = tensors(self)
        for call in walk(loop.body, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in LIST_MUTATORS:
                return False
            if self.names.call_name(call) in ("builtins.print", "builtins.range", "builtins.len"):
                return False
        for sub in walk(loop.body, cst.Subscript):
            used = {n.value for el in sub.slice for n in walk(el, cst.Name)}
            if used & names and not t.is_tensor(sub.value):
                return False
        for stmt in walk(loop.body, cst.Return):
            return False
        return True


_DIMENSIONS = re.compile(r"(^|_)(rank|ndims?|num_dims|n_dims|dims)($|_)", re.I)


def _counts_dimensions(check, expr: cst.BaseExpression) -> bool:
    """A bound that counts a tensor's dimensions: a name like `rank`/`ndims`/`batch_rank`, `x.shape.rank`,
    `x.ndim`, `len(x.shape)`, `tf.rank(x)` (never more than a few)."""
    for node in walk(expr, cst.Name):
        if _DIMENSIONS.search(node.value):
            return True
    for call in walk(expr, cst.Call):
        if check.names.call_name(call) == "builtins.len" and call.args and isinstance(call.args[0].value, cst.Attribute) \
                and call.args[0].value.attr.value == "shape":
            return True
    return False
