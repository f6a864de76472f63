"""TFL121 missing-cache: a pipeline that reads files and decodes or parses them with deterministic maps, consumed for
several epochs, with no `cache()` anywhere: the same reads and decodes run again every epoch.

The epochs: `model.fit(ds, epochs=N)` with a constant N > 1 (the training set, and `validation_data=ds`, which is
read every epoch), a `repeat()` (no count, or a constant count > 1) after the decoding, or a `for` loop over the
dataset nested in an outer loop the dataset was built before (`for epoch in range(N): for x in ds:`).

The prefix: the steps from the source up to the first step that is random or order-changing (`shuffle`, a map that
draws random numbers) or multiplies elements (`repeat`), which must read files (a record reader source, or a map
calling `tf.io.read_file`) and hold a map that decodes or parses (`tf.io.decode_*`, `tf.image.decode_*`,
`tf.io.parse_*example`, `tf.io.decode_csv`, `tf.strings.*`, `tf.image.resize`) with no random op. The report is
on the last deterministic map of that prefix: where a `cache()` would go.

Silent: a `cache()` or `snapshot()` anywhere in the pipeline, a source this file does not build (a parameter, another
module, TensorFlow Datasets, Keras' `*_dataset_from_directory`), a `py_function` map (its determinism is unknown),
TF 1.x targets (Estimator `input_fn`s are called again for each `train`/`evaluate`), evaluation-only pipelines read
once. The size of the decoded data is not in the code: the rule assumes it fits in memory or on local disk
(`cache(filename)`), which is why it is off by default.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import Pipeline, Step, get_arg, literal_value
from ..base import Check
from ..common import calls_in_function, constant_int, iterated_values
from .chain import mapped_fn, random_call

RECORD_SOURCES = ("records",)
FILE_READS = frozenset({"tensorflow.io.read_file", "tensorflow.compat.v1.read_file", "tensorflow.read_file",
                        "tensorflow.data.TFRecordDataset", "tensorflow.data.TextLineDataset",
                        "tensorflow.data.FixedLengthRecordDataset", "tensorflow.data.experimental.CsvDataset",
                        "tensorflow.io.gfile.GFile"})
DECODE_PREFIXES = ("tensorflow.io.decode_", "tensorflow.image.decode_", "tensorflow.io.parse_",
                   "tensorflow.strings.", "tensorflow.audio.decode_", "tensorflow.image.resize",
                   "tensorflow.compat.v1.image.resize", "tensorflow.compat.v1.parse_", "tensorflow.compat.v1.io.parse_",
                   "tensorflow.compat.v1.decode_", "tensorflow.io.deserialize_", "tensorflow.io.parse_tensor")
PYTHON_OPS = ("tensorflow.py_function", "tensorflow.numpy_function", "tensorflow.compat.v1.py_func")
MAPS = frozenset({"map", "map_with_legacy_function", "interleave", "flat_map", "parallel_interleave"})
# steps that keep a prefix deterministic and cacheable
NEUTRAL = frozenset({"map", "map_with_legacy_function", "interleave", "flat_map", "filter", "batch", "padded_batch",
                     "prefetch", "with_options", "take", "skip", "apply", "unbatch", "shard", "ignore_errors"})


class MissingCache(Check):
    code = "TFL121"
    training_input = True

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._reported: set[int] = set()

    # -- where the epochs come from -------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.target.tf1 or self.target_version < (2, 0):
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "fit":
            epochs = get_arg(node, "epochs", 3)
            n = constant_int(self.sem, epochs.value) if epochs is not None else None
            if n is None or n <= 1:
                return
            for kw, pos, steps in (("x", 0, "steps_per_epoch"), ("validation_data", 7, "validation_steps")):
                if get_arg(node, steps) is not None:
                    continue  # an epoch is that many steps: how many passes over the data is not in the code
                arg = get_arg(node, kw, pos)
                if arg is not None and not arg.star:
                    p = self.datasets.pipeline(arg.value)
                    if p is not None:
                        self._judge(p, f"`fit(..., epochs={self.code_for(epochs.value)})` reads it every epoch")
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "repeat":
            p = self.datasets.pipeline(func.value)
            if p is None:
                return
            count = get_arg(node, "count", 0)
            n = constant_int(self.sem, count.value) if count is not None else None
            if n is None or n <= 1:
                return  # an endless `repeat()` says nothing of epochs: training may stop within the first one
            shown = f"repeat({self.code_for(count.value)})"
            self._judge(p, f"`{shown}` runs it again for every repetition")

    def visit_For(self, node: cst.For) -> None:
        if self.ctx.target.tf1 or self.target_version < (2, 0):
            return
        outer = [lp for lp in self.index.enclosing_loops(node) if isinstance(lp, (cst.For, cst.While))]
        if not outer:
            return
        bound = self._epochs(outer[0])
        if bound is not None and bound <= 1:
            return
        for value in iterated_values(self.sem, node.iter):
            p = self.datasets.pipeline(value)
            if p is None or p.source.call is None:
                continue
            if self.index.contains(outer[0], p.source.call) or self._built_in(value, outer[0]):
                continue  # built anew in every outer iteration: a new pipeline each time, nothing to keep
            self._judge(p, "the loop over it runs inside an outer loop, once per epoch")

    def _built_in(self, expr: cst.BaseExpression, loop) -> bool:
        """The iterated dataset is made inside `loop`: its chain calls a function there (`preprocess_dataset([f])
        .batch(1)`), or its root name is bound there (`sample_ds = preprocess_dataset([f])` in the loop body)."""
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        if isinstance(expr, cst.Call):
            return True
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            return b is None or self.index.contains(loop, b.node)
        return False

    def _epochs(self, loop) -> Optional[int]:
        if isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and self.sem.call_name(loop.iter) == "builtins.range":
            args = [a for a in loop.iter.args if a.keyword is None]
            if len(args) == 1:
                return constant_int(self.sem, args[0].value)
        return None

    # -- the pipeline ------------------------------------------------------------------------------------------------
    def _judge(self, p: Pipeline, why: str) -> None:
        if p.has("cache", "snapshot") or p.source.call is None or p.source.kind not in ("records", "in-memory", "files"):
            return
        prefix = self._deterministic_prefix(p)
        if prefix is None:
            return
        reads, last_decode = prefix
        if not reads or last_decode is None:
            return
        call = last_decode.call
        if call is None or id(call) in self._reported:
            return
        self._reported.add(id(call))
        decode = self._decode_call(mapped_fn(self.sem, last_decode))
        what = f" (`{self.code_for(decode.func)}`)" if decode is not None else ""
        self.report(call, f"This pipeline reads files and decodes them{what} in deterministic steps, and {why}, with "
                          f"no `cache()`: every epoch repeats the same reads and decodes. If the decoded data fits in "
                          f"memory, add `.cache()` after this `{last_decode.method}` (before any shuffle or random "
                          f"augmentation); if it fits on local disk, `.cache(filename)`{self._file_order_note(p)}",
                    start_node=call.func.attr if isinstance(call.func, cst.Attribute) else None)

    def _deterministic_prefix(self, p: Pipeline) -> Optional[tuple[bool, Optional[Step]]]:
        """(reads files, the last decoding map) over the steps from the source to the first random, order-changing
        or repeating step; None when a map in that prefix cannot be judged (a Python op, an unresolved function)."""
        reads = p.source.kind in RECORD_SOURCES
        last_decode: Optional[Step] = None
        for s in p.steps[1:]:
            if s.method not in NEUTRAL:
                break  # shuffle, repeat, cache, ...: the cacheable prefix ends here
            if s.method not in MAPS:
                continue
            fn = mapped_fn(self.sem, s)
            if fn is None:
                return None  # a function this file does not show: unknown
            calls = calls_in_function(self.sem, fn, 2)
            names = [q or "" for _, q in calls]
            if any(q.startswith(PYTHON_OPS) for q in names):
                return None
            if random_call(self.sem, fn) is not None:
                break  # a random augmentation: the cache would go before it
            if any(q in FILE_READS for q in names):
                reads = True
            if any(q.startswith(DECODE_PREFIXES) for q in names):
                last_decode = s
        return reads, last_decode

    def _file_order_note(self, p: Pipeline) -> str:
        """`list_files` shuffles the file names every epoch unless told not to: a cache after it replays the first
        epoch's file order (a `shuffle` after the cache still mixes the elements)."""
        src = p.source.call
        if src is None or (self.sem.call_name(src) or "").rsplit(".", 1)[-1] != "list_files":
            return ""
        arg = get_arg(src, "shuffle", 1)
        if arg is not None and literal_value(arg.value) is False:
            return ""
        return ("; `list_files` shuffles the file names every epoch, which a cache would freeze: keep a `shuffle` "
                "after the cache")

    def _decode_call(self, fn) -> Optional[cst.Call]:
        if fn is None:
            return None
        for call, q in calls_in_function(self.sem, fn, 2):
            if (q or "").startswith(DECODE_PREFIXES):
                return call
        return None
