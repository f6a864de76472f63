"""TFL304 untracked-variable-in-layer: `self.w = tf.Variable(...)` inside a Keras 3 `Layer`/`Model`."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from .models import keras3_established

VARIABLE = frozenset({"tensorflow.Variable", "tensorflow.compat.v1.Variable"})
# `tf.zeros(shape)`-style initial values that an initializer string reproduces exactly.
FILL_INITIALIZERS = {"tensorflow.zeros": "zeros", "tensorflow.ones": "ones"}


class UntrackedVariableInLayer(Check):
    code = "TFL304"

    def visit_Call(self, node: cst.Call) -> None:
        if self.sem.call_name(node) not in VARIABLE:
            return
        stmt = self.index.parent(node)
        if not isinstance(stmt, cst.Assign) or stmt.value is not node or len(stmt.targets) != 1:
            return
        target = stmt.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
            return
        cls = self.index.enclosing_class(node)
        fn = self.index.enclosing_function(node)
        if cls is None or fn is None or not keras3_established(self.ctx, self.index) \
                or not self.functions.is_keras_class(cls):
            return
        if any((self.names.qualified_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or
                "").endswith("track_tf1_style_variables") for d in fn.decorators):
            return  # TF's TF1-migration shim tracks the variables `call` creates (round 22: TensorFlow's guide, false)
        message = (f"`self.{target.attr.value} = tf.Variable(...)` in a Keras 3 layer: Keras does not track "
                   "`tf.Variable`s, so it is missing from `trainable_weights`, never trained by `fit` and not saved; "
                   "use `self.add_weight(...)`")
        replacement = self._add_weight(node)
        if replacement is None:
            self.report(node, message)
        else:
            self.report(node, message, replacement=replacement, fix_message="Create it with `self.add_weight(...)` (it becomes a trainable, saved weight: "
                                                                   "checkpoints and `trainable_weights` change)",
                        applicability=Applicability.UNSAFE)

    def _add_weight(self, call: cst.Call) -> Optional[str]:
        init = get_arg(call, "initial_value", 0)
        if init is None or not isinstance(init.value, cst.Call):
            return None
        kind = FILL_INITIALIZERS.get(self.sem.call_name(init.value) or "")
        shape = get_arg(init.value, "shape", 0)
        if kind is None or shape is None:
            return None
        parts = [f"shape={self.code_for(shape.value)}", f'initializer="{kind}"']
        fill_dtype = get_arg(init.value, "dtype", 1)
        dtype = get_arg(call, "dtype", 4) or fill_dtype
        if dtype is not None:
            parts.append(f"dtype={self.code_for(dtype.value)}")
        for kw, pos in (("trainable", 1), ("name", 3)):
            a = get_arg(call, kw, pos)
            if a is not None:
                parts.append(f"{kw}={self.code_for(a.value)}")
        known = {"initial_value", "dtype", "trainable", "name"}
        if any(a.keyword is not None and a.keyword.value not in known for a in call.args) or len(
                [a for a in call.args if a.keyword is None]) > 2 or any(a.star for a in call.args):
            return None
        return f"self.add_weight({', '.join(parts)})"
