"""TFL206 variable-created-in-function: a `tf.Variable`, Keras layer, model, optimizer or metric created in a
graph function body with no create-once guard."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..base import Check
from ._graph import graph_function

VARIABLES = frozenset({"tensorflow.Variable", "tensorflow.compat.v1.Variable", "keras.Variable"})
KERAS_PREFIXES = {"keras.layers.": "Keras layer", "keras.optimizers.": "Keras optimizer",
                  "keras.metrics.": "Keras metric", "keras.models.": "Keras model", "keras.Sequential": "Keras model",
                  "keras.Model": "Keras model"}


# layers that own no variables: building one per trace creates nothing a tf.function would refuse (a `Lambda`
# naming a tensor for export, an `Activation`, a `Reshape`); judged false on the real-code ledger
WEIGHTLESS_LAYERS = frozenset({
    "Lambda", "Activation", "ReLU", "Softmax", "LeakyReLU", "ELU", "Flatten", "Reshape", "Permute", "RepeatVector",
    "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout",
    "AlphaDropout", "Concatenate", "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Dot",
    "Cropping1D", "Cropping2D", "Cropping3D", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "UpSampling1D",
    "UpSampling2D", "UpSampling3D", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
    "AveragePooling2D", "AveragePooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
    "GlobalAveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D", "Identity",
    "Rescaling", "CenterCrop", "Resizing", "Masking", "ActivityRegularization",
})


class VariableCreatedInFunction(Check):
    code = "TFL206"

    def visit_Call(self, node: cst.Call) -> None:
        q = self.names.call_name(node)
        what = self._what(q)
        if what is None:
            return
        if q and ".layers." in f".{q}" and q.rsplit(".", 1)[-1] in WEIGHTLESS_LAYERS:
            return  # a layer without variables: nothing is created that a later trace would refuse
        fn = graph_function(self, node)
        if fn is None or self._guarded(node, fn):
            return
        if self.functions.tf_function_reason(fn) in ("dataset-fn", "called-elsewhere") and not what.startswith("`tf.Variable"):
            # tf.data traces its function once: a stateless layer built there is built once; from another module's
            # graph code, whether that is a tf.data function (tensorflow/tensorrt's per-model preprocessing, called
            # from a dataset map in dataloading.py) or a tf.function is not known here
            return
        if self._called_once(fn):
            return  # a local tf.function called once (a unit test of graph-mode creation): one trace, one object
        self.report(node, f"{what} created inside a graph function: a tf.function may create variables only on its "
                          "first trace (later traces raise), and a new object per call is never the one you train; "
                          "create it once outside (in `__init__`/`build`, or under an `if self.x is None:` guard)")

    def _what(self, q: Optional[str]) -> Optional[str]:
        if not q:
            return None
        if q in VARIABLES:
            return "`tf.Variable`"
        for prefix, what in KERAS_PREFIXES.items():
            if q.startswith(prefix):
                last = q.rsplit(".", 1)[-1]
                if last[:1].isupper() and last not in ("Input", "InputSpec", "Layer") and "schedules" not in q:
                    return f"{what} `{last}`"
        return None

    def _called_once(self, fn) -> bool:
        """`fn` is a def local to another function whose name is used once, as the callee of one call outside any
        loop: it is traced once, and what it creates is created once (tf-keras' own tests build a layer or a metric
        inside a local tf.function on purpose; judged false in round 16)."""
        if not isinstance(fn, cst.FunctionDef):
            return False
        outer = self.index.enclosing_function(fn)
        if outer is None:
            return False
        uses = [u for u in self.index.names_named(fn.name.value)
                if getattr(self.index.lookup(fn.name.value, u), "node", None) is fn]
        if len(uses) != 1:
            return False
        call = self.index.parent(uses[0])
        if not (isinstance(call, cst.Call) and call.func is uses[0]):
            return False
        return not any(self.functions.is_inside(loop, outer) or loop is outer
                       for loop in self.index.enclosing_loops(call))

    def _guarded(self, node: cst.CSTNode, fn) -> bool:
        for a in self.index.ancestors(node):
            if a is fn:
                return False
            if isinstance(a, cst.If):
                return True  # a Python condition around the creation: create-once (`if self.v is None:`)
            if isinstance(a, cst.With):
                for item in a.items:
                    if isinstance(item.item, cst.Call) and (self.names.call_name(item.item) or "").endswith("init_scope"):
                        return True
        return False
