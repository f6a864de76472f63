"""TFL402 missing-loss-scaling: `mixed_float16` and a custom GradientTape loop with no loss scaling."""
from __future__ import annotations

import libcst as cst

from ...semantics.functions import KERAS_STEP_METHODS
from ..base import Check
from ..keras.models import origin_call
from .policy import Policies

GRADIENT_TAPE = frozenset({"tensorflow.GradientTape"})
LOSS_SCALE_OPTIMIZERS = frozenset({
    "keras.mixed_precision.LossScaleOptimizer", "keras.mixed_precision.experimental.LossScaleOptimizer",
    "keras.optimizers.LossScaleOptimizer", "tensorflow.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer",
})
SCALING_METHODS = frozenset({"scale_loss", "get_scaled_loss"})
APPLY_METHODS = frozenset({"apply_gradients", "apply", "minimize"})


class MissingLossScaling(Check):
    code = "TFL402"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.policies = Policies.of(self.sem)
        self._scaled = None

    def _file_scales(self) -> bool:
        if self._scaled is None:
            self._scaled = any(
                self.sem.call_name(c) in LOSS_SCALE_OPTIMIZERS
                or (isinstance(c.func, cst.Attribute) and c.func.attr.value in SCALING_METHODS)
                for c in self.index.nodes(cst.Call))
        return self._scaled

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "gradient" and isinstance(func.value, cst.Name)):
            return
        if not self.policies.any_mixed():
            return
        b = self.index.lookup(func.value.value, func.value)
        if b is None or b.kind != "with" or not isinstance(b.value, cst.Call) or self.sem.call_name(b.value) not in GRADIENT_TAPE:
            return
        fn = self.index.enclosing_function(node)
        cls = self.index.enclosing_class(node)
        if fn is not None and fn.name.value in KERAS_STEP_METHODS and cls is not None and self.functions.is_keras_class(cls):
            return  # a train_step override: `fit` is the path, and Keras wraps the optimizer itself
        if self.policies.at(node) != "mixed_float16" or self._file_scales():
            return
        optimizer = self._unscaled_optimizer(node)
        if optimizer is None:
            return
        self.report(node, "Gradients of a `mixed_float16` model computed in a custom GradientTape loop without loss "
                          f"scaling (`{optimizer}` is a plain optimizer): small float16 gradients underflow to zero; "
                          "wrap it in `keras.mixed_precision.LossScaleOptimizer` and scale the loss",
                    start_node=func.attr)

    def _unscaled_optimizer(self, node: cst.Call):
        """The optimizer this step applies the gradients with, when it traces to a plain Keras optimizer."""
        owner = self.functions.owner(node)
        for call in self.index.nodes(cst.Call):
            f = call.func
            if not (isinstance(f, cst.Attribute) and f.attr.value in APPLY_METHODS) or self.functions.owner(call) is not owner:
                continue
            origin = origin_call(self.sem, f.value)
            q = self.sem.call_name(origin) if origin is not None else None
            if q and q.startswith("keras.optimizers.") and q not in LOSS_SCALE_OPTIMIZERS:
                return self.code_for(f.value)
        return None
