"""TFL120 small-shuffle-buffer: `shuffle(1)` (no shuffling at all) or a shuffle buffer smaller than the batch that
follows it (`shuffle(8).batch(32)`: each batch holds neighbours from the input order)."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import Pipeline, get_arg
from ..base import Check
from ..common import constant_int
from .chain import dataset_call, downstream, evaluation_pipeline, method_of

SMALL = 1000  # a buffer below this is small in itself; a larger one under a larger batch is a deliberate choice
TOY = 1000  # a dataset whose size the code spells and is at most this: a demo or a test, not a training set
BATCHING = ("batch", "padded_batch", "ragged_batch", "sparse_batch")
# Upstream steps after which an element is a group (a batch, a window, a bucket): a shuffle there shuffles groups
# (TFL114's case for `batch`, a deliberate design for the others)
GROUPING = BATCHING + ("window", "bucket_by_sequence_length", "group_by_window", "rebatch")
# Downstream steps that read or expand each shuffled element into many (files into records, groups into examples):
# a small buffer over file names or shards is the normal, cheap design, and the examples are mixed later
EXPANDING = ("interleave", "flat_map", "unbatch", "apply", "parallel_interleave")
# Downstream steps that keep the element unit between the shuffle and the batch
KEEPING = ("map", "filter", "repeat", "prefetch", "cache", "take", "skip", "with_options", "ignore_errors",
           "shard", "enumerate", "map_with_legacy_function", "filter_with_legacy_function")


# makers of an array or tensor of a given shape: the first dimension is the number of slices
SHAPED_MAKERS = frozenset({"uniform", "normal", "truncated_normal", "zeros", "ones", "rand", "randn", "random",
                           "empty", "full"})


class SmallShuffleBuffer(Check):
    code = "TFL120"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("shuffle",))
        if p is None:
            return
        arg = get_arg(node, "buffer_size", 0)
        buffer = constant_int(self.sem, arg.value) if arg is not None else None
        if buffer is None or buffer < 1:
            return
        if self._groups_upstream(p):
            return
        batch_size: Optional[int] = None
        for call in downstream(self.sem, node):
            method = method_of(call)
            if method in EXPANDING:
                return  # shuffling file names (or groups) before they are read: a small buffer is normal there
            if method in BATCHING:
                size = get_arg(call, "batch_size", 0)
                batch_size = constant_int(self.sem, size.value) if size is not None else None
                break
            if method not in KEEPING:
                break
        if buffer > 1 and (batch_size is None or buffer >= batch_size or buffer >= SMALL):
            return
        if evaluation_pipeline(self.sem, node, p):
            return  # an evaluation pass: the order of its elements does not matter
        known = self._known_size(p)
        if known is not None and known <= max(buffer, batch_size or 0, TOY):
            return  # a toy dataset, or the buffer (or one batch) holds all of it
        if buffer == 1:
            self.report(
                node,
                "`shuffle(1)` does not shuffle: a one-element buffer returns the elements in input order in every "
                "epoch; use a buffer of thousands of elements (or the dataset size), or drop the `shuffle` if the "
                "input order is meant",
                start_node=node.func.attr,
            )
            return
        self.report(
            node,
            f"`shuffle({buffer})` before `batch({batch_size})`: a buffer smaller than the batch barely mixes, every batch "
            "is made of neighbours in the input order and keeps most of its elements from one epoch to the next; use "
            "a buffer several times the batch size (or the dataset size)",
            start_node=node.func.attr,
        )

    def _groups_upstream(self, p: Pipeline) -> bool:
        """The shuffled elements are groups (after a batch or a window) or file names (`list_files`), or the source
        yields batches (`image_dataset_from_directory`)."""
        if p.source_batched or p.source.kind == "files":
            return True
        for s in reversed(p.steps):
            if s.method == "unbatch":
                return False
            if s.method in GROUPING:
                return True
        return False

    def _leading_size(self, expr: cst.BaseExpression, depth: int) -> Optional[int]:
        """The length of what `from_tensor_slices` slices, when the code spells it: a literal list, a name bound to
        one, a tuple or dict of them (the first item's), or a tensor made with a literal shape
        (`tf.random.uniform((10, 10))`, `np.zeros([3, 2])`): round 22, TensorFlow's guides shuffle 3 and 10
        elements with `shuffle(10)`, a full shuffle (judged false)."""
        if depth > 3:
            return None
        if isinstance(expr, cst.List):
            if any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return None
            return len(expr.elements)
        if isinstance(expr, cst.Tuple) and expr.elements:
            return self._leading_size(expr.elements[0].value, depth + 1)
        if isinstance(expr, cst.Dict) and expr.elements and isinstance(expr.elements[0], cst.DictElement):
            return self._leading_size(expr.elements[0].value, depth + 1)
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind == "assign" and b.value is not None and b.value is not expr:
                return self._leading_size(b.value, depth + 1)
            return None
        if isinstance(expr, cst.Call):
            q = self.sem.call_name(expr) or ""
            if q.rsplit(".", 1)[-1] in SHAPED_MAKERS and q.startswith(("tensorflow.", "numpy.")):
                shape = get_arg(expr, "shape", 0)
                if shape is not None and isinstance(shape.value, (cst.Tuple, cst.List)) and shape.value.elements:
                    return constant_int(self.sem, shape.value.elements[0].value)
        return None

    def _known_size(self, p: Pipeline) -> Optional[int]:
        """At most how many elements reach the shuffle, when the code says so: `range(n)`, `from_tensor_slices` of a
        literal list, times a literal `repeat(k)`, capped by a `take(n)`. None when unknown or endless."""
        size: Optional[int] = None
        src = p.source.call
        q = p.source.qualified or ""
        if src is not None and src.args:
            first = src.args[0].value
            if q.endswith("Dataset.range") and len([a for a in src.args if a.keyword is None]) == 1:
                size = constant_int(self.sem, first)
            elif q.endswith("from_tensor_slices"):
                size = self._leading_size(first, 0)
        for s in p.steps[1:]:
            if s.call is None:
                continue
            if s.method == "take" and s.call.args:
                n = constant_int(self.sem, s.call.args[0].value)
                if n is not None and n >= 0:
                    size = n if size is None else min(size, n)
            elif s.method == "repeat":
                k = constant_int(self.sem, s.call.args[0].value) if s.call.args else None
                size = size * k if size is not None and k is not None and k >= 0 else None
        return size
