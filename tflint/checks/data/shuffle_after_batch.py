"""TFL114 shuffle-after-batch: `.batch(n).shuffle(m)` shuffles whole batches, never the examples in them."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from .chain import dataset_call, downstream, method_of

BATCHING = ("batch", "padded_batch", "ragged_batch", "sparse_batch")
# Steps that end "batched" state or make batch-level shuffling the intended design
RESET = ("unbatch", "rebatch", "bucket_by_sequence_length", "group_by_window", "window", "flat_map")


class ShuffleAfterBatch(Check):
    code = "TFL114"
    training_input = True

    def _batched_again(self, shuffle: cst.Call) -> bool:
        """A `batch` follows the shuffle in its chain: the earlier batch made the examples (sequences), this one
        makes the training batches, and shuffling the examples in between is right."""
        return any(method_of(c) in ("batch", "padded_batch") for c in downstream(self.sem, shuffle))

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("shuffle",))
        if p is None:
            return
        if self._batched_again(node):
            return  # `batch(seq_len + 1).shuffle(n).batch(bs)`: the first batch cuts a stream into sequences (text)
        for s in reversed(p.steps):
            if s.method in RESET or s.method == "shuffle":
                return
            if s.method in BATCHING:
                # an element-level shuffle before the batch means the batch shuffle is a deliberate extra
                before = p.steps[: p.steps.index(s)]
                if any(x.method == "shuffle" for x in before):
                    return
                self.report(
                    node,
                    f"`shuffle()` after `{s.method}()` shuffles whole batches: the same examples stay together in "
                    "every epoch; shuffle before batching",
                    start_node=node.func.attr,
                )
                return
            if s.method == "source":
                return  # batched sources (image_dataset_from_directory) shuffle on their own: todo
