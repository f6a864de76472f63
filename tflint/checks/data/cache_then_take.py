"""TFL113 cache-then-take: `.cache().take(k)` fills a cache that is thrown away each time."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ..base import Check, NodeEdit
from .chain import dataset_call, mapped_fn, random_call, single_use, swap_adjacent


class CacheThenTake(Check):
    code = "TFL113"

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("take",))
        if p is None or p.last.method != "cache" or p.last.call is None:
            return
        cache = p.last.call
        message = ("`cache().take(k)`: the iterator stops before the cache is complete, so the partial cache is "
                   "discarded and every epoch reads and transforms the data again; use `take(k).cache()`")
        # Upstream randomness: `cache().take(k)` draws a new sample each epoch, `take(k).cache()` freezes one.
        random_upstream = any(
            s.method == "shuffle" or (s.method in ("map", "flat_map", "interleave", "filter")
                                      and random_call(self.sem, mapped_fn(self.sem, s)) is not None)
            for s in p.steps[:-1]
        )
        app = Applicability.UNSAFE if random_upstream else Applicability.SAFE
        swapped = swap_adjacent(self.sem, cache, node)
        start = node.func.attr
        if swapped is not None:
            target, replacement = swapped
            self.report(node, message, start_node=start, target=target, replacement=replacement,
                        fix_message="Swap to `take(...).cache(...)`", applicability=app)
            return
        # through a variable: `ds = ds.cache()` ... `ds = ds.take(k)` -> `ds = ds.take(k)` ... `ds = ds.cache()`
        recv = node.func.value
        if isinstance(recv, cst.Name):
            b = self.index.lookup(recv.value, recv)
            if b is not None and b.kind == "assign" and b.value is cache and single_use(self.sem, recv, b.node):
                inner = cache.func.value
                edits = [
                    NodeEdit(cache, "replace", node=node.with_changes(func=node.func.with_changes(value=inner))),
                    NodeEdit(node, "replace", node=cache.with_changes(func=cache.func.with_changes(value=recv))),
                ]
                self.report(node, message, start_node=start, edits=edits,
                            fix_message="Swap to `take(...)` then `cache(...)`", applicability=app)
                return
        self.report(node, message, start_node=start)
