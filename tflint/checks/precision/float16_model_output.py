"""TFL401 float16-model-output: under a mixed policy, the model's output layer computes in float16/bfloat16."""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from ..common import add_keyword_arg
from ..keras.models import FUNCTIONAL, SEQUENTIAL, layer_name, resolve_value
from .policy import FLOAT32_DTYPES, MIXED, Policies, dtype_name

NOT_OUTPUT_LAYERS = frozenset({"InputLayer", "Input"})


class Float16ModelOutput(Check):
    code = "TFL401"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.policies = Policies.of(self.sem)
        self._done: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if not self.policies.any_mixed():
            return
        q = self.sem.call_name(node)
        if q in SEQUENTIAL:
            if self._inside_layer_class(node):
                return  # a block inside a custom layer (`self.mlpblock = Sequential([...])`): not the model's output
            for layer in self._sequential_output(node):
                self._check(layer, node, None)
        elif q in FUNCTIONAL:
            out = get_arg(node, "outputs", 1)
            if out is not None:
                for element in self._elements(out.value):
                    self._functional_output(element, node)

    def _inside_layer_class(self, node: cst.CSTNode) -> bool:
        """`node` is in a class that subclasses a Keras `Layer` (not a `Model`): what it builds is a part of some
        model's inside, and its last layer is no model output."""
        cls = self.index.enclosing_class(node)
        if cls is None:
            return False
        for base in cls.bases:
            q = self.sem.names.qualified_name(base.value) or ""
            if q.endswith((".Layer", ".layers.Layer")) or (isinstance(base.value, cst.Name) and base.value.value == "Layer"):
                return True
        return False

    # -- finding the output layer ---------------------------------------------------------------------------
    def _sequential_output(self, model: cst.Call) -> Iterator[cst.BaseExpression]:
        arg = get_arg(model, "layers", 0)
        if arg is not None:
            value = resolve_value(self.sem, arg.value)
            if isinstance(value, (cst.List, cst.Tuple)) and value.elements:
                last = value.elements[-1]
                if not isinstance(last, cst.StarredElement):
                    yield last.value
            return
        # `model = Sequential()` then `model.add(layer)`: the last add is the output
        parent = self.index.parent(model)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
            return
        name = parent.targets[0].target.value
        adds = []
        for call in self.index.nodes(cst.Call):
            f = call.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "add" and isinstance(f.value, cst.Name)
                    and f.value.value == name and call.args):
                b = self.index.lookup(name, f.value)
                if b is not None and b.value is model:
                    adds.append(call)
        if adds:
            yield adds[-1].args[0].value

    def _elements(self, expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
        if isinstance(expr, (cst.List, cst.Tuple)):
            for el in expr.elements:
                if not isinstance(el, cst.StarredElement):
                    yield el.value
        elif isinstance(expr, cst.Dict):
            for el in expr.elements:
                if isinstance(el, cst.DictElement):
                    yield el.value
        else:
            yield expr

    def _functional_output(self, element: cst.BaseExpression, model: cst.Call) -> None:
        value = resolve_value(self.sem, element)
        if not isinstance(value, cst.Call):
            return  # an op on tensors, an unknown function: silent
        func = value.func
        if isinstance(func, cst.Call):
            self._check(func, model, None)  # `Dense(10)(x)`
        elif isinstance(func, cst.Name):
            ctor = resolve_value(self.sem, func)
            if isinstance(ctor, cst.Call) and layer_name(self.sem, ctor):
                uses = [n for n in self.index.nodes(cst.Call) if isinstance(n.func, cst.Name)
                        and n.func.value == func.value and self.index.lookup(func.value, n.func) is
                        self.index.lookup(func.value, func)]
                self._check(ctor, model, element if len(uses) > 1 else None)

    # -- the check ----------------------------------------------------------------------------------------
    def _check(self, layer: cst.BaseExpression, model: cst.Call, shared_use: Optional[cst.BaseExpression]) -> None:
        ctor = resolve_value(self.sem, layer)
        if not isinstance(ctor, cst.Call):
            return
        kind = layer_name(self.sem, ctor)
        key = id(shared_use) if shared_use is not None else id(ctor)
        if kind is None or kind in NOT_OUTPUT_LAYERS or key in self._done:
            return
        policy = self.policies.at(ctor)
        if policy not in MIXED:
            return
        dtype = get_arg(ctor, "dtype")
        if dtype is not None:
            name = dtype_name(self.sem, dtype.value)
            if name is None or name in FLOAT32_DTYPES:
                return  # float32 already, or a dtype this file does not show
        self._done.add(key)
        message = (f"Under `{policy}` the model's output layer `{kind}` computes in "
                   f"{'float16' if policy == 'mixed_float16' else 'bfloat16'}: give the output layer "
                   "`dtype=\"float32\"` so the outputs (a softmax especially) keep float32 precision")
        if shared_use is not None:
            activation = self.names.alias_for("keras.layers.Activation")
            if activation is None:
                self.report(shared_use, message)
                return
            new = f'{activation}("linear", dtype="float32")({self.code_for(shared_use)})'
            self.report(shared_use, message + f" (`{self.code_for(layer)}` is shared, so a float32 `Activation` is added)",
                        replacement=new, fix_message='Add a final `Activation("linear", dtype="float32")`',
                        applicability=Applicability.UNSAFE)
            return
        if dtype is not None:
            self.report(ctor, message, target=dtype.value, replacement='"float32"',
                        fix_message='Set `dtype="float32"` on the output layer', applicability=Applicability.UNSAFE)
            return
        self.report(ctor, message, replacement=add_keyword_arg(ctor, "dtype", '"float32"'),
                    fix_message='Add `dtype="float32"` to the output layer', applicability=Applicability.UNSAFE)
