"""TFL212 eager-eval-step: an evaluation/inference loop over a dataset that calls a Keras model and updates metrics,
batch by batch, with no tf.function on the step.

Reported when a `for` loop iterates a tf.data dataset (traced to a constructor; also through `enumerate`, `zip`,
`tqdm`), runs outside any graph function, and each iteration calls a Keras model (traced to a Keras constructor or
same-file `keras.Model` subclass) and updates a metric (`m.update_state(...)`, or calling a `keras.metrics.*`
object), either in the loop body or in a plain same-file step function the body calls. A step that applies gradients
is TFL208's (eager-train-step); a step that is a tf.function, a loop known to run a handful of times, and TF1 code
are silent.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..base import Check
from ..common import is_small_loop, iterated_values, nodes_under
from ..keras.models import is_model_value, origin_call

TRAINING_METHODS = frozenset({"apply_gradients", "minimize", "gradient", "fit", "train_on_batch"})


class EagerEvalStep(Check):
    code = "TFL212"

    def visit_For(self, node: cst.For) -> None:
        if self.ctx.target.tf1 or self.functions.tf_function_of(node) is not None:
            return
        if not self._iterates_dataset(node.iter) or is_small_loop(self.sem, node):
            return
        owner = self.functions.owner(node)
        calls = [c for c in nodes_under(node.body, cst.Call) if self.functions.owner(c) is owner]
        if self._trains(calls):
            return  # a training loop: TFL208's
        model_call = self._model_call(calls)
        if model_call is not None and self._updates_metric(calls):
            if any(self._graph_step(c) for c in calls):
                return  # part of the step already runs as a graph
            self.report(model_call, "An evaluation loop over a dataset calls the Keras model and updates metrics "
                                    "eagerly, op by op, batch by batch: move the model call and the metric updates "
                                    "into a function decorated with `@tf.function` and call it in the loop")
            return
        for call in calls:
            fn = self.functions.resolve_callable(call.func)
            if not isinstance(fn, cst.FunctionDef) or self.functions.is_tf_function(fn):
                continue
            inner = self.functions.calls_in(fn)
            if self._trains(inner) or self._model_call(inner) is None or not self._updates_metric(inner):
                continue
            if any(self._graph_step(c) for c in inner):
                continue
            self.report(fn.name, f"`{fn.name.value}` calls the Keras model and updates metrics, and is called once "
                                 "per batch in a loop over a dataset, but runs eagerly (op by op, in Python): "
                                 "decorating it with `@tf.function` runs each step as one graph")
            return

    # -- matching -------------------------------------------------------------------------------------------
    def _iterates_dataset(self, expr: cst.BaseExpression) -> bool:
        return any(self.datasets.is_dataset(v) for v in iterated_values(self.sem, expr))

    def _trains(self, calls: list[cst.Call]) -> bool:
        for c in calls:
            f = c.func
            if isinstance(f, cst.Attribute) and f.attr.value in TRAINING_METHODS:
                return True
            if self.sem.call_name(c) in ("tensorflow.GradientTape", "tensorflow.compat.v1.GradientTape"):
                return True
        return False

    def _model_call(self, calls: list[cst.Call]) -> Optional[cst.Call]:
        for c in calls:
            if isinstance(c.func, (cst.Name, cst.Attribute)) and is_model_value(self.sem, c.func):
                return c
        return None

    def _updates_metric(self, calls: list[cst.Call]) -> bool:
        for c in calls:
            f = c.func
            if isinstance(f, cst.Attribute) and f.attr.value == "update_state":
                return True
            if isinstance(f, (cst.Name, cst.Attribute)):
                origin = origin_call(self.sem, f)
                q = self.sem.call_name(origin) if origin is not None else None
                if q and q.startswith("keras.metrics."):
                    return True
        return False

    def _graph_step(self, call: cst.Call) -> bool:
        fn = self.functions.resolve_callable(call.func)
        return fn is not None and self.functions.is_tf_function(fn)
