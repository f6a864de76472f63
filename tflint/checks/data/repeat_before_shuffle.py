"""TFL115 repeat-before-shuffle: `.repeat().shuffle(m)` mixes elements across epoch boundaries."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from .chain import dataset_call

STOP = ("shuffle", "batch", "padded_batch", "ragged_batch", "unbatch", "cache")


class RepeatBeforeShuffle(Check):
    code = "TFL115"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("shuffle",))
        if p is None:
            return
        for s in reversed(p.steps):
            if s.method in STOP or s.method == "source":
                return
            if s.method == "repeat":
                self.report(
                    node,
                    "`shuffle()` after `repeat()`: the shuffle buffer mixes the end of one epoch with the start of "
                    "the next, so an epoch no longer sees every example exactly once; shuffle, then repeat",
                    start_node=node.func.attr,
                )
                return
