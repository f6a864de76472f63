"""TFL108 interleave-without-parallel-calls: `ds.interleave(fn, ...)` with no `num_parallel_calls`."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg, literal_value
from ...semantics.datasets import DATASET_SOURCES
from ..base import Check
from ..common import add_keyword_arg, autotune, is_pure_tf, order_not_required, simulated_latency, sleeping_class


class InterleaveWithoutParallelCalls(Check):
    code = "TFL108"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "interleave":
            return
        if get_arg(node, "num_parallel_calls", 3) is not None or any(a.star for a in node.args):
            return
        cycle = get_arg(node, "cycle_length", 1)
        if cycle is not None and literal_value(cycle.value) == 1:
            return  # one input at a time on purpose: nothing to run in parallel
        if not self.datasets.is_dataset(func.value):
            return
        mapped = self.datasets.mapped_function(node)
        if mapped is not None and (sleeping_class(self.sem, mapped)
                                   or simulated_latency(self.sem, self.functions.resolve_callable(mapped))):
            return  # each input sleeps to stand for slow storage: the tf.data performance guide's demonstration
        pure = False
        if mapped is not None:
            q = self.names.qualified_name(mapped)
            if q is not None:
                q = q.replace("tensorflow.compat.v1.data.", "tensorflow.data.")
                pure = q in DATASET_SOURCES  # `interleave(tf.data.TFRecordDataset)`
            else:
                pure = is_pure_tf(self.sem, self.functions.resolve_callable(mapped))
        if order_not_required(self.ctx.text):
            pure = False  # `deterministic = False` in the file: a parallel interleave may reorder the elements
        message = ("`interleave` without `num_parallel_calls`: its inputs are opened and read one at a time on one "
                   "thread (tf.data does not parallelize interleave on its own)")
        spelling = autotune(self.sem, self.oldest_version, node)
        if spelling is None:
            self.report(node, message, start_node=func.attr)
            return
        self.report(node, message, start_node=func.attr,
                    replacement=add_keyword_arg(node, "num_parallel_calls", spelling),
                    fix_message=f"Add `num_parallel_calls={spelling}`" + ("" if pure else (
                        " (this file sets `deterministic = False`: the parallel interleave may reorder elements)"
                        if order_not_required(self.ctx.text) else
                        " (the interleaved function is not known to be pure TensorFlow: random draws or Python side "
                        "effects may then happen in a different order)")),
                    applicability=Applicability.SAFE if pure else Applicability.UNSAFE)
