"""TFL603 redundant-cast: `tf.cast(tf.cast(x, a), b)` and casts to the dtype a value already has."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from ..precision.policy import dtype_name

CAST = frozenset({"tensorflow.cast", "tensorflow.dtypes.cast", "tensorflow.compat.v1.cast"})
# Constructors whose result dtype is known: (dtype argument, position, default when absent)
KNOWN_DTYPE = {
    "tensorflow.zeros": ("dtype", 1, "float32"), "tensorflow.ones": ("dtype", 1, "float32"),
    "tensorflow.random.normal": ("dtype", 3, "float32"), "tensorflow.random.uniform": ("dtype", 3, "float32"),
    "tensorflow.random.truncated_normal": ("dtype", 3, "float32"), "tensorflow.eye": ("dtype", 3, "float32"),
    "tensorflow.constant": ("dtype", 1, None), "tensorflow.convert_to_tensor": ("dtype", 1, None),
}
FLOATS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64, "double": 64, "half": 16}
INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
ALIASES = {"double": "float64", "half": "float16"}


def _norm(d: Optional[str]) -> Optional[str]:
    return ALIASES.get(d, d) if d else d


class RedundantCast(Check):
    code = "TFL603"

    def visit_Call(self, node: cst.Call) -> None:
        if self.sem.call_name(node) not in CAST:
            return
        x = get_arg(node, "x", 0)
        d = get_arg(node, "dtype", 1)
        if x is None or d is None:
            return
        b = _norm(dtype_name(self.sem, d.value))
        if b is None:
            return
        inner = x.value
        if isinstance(inner, cst.Call) and self.sem.call_name(inner) in CAST:
            self._double_cast(node, inner, b)
            return
        have = self._known_dtype(inner)
        if have == b:
            self.report(node, f"`tf.cast` to `{b}` of a value that is already `{b}`: the cast does nothing",
                        replacement=inner, fix_message="Remove the cast", applicability=Applicability.SAFE)

    def _double_cast(self, outer: cst.Call, inner: cst.Call, b: str) -> None:
        ia = get_arg(inner, "dtype", 1)
        ix = get_arg(inner, "x", 0)
        a = _norm(dtype_name(self.sem, ia.value)) if ia is not None else None
        if a is None or ix is None:
            return
        if a == b:
            self.report(outer, f"`tf.cast` to `{b}` of a value just cast to `{b}`: the outer cast does nothing",
                        replacement=inner, fix_message="Remove the outer cast", applicability=Applicability.SAFE)
            return
        widening_first = (a in FLOATS and b in FLOATS and FLOATS[a] > FLOATS[b]) or (
            a in INTS and b in INTS and INTS[a] > INTS[b])
        if widening_first:
            new = outer.with_changes(args=[
                arg.with_changes(value=ix.value) if arg is get_arg(outer, "x", 0) else arg for arg in outer.args])
            self.report(outer, f"Cast to `{a}` then to `{b}`: the intermediate `{a}` cast only adds a copy; cast to "
                               f"`{b}` directly", replacement=new, fix_message=f"Cast to `{b}` directly",
                        applicability=Applicability.UNSAFE)

    def _known_dtype(self, expr: cst.BaseExpression) -> Optional[str]:
        if isinstance(expr, cst.Name):
            bnd = self.index.lookup(expr.value, expr)
            if bnd is None or bnd.kind != "assign" or not isinstance(bnd.value, cst.Call):
                return None
            if len(self.index.scope_of(bnd.node).bindings.get(expr.value, ())) != 1:
                return None  # reassigned somewhere: its dtype may change
            expr = bnd.value
        if not isinstance(expr, cst.Call):
            return None
        q = self.sem.call_name(expr)
        if q in CAST:
            d = get_arg(expr, "dtype", 1)
            return _norm(dtype_name(self.sem, d.value)) if d is not None else None
        spec = KNOWN_DTYPE.get(q or "")
        if spec is None:
            return None
        d = get_arg(expr, spec[0], spec[1])
        if d is None:
            return spec[2]
        return _norm(dtype_name(self.sem, d.value))
