"""TFL303 model-built-in-loop: Keras models built and fitted in a loop with no `clear_session()`."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from .models import model_constructor

CLEAR_SESSION = frozenset({"keras.backend.clear_session", "keras.utils.clear_session",
                           "tensorflow.compat.v1.keras.backend.clear_session"})
TRAIN_METHODS = frozenset({"fit", "train_on_batch", "fit_generator"})


class ModelBuiltInLoop(Check):
    code = "TFL303"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        loops = [lp for lp in self.index.enclosing_loops(node) if isinstance(lp, (cst.For, cst.While))]
        if not loops or model_constructor(self.sem, node) is None:
            return
        loop = loops[-1]  # the outermost loop of this function: one report per loop
        if id(loop) in self._reported:
            return
        inside = [c for c in self.index.nodes(cst.Call) if loop in self.index.ancestors(c)]
        if not any(isinstance(c.func, cst.Attribute) and c.func.attr.value in TRAIN_METHODS for c in inside):
            return
        if any(self.sem.call_name(c) in CLEAR_SESSION for c in inside):
            return
        self._reported.add(id(loop))
        self.report(node, "A Keras model is built and trained in every iteration with no `keras.backend."
                          "clear_session()`: Keras' global state (layer name counters, and with TF 1-style graphs "
                          "the whole graph) keeps growing, and memory use with it")
