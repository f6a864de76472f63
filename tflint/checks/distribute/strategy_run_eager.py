"""TFL506 strategy-run-eager: `strategy.run(step, args=...)` called from a Python loop outside any tf.function.

Reported when the call's receiver is a distribution strategy traced to a `tf.distribute.*Strategy` constructor (a
value merely named like a strategy is not enough: TF's own graph-mode Keras v1 loops call `strategy.run` on
`model._distribution_strategy` to build a graph once), the call is not inside a function that runs as a graph
(decorated or wrapped by `tf.function`, a Keras step, or called only from one), and it runs once per iteration of a
Python loop: written in the loop's body, or in a plain function that a loop in this file calls (two calls deep).
The step given to `run` must be a same-file function that is not itself a `tf.function`, or a parameter every caller
fills with one (same file, or another module for a module-level function): a graph step runs as a graph on each
replica even when `run` is called eagerly (unknown means silent).
Silent in TF1 code (`experimental_run_v2` under sessions) and in loops known to run a handful of times.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import get_arg
from ..base import Check
from ..common import is_small_loop
from .strategy import run_calls, strategy_of

DEPTH = 2  # how many same-file calls up from `strategy.run` a loop is looked for


class StrategyRunEager(Check):
    code = "TFL506"

    def finish(self) -> None:
        if self.ctx.target.tf1:
            return  # TF1: `experimental_run_v2` runs in a session graph
        for run in run_calls(self.sem):
            if self.functions.tf_function_of(run) is not None:
                continue
            if not self._eager_step(run) or not self._strategy(run.func.value):
                continue  # a strategy known by its name only (`model._distribution_strategy`) is not enough here
            where = self._loop_around(run, DEPTH, set())
            if where is None:
                continue
            method = run.func.attr.value
            receiver = self.code_for(run.func.value)
            self.report(
                run,
                f"`{receiver}.{method}(...)` runs once per iteration of {where}, outside any `tf.function`: each "
                "step is dispatched eagerly, op by op, to every replica. Call it from a `@tf.function` (e.g. "
                f"`@tf.function def distributed_step(batch): return {receiver}.{method}(step_fn, args=(batch,))`, "
                "called in the loop)",
                start_node=run.func.attr,
            )

    def _strategy(self, expr: cst.BaseExpression) -> bool:
        """A strategy by its constructor, or a parameter annotated as one (`strategy: tf.distribute.Strategy`)."""
        if strategy_of(self.sem, expr) is not None:
            return True
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind == "param" and isinstance(b.node, cst.Param) and b.node.annotation is not None:
                q = self.names.qualified_name(b.node.annotation.annotation) or ""
                return q.startswith(("tensorflow.distribute.", "tensorflow.compat.v1.distribute.")) and q.endswith("Strategy")
        return False

    def _eager_step(self, run: cst.Call) -> bool:
        """The function given to `run` is a same-file def or lambda that is not itself a graph function, or a
        parameter that every caller fills with one (through up to three same-file parameters, and from other
        modules for a module-level function: a library's `train(strategy, train_step, ...)` that wraps the step
        it is given). A `tf.function` step (or a concrete function, a method of another object: unknown) runs each
        replica's step as a graph even when `run` is called eagerly, so only the per-call dispatch is left: silent."""
        arg = get_arg(run, "fn", 0)
        return arg is not None and self._plain_function(arg.value, 3)

    def _plain_function(self, expr: cst.BaseExpression, depth: int) -> bool:
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind == "param" and isinstance(b.node, cst.Param):
                return depth > 0 and self._plain_param(b.node, depth - 1)
        fn = self.functions.resolve_callable(expr)
        if fn is None or self._wrapped_value(expr):
            return False
        return not self.functions.graph_everywhere(fn)

    def _plain_param(self, param: cst.Param, depth: int) -> bool:
        """Every call of the parameter's function, in this file and in the project's other modules, passes a plain
        function there; unknown (no caller, a `*args` call, a value of unknown origin) is False."""
        passed = self.functions.arguments_passed(param)
        if passed is None:
            return False
        if any(a is None or not self._plain_function(a.value, depth) for a in passed):
            return False
        fn = self.index.parent(self.index.parent(param))
        elsewhere = None
        if isinstance(fn, cst.FunctionDef) and self.index.parent(fn) is self.index.module and self.sem.project is not None:
            positional = list(fn.params.posonly_params) + list(fn.params.params)
            pos = next((i for i, p in enumerate(positional) if p is param), None)
            elsewhere = self.sem.project.function_passed_elsewhere(fn.name.value, pos, param.name.value)
            if elsewhere is not None and elsewhere != "plain":
                return False
        return bool(passed) or elsewhere == "plain"

    def _wrapped_value(self, expr: cst.BaseExpression) -> bool:
        """`tf.function(step)` passed directly, or a name bound to it."""
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            expr = b.value if b is not None and b.kind == "assign" and b.value is not None else expr
        return isinstance(expr, cst.Call) and self.sem.call_name(expr) in ("tensorflow.function",
                                                                          "tensorflow.compat.v1.function")

    def _loop_around(self, node: cst.CSTNode, depth: int, seen: set[int]) -> Optional[str]:
        """A description of the Python loop that runs `node` repeatedly, directly or through same-file calls of
        the plain function that holds it; None when there is none (or it is small, or inside a graph)."""
        loops = [lp for lp in self.index.enclosing_loops(node) if isinstance(lp, (cst.For, cst.While))]
        if loops:
            if any(is_small_loop(self.sem, lp) for lp in loops):
                return None
            return "a Python loop"
        if depth <= 0:
            return None
        fn = self.functions.owner(node)
        if not isinstance(fn, cst.FunctionDef) or id(fn) in seen or self.functions.is_tf_function(fn):
            return None
        seen.add(id(fn))
        for call in self.index.nodes(cst.Call):
            if self.functions.tf_function_of(call) is not None:
                continue
            if self.functions.resolve_callable(call.func) is not fn and fn not in self._made_by(call.func):
                continue
            if self._loop_around(call, depth - 1, seen) is not None:
                return f"a Python loop (through `{fn.name.value}`)"
        return None

    def _made_by(self, func: cst.BaseExpression) -> list:
        """The nested defs a name may hold when it is bound to a call of a same-file function that returns them
        (`step = wrap_step_into_strategy(train_step, strategy)` with `return distributed if multi else one_device`)."""
        if not isinstance(func, cst.Name):
            return []
        b = self.index.lookup(func.value, func)
        if b is None or b.kind != "assign" or not isinstance(b.value, cst.Call):
            return []
        maker = self.functions.resolve_callable(b.value.func)
        if not isinstance(maker, cst.FunctionDef):
            return []
        out = []
        for r in self.functions.body_nodes(maker, cst.Return):
            if self.functions.owner(r) is not maker or r.value is None:
                continue
            values = [r.value.body, r.value.orelse] if isinstance(r.value, cst.IfExp) else [r.value]
            for v in values:
                if isinstance(v, cst.Name):
                    made = self.functions.resolve_callable(v)
                    if isinstance(made, cst.FunctionDef):
                        out.append(made)
        return out
