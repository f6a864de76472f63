"""TFL204 eager-only-call-in-function: `.numpy()`, `float(t)`/`int(t)`/`bool(t)`, NumPy on tensors in a graph."""
from __future__ import annotations

import libcst as cst

from ...semantics import get_arg, literal_value
from ..base import Check
from ._graph import graph_function, tensors

CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.complex"})


class EagerOnlyCallInFunction(Check):
    code = "TFL204"

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not node.args:
            if graph_function(self, node) is None:
                return
            if self._tensor_like(func.value):
                self.report(node, "`.numpy()` inside a graph function: a symbolic tensor has no value while the "
                                  "function is traced (this raises, or runs only once at trace time)", start_node=func.attr)
            return
        q = self.names.call_name(node)
        if not q:
            return
        if q in CONVERSIONS and len(node.args) == 1:
            fn = graph_function(self, node)
            if fn is None or not tensors(self).is_tensor(node.args[0].value):
                return
            name = q.split(".")[1]
            # AutoGraph converts `int(t)`/`float(t)` into `tf.cast`; `bool(t)` always fails on a symbolic tensor
            if name in ("int", "float") and not self._autograph_off(fn):
                return
            self.report(node, f"`{name}(tensor)` inside a graph function: a symbolic tensor cannot become a "
                              f"Python {name} while tracing; keep it a tensor (`tf.cast`, `tf.cond`)")
            return
        if q.startswith("numpy.") and node.args:
            if graph_function(self, node) is None:
                return
            if any(tensors(self).is_tensor(a.value) for a in node.args):
                self.report(node, f"NumPy `{q.split('.', 1)[1]}` on a tensor inside a graph function: NumPy needs a "
                                  "concrete value, which a traced tensor does not have; use the TensorFlow op "
                                  "(`tf.math`, `tf.experimental.numpy`)")

    def _autograph_off(self, fn) -> bool:
        """The enclosing tf.function was created with `autograph=False` (no conversion of builtins)."""
        for f in [fn, *[a for a in self.index.ancestors(fn) if isinstance(a, cst.FunctionDef)]]:
            if isinstance(f, cst.FunctionDef):
                dec = self.functions.tf_function_decorator(f)
                if dec is not None and isinstance(dec.decorator, cst.Call):
                    arg = get_arg(dec.decorator, "autograph")
                    if arg is not None and literal_value(arg.value) is False:
                        return True
        return False

    def _tensor_like(self, recv: cst.BaseExpression) -> bool:
        t = tensors(self)
        fn = self.functions.tf_function_of(recv)
        if isinstance(recv, cst.Name):
            b = self.index.lookup(recv.value, recv)
            if b is None or fn is None or not (b.scope is fn or self.functions.is_inside(b.scope, fn)):
                return False  # captured from outside: may be an eager tensor (its value is frozen at trace time)
        if t.is_tensor(recv):
            return True
        # a local value of the graph function whose origin is not resolved (a call result, a parameter):
        # `.numpy()` is a TensorFlow eager-tensor method; captured/global objects may be eager tensors, skip those
        if isinstance(recv, cst.Call):
            return self.names.call_name(recv) is None or self.names.is_tf(self.names.call_name(recv))
        if isinstance(recv, cst.Name):
            b = self.index.lookup(recv.value, recv)
            fn = self.functions.tf_function_of(recv)
            return b is not None and fn is not None and b.scope is fn and b.kind != "import"
        return False
