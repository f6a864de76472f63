"""TFL502 per-replica-loss-average: `tf.reduce_mean` of the loss inside a `strategy.run` step."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...semantics import get_arg
from ..base import Check
from .strategy import run_calls

REDUCE_MEAN = frozenset({"tensorflow.reduce_mean", "tensorflow.math.reduce_mean"})


class PerReplicaLossAverage(Check):
    code = "TFL502"

    def finish(self) -> None:
        reported: set[int] = set()
        for run in run_calls(self.sem):
            fn_arg = get_arg(run, "fn", 0)
            step = self.functions.resolve_callable(fn_arg.value) if fn_arg is not None else None
            if step is None:
                continue
            for call in self.functions.body_nodes(step, cst.Call):
                f = call.func
                if not (isinstance(f, cst.Attribute) and f.attr.value == "gradient" and call.args):
                    continue
                target = get_arg(call, "target", 0)
                for mean in self._means(target.value, 0):
                    if id(mean) not in reported:
                        reported.add(id(mean))
                        self.report(mean, "`tf.reduce_mean` of the loss inside a `strategy.run` step averages over "
                                          "the per-replica batch, and the gradients are then summed across replicas: "
                                          "the effective learning rate scales with the number of replicas; use "
                                          "`tf.nn.compute_average_loss(per_example_loss, global_batch_size=...)`")

    def _means(self, expr: cst.BaseExpression, depth: int) -> Iterator[cst.Call]:
        """reduce_mean calls that produce `expr` (through names, arithmetic and same-file helpers), unless the
        expression divides by the replica count itself."""
        if depth > 4:
            return
        if "num_replicas_in_sync" in self.code_for(expr):
            return
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind == "assign" and b.value is not None:
                yield from self._means(b.value, depth + 1)
        elif isinstance(expr, cst.BinaryOperation):
            yield from self._means(expr.left, depth + 1)
            yield from self._means(expr.right, depth + 1)
        elif isinstance(expr, cst.Call):
            if self.sem.call_name(expr) in REDUCE_MEAN:
                yield expr
                return
            fn = self.functions.resolve_callable(expr.func)
            if isinstance(fn, cst.FunctionDef):
                for ret in self.functions.body_nodes(fn, cst.Return):
                    if ret.value is not None and self.functions.owner(ret) is fn:
                        yield from self._means(ret.value, depth + 1)
