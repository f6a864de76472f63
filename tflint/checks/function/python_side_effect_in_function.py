"""TFL205 python-side-effect-in-function: effects that run once, at trace time, in a graph function."""
from __future__ import annotations

import re

import libcst as cst

from ...findings import Applicability
from ..base import Check
from ._graph import LIST_MUTATORS, is_outer_container, only_traced, spell, walk
from ._graph import graph_function as _graph_function


def graph_function(check, node):
    fn = _graph_function(check, node)
    return None if fn is None or only_traced(check, fn) else fn


class PythonSideEffectInFunction(Check):
    code = "TFL205"

    def visit_Call(self, node: cst.Call) -> None:
        q = self.names.call_name(node)
        func = node.func
        if q == "builtins.print":
            if graph_function(self, node) is not None:
                self._print(node)
            return
        if q == "builtins.next" and node.args:
            if graph_function(self, node) is not None and self._python_iterator(node.args[0].value):
                self.report(node, "`next()` on a Python iterator inside a graph function runs once, at trace "
                                  "time: every call of the traced graph reuses that one element")
            return
        if isinstance(func, cst.Attribute) and func.attr.value in LIST_MUTATORS:
            fn = graph_function(self, node)
            if fn is not None and is_outer_container(self, func.value, fn) and not self._filled_once(node, func.value):
                self.report(node, f"`.{func.attr.value}()` on `{self.code_for(func.value)}`, created outside the "
                                  "graph function, runs once at trace time, not on every call; return the value "
                                  "or use a `tf.Variable`/`tf.TensorArray`", start_node=func.attr)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Subscript):
                fn = graph_function(self, node)
                if fn is not None and is_outer_container(self, t.target.value, fn) \
                        and not self._filled_once(node, t.target.value):
                    self.report(t.target, f"Item assignment to `{self.code_for(t.target.value)}`, created outside "
                                          "the graph function, runs once at trace time, not on every call")

    def _filled_once(self, node: cst.CSTNode, container: cst.BaseExpression) -> bool:
        """The write is guarded by the container being empty (`if not v_slot: v_slot.append(tf.Variable(0))`,
        `if not structure: structure["state"] = ...`, `if cache is None`): the create-once idiom, which wants exactly
        the trace-time run."""
        text = self.code_for(container)
        for anc in self.index.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(anc, cst.If):
                test = anc.test
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
                        and self.code_for(test.expression) == text:
                    return True
                if isinstance(test, cst.Comparison) and self.code_for(test.left) == text and len(test.comparisons) == 1 \
                        and isinstance(test.comparisons[0].operator, cst.Is) \
                        and isinstance(test.comparisons[0].comparator, cst.Name) \
                        and test.comparisons[0].comparator.value == "None":
                    return True
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self._global(node, "global")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._global(node, "nonlocal")

    def _global(self, node, kw: str) -> None:
        fn = graph_function(self, node)
        if fn is None:
            return
        declared = {n.name.value for n in node.names}
        written = set()
        for typ in (cst.Assign, cst.AugAssign, cst.AnnAssign):
            for stmt in self.functions.body_nodes(fn, typ):
                targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
                for t in targets:
                    written |= {n.value for n in walk(t, cst.Name)} & declared
        if written:
            names = ", ".join(f"`{n}`" for n in sorted(written))
            self.report(node, f"`{kw}` write to {names} inside a graph function runs once, at trace time; later "
                              "calls do not update it (use a `tf.Variable`)")

    def _print(self, node: cst.Call) -> None:
        if _reports_tracing(node):
            return  # `print("Tracing step")`: the documented idiom for seeing when a function traces
        message = ("`print` inside a graph function runs only while tracing (once per trace), not on every call; "
                   "use `tf.print` to print on every call")
        tf_print = spell(self, "tensorflow.print")
        unsupported = any(a.keyword is not None and a.keyword.value not in ("sep", "end") for a in node.args)
        formatted = any(walk(a.value, cst.FormattedString) or isinstance(a.value, cst.BinaryOperation)
                        and isinstance(a.value.operator, cst.Modulo) or
                        any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "format" for c in walk(a.value, cst.Call))
                        for a in node.args)
        if tf_print is None or unsupported or formatted:
            self.report(node, message)
            return
        self.report(node, message, target=node.func, replacement=tf_print, applicability=Applicability.UNSAFE,
                    fix_message=f"Use `{tf_print}` (prints on every call, tensors by value)")

    def _python_iterator(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Name):
            return False
        b = self.index.lookup(expr.value, expr)
        if b is None or b.kind not in ("assign", "annassign") or not isinstance(b.value, cst.Call):
            return False
        v = b.value
        q = self.names.call_name(v)
        if q == "builtins.iter" and v.args:
            src = v.args[0].value
            if self.datasets.is_dataset(src):
                return False
            if isinstance(src, (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.GeneratorExp)):
                return True
            if isinstance(src, cst.Call) and self.names.call_name(src) in ("builtins.range", "builtins.zip",
                                                                           "builtins.enumerate"):
                return True
            if isinstance(src, cst.Name):
                sb = self.index.lookup(src.value, src)
                return sb is not None and isinstance(sb.value, (cst.List, cst.Tuple, cst.ListComp))
            return False
        target = self.functions.resolve_callable(v.func)
        if isinstance(target, cst.FunctionDef):
            return any(True for _ in self.functions.body_nodes(target, cst.Yield))
        return False


_TRACING_TEXT = re.compile(r"trac(?:e|ed|es|ing)\b", re.IGNORECASE)


def _reports_tracing(call: cst.Call) -> bool:
    """A print whose literal text says it reports tracing ("Tracing...", "retracing train", "traced with")."""
    for a in call.args:
        for node in walk(a.value, cst.SimpleString) + walk(a.value, cst.FormattedStringText):
            text = node.evaluated_value if isinstance(node, cst.SimpleString) else node.value
            if isinstance(text, str) and _TRACING_TEXT.search(text):
                return True
    return False
