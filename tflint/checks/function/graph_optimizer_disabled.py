"""TFL211 graph-optimizer-disabled: Grappler (the graph optimizer) or one of its default passes switched off."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import get_arg, literal_value
from ..base import Check

# Grappler passes that are on by default (tf.config.optimizer.set_experimental_options keys).
DEFAULT_ON = frozenset({
    "layout_optimizer", "constant_folding", "shape_optimization", "remapping", "arithmetic_optimization",
    "dependency_optimization", "loop_optimization", "function_optimization", "implementation_selector",
    "common_subgraph_elimination",
})
DISABLING = {"disable_meta_optimizer": True, "disable_model_pruning": True}


class GraphOptimizerDisabled(Check):
    code = "TFL211"

    def visit_Call(self, node: cst.Call) -> None:
        q = self.names.call_name(node)
        if not q:
            return
        if q.endswith("config.optimizer.set_experimental_options") and self.names.is_tf(q):
            arg = get_arg(node, "options", 0)
            d = self._dict(arg.value) if arg is not None else None
            if d is None:
                return
            off = self._disabled(d)
            if off:
                self.report(node, self._message(off))
        elif q.endswith("RewriterConfig") and ("tensorflow" in q or "rewriter_config_pb2" in q):
            off = []
            for a in node.args:
                if a.keyword is None:
                    continue
                k = a.keyword.value
                if k in DISABLING and literal_value(a.value) is True:
                    off.append(k)
                elif k in DEFAULT_ON and self._off_value(a.value):
                    off.append(k)
            if off:
                self.report(node, self._message(off))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Attribute):
            return
        t = node.targets[0].target
        k = t.attr.value
        if "rewrite_options" not in self.code_for(t) and not self.names.file_imports_tf():
            return
        if k in DISABLING and literal_value(node.value) is True and "rewrite_options" in self.code_for(t.value):
            self.report(node, self._message([k]))
        elif k in DEFAULT_ON and self._off_value(node.value) and "rewrite_options" in self.code_for(t.value):
            self.report(node, self._message([k]))

    def _dict(self, expr: cst.BaseExpression) -> Optional[cst.Dict]:
        if isinstance(expr, cst.Dict):
            return expr
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and isinstance(b.value, cst.Dict):
                return b.value
        return None

    def _disabled(self, d: cst.Dict) -> list[str]:
        off = []
        for el in d.elements:
            if not isinstance(el, cst.DictElement):
                continue
            k = literal_value(el.key)
            v = literal_value(el.value)
            if not isinstance(k, str):
                continue
            if k in DISABLING and v is True:
                off.append(k)
            elif k in DEFAULT_ON and v is False:
                off.append(k)
        return off

    def _off_value(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Attribute) and expr.attr.value == "OFF" or literal_value(expr) is False

    def _message(self, off: list[str]) -> str:
        what = ", ".join(f"`{k}`" for k in off)
        if "disable_meta_optimizer" in off:
            return (f"Grappler switched off ({what}): tf.function graphs run without constant folding, op fusion, "
                    "layout and arithmetic optimizations")
        return f"Default graph optimizations switched off ({what}): every tf.function graph runs without them"
