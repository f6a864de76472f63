"""TFL501 variables-outside-strategy-scope: a model/optimizer/metric/Variable created outside `strategy.scope()`."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...notebook import MARKER
from ..base import Check
from ..keras.models import model_constructor
from .strategy import in_strategy_scope, is_strategy_constructor

VARIABLES = frozenset({"tensorflow.Variable"})


class VariablesOutsideStrategyScope(Check):
    code = "TFL501"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._cells: Optional[dict[int, int]] = None
        # (owner function or None, statement order, constructor) of each strategy created in the file
        self.strategies = [(self.functions.owner(c), self.index.order_of(c), q, self._cell(c))
                           for c in self.index.nodes(cst.Call) if (q := is_strategy_constructor(self.sem, c))]

    def _cell(self, node: cst.CSTNode) -> int:
        """The notebook cell of a node (0 in a plain file): a strategy in one cell says nothing about a model built
        in an unrelated later cell (evaluation on CPU, a reloaded model, the next section of a tutorial)."""
        if MARKER not in self.ctx.text:
            return 0
        if self._cells is None:
            self._cells, cell = {}, 0
            for stmt in self.ctx.module.body:
                if any(line.comment is not None and line.comment.value.startswith(MARKER)
                       for line in getattr(stmt, "leading_lines", ())):
                    cell += 1
                self._cells[id(stmt)] = cell
        top = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.Module):
                break
            top = anc
        return self._cells.get(id(top), 0)

    def _creates(self, call: cst.Call) -> Optional[str]:
        q = self.sem.call_name(call)
        if q in VARIABLES:
            return "a `tf.Variable`"
        if q and (".schedules." in q or q.endswith("load_model")):
            return None  # a learning-rate schedule has no variables; a loaded model is for inference or export
        if q and q.startswith(("keras.optimizers.", "keras.metrics.")):
            tail = q.rsplit(".", 1)[-1]
            if tail[:1].isupper() and tail not in ("Optimizer", "Metric"):
                return f"the {'optimizer' if 'optimizers' in q else 'metric'} `{tail}`"
        kind = model_constructor(self.sem, call)
        if kind is not None:
            return "a Keras model"
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self.strategies:
            return
        owner = self.functions.owner(node)
        order = self.index.order_of(node)
        cell = self._cell(node)
        strategy = next((q for o, so, q, c in self.strategies if o is owner and so < order and c == cell), None)
        if strategy is None:
            return
        what = self._creates(node)
        if what is None or in_strategy_scope(self.sem, node):
            return
        if any(isinstance(a, cst.Call) and self._creates(a) for a in self.index.ancestors(node)):
            return  # the outer creation is the one reported
        name = strategy.rsplit(".", 1)[-1]
        self.report(node, f"{what} is created after a `{name}` exists but outside `with strategy.scope():`: its "
                          "variables are not distributed (not mirrored across replicas), so training does not run "
                          "as the strategy intends or fails later")
