"""TFL203 function-created-in-loop: a tf.function created inside a loop, or inside a function called in a loop."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import get_arg
from ..base import Check
from ._graph import only_traced, short_loop as _short_loop, walk

TF_FUNCTION = frozenset({"tensorflow.function", "tensorflow.compat.v1.function"})
CACHING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})


class FunctionCreatedInLoop(Check):
    code = "TFL203"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._loop_calls: Optional[dict[int, cst.Call]] = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.names.call_name(node) not in TF_FUNCTION:
            return
        parent = self.index.parent(node)
        if isinstance(parent, cst.Decorator):
            return  # `@tf.function(...)`: handled with its def
        self._consider(node, node, "`tf.function(...)`")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.functions.tf_function_decorator(node) is not None and not only_traced(self, node):
            self._consider(node, self.functions.tf_function_decorator(node), f"`@tf.function def {node.name.value}`")

    def _consider(self, node: cst.CSTNode, report_at: cst.CSTNode, what: str) -> None:
        if self._memoized(node):
            return
        loops = [lp for lp in self.index.enclosing_loops(node) if isinstance(lp, (cst.For, cst.While))]
        if loops:
            if self._per_item(node, loops[0]) or not self._called_in_loop_body(node, loops[0]):
                return  # one function per item, or created in a setup loop and handed on (bound to a server, stored)
            if _short_loop(loops[0]):
                return  # `for n in (10, 250):`: a few traces at most, and each item usually retraces anyway
            self.report(report_at, f"{what} is created on every iteration of a loop: each new function object "
                                   "traces its graph again on its first call; create it once, before the loop")
            return
        fn = self.index.enclosing_function(node)
        if fn is None or node is fn or self.functions.is_tf_function(fn) or self._caches(fn):
            return
        call = self._called_in_loop().get(id(fn))
        if call is not None and self._closes_over_per_call_state(node, fn, call):
            return  # it uses objects each call makes or is given per item: it cannot be created once
        if call is not None and not (self._returns_uncalled(fn, node) and self._memoized(call)):
            row_hint = self.code_for(call).split("(")[0]
            self.report(report_at, f"{what} is created inside `{fn.name.value}`, which is called in a loop "
                                   f"(`{row_hint}(...)`): every call builds and traces a new function; create it "
                                   "once and reuse it")

    def _closes_over_per_call_state(self, node: cst.CSTNode, fn: cst.FunctionDef, call: cst.Call) -> bool:
        """The created function reads a local of `fn` that `fn` makes itself (`model = build_model()`: a new model,
        optimizer or metric per call), or a parameter the loop passes per item (`for m in models: run(m)`): one
        function (and one trace) per call is then what the code needs (judged false in real code)."""
        body = node
        if isinstance(node, cst.Call):
            first = node.args[0].value if node.args else None
            body = self.functions.resolve_callable(first) if first is not None else None
            if body is None:
                return False
        scope = self.index.scopes.get(id(fn))
        if scope is None:
            return False
        read = {n.value for n in walk(body, cst.Name)}
        params = {p.name.value for p in self.functions.iter_params(fn)}
        loop = next((lp for lp in self.index.enclosing_loops(call) if isinstance(lp, cst.For)), None)
        per_item = {n.value for n in walk(loop.target, cst.Name)} if loop is not None else set()
        for name in read:
            bindings = scope.bindings.get(name, [])
            if any(b.kind in ("assign", "annassign", "unpack", "with") and isinstance(b.value, cst.Call)
                   for b in bindings):
                return True  # `model = build_model()` in `fn`
            if name in params and per_item:
                pos = [p.name.value for p in [*fn.params.posonly_params, *fn.params.params]]
                arg = get_arg(call, name, pos.index(name) if name in pos else None)
                if arg is not None and per_item & {n.value for n in walk(arg.value, cst.Name)}:
                    return True  # `for ckpt in checkpoints: run(models[ckpt])`
        return False

    def _memoized(self, node: cst.CSTNode) -> bool:
        """Stored into a cache (`cache[k] = tf.function(f)`, `self._fn = ...` under an `if`)."""
        stmt = self.index.statement_of(node)
        if isinstance(stmt, cst.Assign) and any(isinstance(t.target, cst.Subscript) for t in stmt.targets):
            return True
        for a in self.index.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda)) and a is not node:
                break
            if isinstance(a, cst.If):
                return True  # created under a condition: a create-once guard
        return False

    def _per_item(self, node: cst.CSTNode, loop: cst.For | cst.While) -> bool:
        """`for f in fns: tf.function(f)`: one function per distinct item is what the loop is for."""
        if not isinstance(loop, cst.For):
            return False
        targets = {n.value for n in walk(loop.target, cst.Name)}
        if isinstance(node, cst.Call) and node.args:
            used = {n.value for n in walk(node.args[0].value, cst.Name)}
            return bool(targets & used)
        return False

    def _called_in_loop_body(self, node: cst.CSTNode, loop: cst.For | cst.While) -> bool:
        """The loop itself calls the function it creates (`f = tf.function(step); f(x)`): a new trace per
        iteration. A function only stored or handed on (`server.bind(fn)`, `fns.append(fn)`) is traced when used,
        once per object. Unknown (not a def or a simple assignment) counts as called."""
        if isinstance(node, cst.FunctionDef):
            name = node.name.value
        else:
            parent = self.index.parent(node)
            if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                    and isinstance(parent.targets[0].target, cst.Name)):
                return True
            name = parent.targets[0].target.value
        return any(isinstance(c.func, cst.Name) and c.func.value == name for c in walk(loop.body, cst.Call))

    def _returns_uncalled(self, fn: cst.FunctionDef, node: cst.CSTNode) -> bool:
        """`fn` is a factory: it returns the function it creates without calling it. Called once per item of a
        setup loop and stored per item (`steps[split] = make_step(split)`), it builds one function per item on
        purpose, each traced once."""
        if isinstance(node, cst.FunctionDef):
            name = node.name.value
        else:
            parent = self.index.parent(node)
            if isinstance(parent, cst.Return):
                return True
            if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                    and isinstance(parent.targets[0].target, cst.Name)):
                return False
            name = parent.targets[0].target.value
        returned = any(isinstance(r.value, cst.Name) and r.value.value == name
                       for r in self.functions.body_nodes(fn, cst.Return) if self.functions.owner(r) is fn)
        called = any(isinstance(c.func, cst.Name) and c.func.value == name for c in self.functions.body_nodes(fn, cst.Call))
        return returned and not called

    def _caches(self, fn: cst.FunctionDef) -> bool:
        for dec in fn.decorators:
            expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            if self.names.qualified_name(expr) in CACHING_DECORATORS:
                return True
        return False

    def _called_in_loop(self) -> dict[int, cst.Call]:
        if self._loop_calls is None:
            out: dict[int, cst.Call] = {}
            for call in self.index.nodes(cst.Call):
                target = self.functions.resolve_callable(call.func)
                if isinstance(target, cst.FunctionDef) and id(target) not in out:
                    loops = [lp for lp in self.index.enclosing_loops(call) if isinstance(lp, (cst.For, cst.While))]
                    if loops:
                        out[id(target)] = call
            self._loop_calls = out
        return self._loop_calls

