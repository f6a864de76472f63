"""TFL406 policy-set-after-model-built: a mixed policy set after layers or models were created in the same scope."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from ..keras.models import layer_name, model_constructor
from .policy import MIXED, Policies


class PolicySetAfterModelBuilt(Check):
    code = "TFL406"

    def visit_Call(self, node: cst.Call) -> None:
        policies = Policies.of(self.sem)
        match = next((p for p in policies.sets if p.call is node), None)
        if match is None or match.value not in MIXED:
            return
        owner = self.functions.owner(node)
        order = self.index.order_of(node)
        for call in self.index.nodes(cst.Call):
            if self.index.order_of(call) >= order or self.functions.owner(call) is not owner:
                continue
            kind = layer_name(self.sem, call)
            if kind in ("Input", "InputLayer"):
                continue
            what = f"`{kind}`" if kind else "a model" if model_constructor(self.sem, call) else None
            if what is None:
                continue
            self.report(node, f"`{match.value}` is set after {what} was created (`{self.code_for(call).splitlines()[0]}`): "
                              "layers take the global policy when they are created, so those layers stay float32, "
                              "and `compile` adds no loss scaling for them; set the policy first")
            return
