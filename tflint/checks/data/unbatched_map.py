"""TFL106 unbatched-map: `.map(fn).batch(n)` where `fn` is element-wise, so `.batch(n).map(fn)` vectorizes it."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ..base import Check, NodeEdit
from .chain import Polymorphism, dataset_call, mapped_fn, swap_adjacent, swap_through_variable


class UnbatchedMap(Check):
    code = "TFL106"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.poly = Polymorphism(self.sem)

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("batch",))
        if p is None or p.last.method != "map" or p.last.call is None:
            return
        m = p.last.call
        fn = mapped_fn(self.sem, m)
        if fn is None or not self.poly.function(fn):
            return
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
