"""TFL117 late-shard: `.shard()` after reading records or after an expensive map."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from .chain import dataset_call

EXPENSIVE = ("map", "flat_map", "interleave", "filter", "map_with_legacy_function", "batch", "padded_batch")
READERS = ("records", "tfds")


class LateShard(Check):
    code = "TFL117"

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("shard",))
        if p is None:
            return
        work = [s.method for s in p.steps[1:] if s.method in EXPENSIVE]
        if work:
            what = f"after `{work[0]}()`"
        elif p.source.kind in READERS and p.source.call is not None:
            what = "after reading the records"
        else:
            return
        self.report(
            node,
            f"`shard()` {what}: every worker reads (and transforms) all the data and then keeps 1/N of it; "
            "shard the list of files first (`list_files(..., shuffle=False).shard(...)`) or right after the source",
            start_node=node.func.attr,
        )
