"""TFL106 unbatched-map: `.map(fn).batch(n)` where `fn` is element-wise, so `.batch(n).map(fn)` vectorizes it."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ..base import Check, NodeEdit
from .chain import Polymorphism, dataset_call, mapped_fn, swap_adjacent, swap_through_variable


class UnbatchedMap(Check):
    code = "TFL106"
    training_input = True

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.poly = Polymorphism(self.sem)

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("batch",))
        if p is None or p.last.method != "map" or p.last.call is None:
            return
        m = p.last.call
        fn = mapped_fn(self.sem, m)
        if fn is None or _projection(fn) or not self.poly.function(fn):
            return  # a field projection only selects: batching first would copy every field, to drop most
        message = ("`map` before `batch` with an element-wise function: it runs once per element; after `batch` "
                   "it runs once per batch on whole tensors (the same values, a fraction of the overhead)")
        swapped = swap_adjacent(self.sem, m, node)
        start = m.func.attr
        if swapped is not None:
            target, replacement = swapped
            self.report(m, message, start_node=start, target=target, replacement=replacement,
                        fix_message="Swap to `batch(...).map(...)`", applicability=Applicability.UNSAFE)
            return
        across = swap_through_variable(self.sem, m, node)
        if across is not None:
            self.report(m, message, start_node=start, edits=[NodeEdit(t, "replace", node=n) for t, n in across],
                        fix_message="Batch first, then map", applicability=Applicability.UNSAFE)
            return
        self.report(m, message, start_node=start)


def _selects(e: cst.BaseExpression) -> bool:
    """Only selection: names, `x["key"]` / `x[0]`, and tuples, lists or dicts of those."""
    if isinstance(e, cst.Name):
        return True
    if isinstance(e, cst.Subscript):
        return _selects(e.value) and len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index) and \
            isinstance(e.slice[0].slice.value, (cst.SimpleString, cst.Integer))
    if isinstance(e, (cst.Tuple, cst.List)):
        return all(not isinstance(el, cst.StarredElement) and _selects(el.value) for el in e.elements)
    if isinstance(e, cst.Dict):
        return all(isinstance(el, cst.DictElement) and _selects(el.value) for el in e.elements)
    return False


def _projection(fn) -> bool:
    """A mapped function that only selects fields of the element (`lambda ex: ex["id"]`): no per-element work to
    vectorize (the catalog's exemption)."""
    if isinstance(fn, cst.Lambda):
        return _selects(fn.body)
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    if not all(isinstance(line, cst.SimpleStatementLine) for line in body):
        return False
    stmts = [small for line in body for small in line.body
             if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString))]
    return len(stmts) == 1 and isinstance(stmts[0], cst.Return) and stmts[0].value is not None \
        and _selects(stmts[0].value)
