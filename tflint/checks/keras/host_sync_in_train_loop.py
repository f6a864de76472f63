"""TFL305 host-sync-in-train-loop: a custom training loop reads a value the `tf.function` training step returned
back to Python on every step (`loss.numpy()`, `float(loss)`, `print(loss)`).

The training step is a same-file function that runs as a `tf.function` (decorated, or wrapped with
`tf.function(f)`) and applies gradients (`apply_gradients`/`minimize` in its body, in a same-file helper it calls or
in the function it hands to `strategy.run`). The loop is the innermost `for`/`while` around a call of that step,
outside any graph function. A read is reported when the value read is the step's result (the call itself, a name
bound to it, an item of its tuple or dict) and that result is provably a tensor (the step returns a TensorFlow
value there), and the read runs on every iteration of that loop: not under an `if` (a `step % 100 == 0` logging
guard), a conditional expression or an `except`, not in a nested loop or def. Eager steps are TFL208's; a read
inside the step is TFL208's or TFL204's. Unknown means silent: a step defined in another module, an attribute
step (`self.step = tf.function(...)`), a returned Python value.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import literal_value
from ..base import Check
from ..common import applies_gradients, is_small_loop, nodes_under

CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.complex", "builtins.str",
                         "builtins.repr", "builtins.format"})
HOST_FUNCTIONS = frozenset({"keras.backend.get_value", "keras.backend.eval", "keras.backend.batch_get_value"})
PRINTS = frozenset({"builtins.print"})
CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "timeit.default_timer",
                    "time.time_ns", "time.perf_counter_ns", "time.monotonic_ns"})
GUARDS = (cst.If, cst.IfExp, cst.ExceptHandler, cst.ExceptStarHandler, cst.BooleanOperation)


class HostSyncInTrainLoop(Check):
    code = "TFL305"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._steps: dict[int, bool] = {}
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.target.tf1 or self.target_version < (2, 0):
            return
        step = self.functions.resolve_callable(node.func)
        if step is None or not self._is_graph_train_step(step):
            return
        if self.functions.tf_function_of(node) is not None:
            return  # a step called from another graph function is one graph: no host round trip
        loops = self.index.enclosing_loops(node)
        if not loops or not isinstance(loops[0], (cst.For, cst.While)):
            return
        loop = loops[0]
        if is_small_loop(self.sem, loop) or self._guarded(node, loop):
            return  # a demo loop of a few steps, or a step run only now and then
        owner = self.functions.owner(node)
        if self._timed(loop, owner):
            return  # a loop that times each step needs the read: without it the clock stops before the step ends
        for read, what in self._reads(loop, owner):
            if id(read) in self._reported or not self._every_iteration(read, loop):
                continue
            value = self._read_value(read, what)
            if value is None or not self._is_step_result(value, node, step):
                continue
            if self._decides_exit(read, loop):
                return  # the value decides whether the loop stops (early stopping, "solved"): needed every step
            self._reported.add(id(read))  # the first read of this step's result waits for it; later ones do not
            name = step.name.value if isinstance(step, cst.FunctionDef) else "the step"
            self.report(read, f"{what} reads the result of the training step `{name}` back to Python on every step "
                              f"of the loop: the host "
                              f"waits for the step to finish before it can queue the next one (on a GPU or TPU the "
                              f"device idles meanwhile; on a CPU it costs little). Accumulate on the device (a "
                              f"`keras.metrics.Mean`, a tensor sum) and read it every N steps or once per epoch")
            return

    # -- the training step ------------------------------------------------------------------------------------
    def _is_graph_train_step(self, fn) -> bool:
        key = id(fn)
        if key not in self._steps:
            reason = self.functions.tf_function_reason(fn)
            self._steps[key] = reason in ("decorated", "wrapped") and applies_gradients(self.sem, fn)
        return self._steps[key]

    # -- reads in the loop --------------------------------------------------------------------------------------
    def _reads(self, loop, owner) -> list[tuple[cst.CSTNode, str]]:
        """Candidate host reads in the loop's body that the loop itself runs, with how each reads."""
        out: list[tuple[cst.CSTNode, str]] = []
        body = loop.body
        for call in nodes_under(body, cst.Call):
            if self.functions.owner(call) is not owner:
                continue
            func = call.func
            q = self.names.call_name(call) or ""
            if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not call.args:
                out.append((call, f"`{self.code_for(call)}`"))
            elif q in CONVERSIONS and call.args:
                out.append((call, f"`{self.code_for(call)}`"))
            elif q in HOST_FUNCTIONS and call.args:
                out.append((call, f"`{self.code_for(call)}`"))
            elif q.startswith("numpy.") and call.args:
                out.append((call, f"`{self.code_for(call)}`"))
            elif q in PRINTS:
                out.append((call, f"`{self.code_for(call)}`"))
        for fs in nodes_under(body, cst.FormattedString):
            if self.functions.owner(fs) is owner:
                out.append((fs, f"`{self.code_for(fs)}`"))
        out.sort(key=lambda r: self.index.pre.get(id(r[0]), 0))
        return out

    def _read_value(self, read: cst.CSTNode, what: str) -> Optional[list[cst.BaseExpression]]:
        """The expressions whose values `read` brings to the host."""
        if isinstance(read, cst.FormattedString):
            return [p.expression for p in read.parts if isinstance(p, cst.FormattedStringExpression)]
        assert isinstance(read, cst.Call)
        func = read.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not read.args:
            return [func.value]
        q = self.names.call_name(read) or ""
        if q in PRINTS:
            out = []
            for a in read.args:
                if a.keyword is None and not a.star:
                    out.extend(self._formatted(a.value))
            return out
        first = read.args[0]
        if first.star or first.keyword is not None:
            return None
        return [first.value]

    def _formatted(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """What a printed argument shows: itself, the operands of `"..." % (a, b)`, the arguments of
        `"...".format(a)`. (An f-string is a read of its own.)"""
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo) and \
                isinstance(expr.left, (cst.SimpleString, cst.ConcatenatedString)):
            right = expr.right
            return [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format" \
                and isinstance(expr.func.value, (cst.SimpleString, cst.ConcatenatedString)):
            return [a.value for a in expr.args if not a.star]
        return [expr]

    def _is_step_result(self, values, call: cst.Call, step) -> bool:
        return any(self._result_of(v, call, step) for v in values)

    def _result_of(self, expr: cst.BaseExpression, call: cst.Call, step) -> bool:
        """`expr` is (a tensor part of) what this call of the step returned."""
        if expr is call:
            return self._returns_tensor(step, None)
        key = None
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            key = literal_value(expr.slice[0].slice.value)
            expr = expr.value
            if expr is call:
                return self._returns_tensor(step, ("key", key))
        if not isinstance(expr, cst.Name):
            return False
        b = self.index.lookup(expr.value, expr)
        if b is None or b.value is not call:
            return False
        if b.kind == "assign":
            return self._returns_tensor(step, ("key", key) if key is not None else None)
        if b.kind == "unpack" and b.index is not None and key is None:
            return self._returns_tensor(step, ("item", b.index))
        return False

    def _returns_tensor(self, step, part) -> bool:
        """What the step returns there is a tensor: a `tf.function` converts every value it returns to a tensor
        (`return 1` gives a scalar tensor; measured on TF 2.21), except None. So every return must have a value,
        and where it is a tuple or dict literal, the item read must be there and not None."""
        if isinstance(step, cst.Lambda):
            values = [step.body]
        else:
            values = [r.value for r in self.functions.body_nodes(step, cst.Return)
                      if self.functions.owner(r) is step]
        if not values or any(v is None for v in values):
            return False
        for v in values:
            if part is not None and part[0] == "item" and isinstance(v, (cst.Tuple, cst.List)):
                if part[1] >= len(v.elements) or any(isinstance(e, cst.StarredElement) for e in v.elements):
                    return False
                v = v.elements[part[1]].value
            elif part is not None and part[0] == "key" and isinstance(v, cst.Dict):
                match = [e.value for e in v.elements if isinstance(e, cst.DictElement)
                         and literal_value(e.key) == part[1]]
                if len(match) != 1:
                    return False
                v = match[0]
            elif part is not None and isinstance(v, (cst.Tuple, cst.List, cst.Dict)):
                return False  # a dict read by position, a tuple read by key: not what this shows
            if isinstance(v, cst.Name) and v.value == "None":
                return False
        return True

    def _decides_exit(self, read: cst.CSTNode, loop) -> bool:
        """The read's value (followed through the names assigned from it in the loop body, and names assigned from
        those) is tested by an `if`/`while` in the loop whose body leaves the loop (`break`, `return`, `raise`):
        `if running_reward > threshold: break` in TensorFlow's actor-critic tutorial, an early stop on NaN."""
        for a in self.index.ancestors(read):
            if a is loop:
                break
            if isinstance(a, cst.If) and self.index.contains(a.test, read) or (isinstance(a, cst.If) and a.test is read):
                if self._exits(a):
                    return True
        stmt = self.index.statement_of(read)
        names: set[str] = set()
        if isinstance(stmt, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
            names |= {n.value for t in targets for n in nodes_under(t, cst.Name)}
        methods = [c for c in nodes_under(loop.body, cst.Call)
                   if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name)]
        for call in methods:  # `history.append(loss.numpy())`: the container holds it
            if self.index.contains(call, read):
                names.add(call.func.value.value)
        if not names:
            return False
        assigns = [a for a in nodes_under(loop.body, cst.Assign)] + [a for a in nodes_under(loop.body, cst.AugAssign)]
        for _ in range(3):
            for call in methods:  # `rewards.append(reward)`
                if any(n.value in names for a in call.args for n in nodes_under(a.value, cst.Name)):
                    names.add(call.func.value.value)
            for a in assigns:
                value = a.value
                targets = [t.target for t in a.targets] if isinstance(a, cst.Assign) else [a.target]
                if any(n.value in names for n in nodes_under(value, cst.Name)):
                    names |= {n.value for t in targets for n in nodes_under(t, cst.Name)}
        return any(self._exits(i) and any(n.value in names for n in nodes_under(i.test, cst.Name))
                   for i in nodes_under(loop.body, cst.If))

    def _exits(self, branch: cst.If) -> bool:
        return any(nodes_under(branch.body, t) for t in (cst.Break, cst.Return, cst.Raise))

    def _timed(self, loop, owner) -> bool:
        """The loop reads a clock in its own body, directly or under one condition (`if i > warmup_steps:
        timestamps.append(time())`): it times its steps, and needs each step finished before it reads the clock
        (NVIDIA's ELECTRA and UNet benchmarks: "introduce CPU-GPU sync for training perf computation")."""
        for c in nodes_under(loop.body, cst.Call):
            if self.functions.owner(c) is not owner or self.names.call_name(c) not in CLOCKS:
                continue
            loops = self.index.enclosing_loops(c)
            if loops and loops[0] is loop and len(self._conditions(c, loop)) <= 1:
                return True
        return False

    def _conditions(self, node: cst.CSTNode, loop) -> list[cst.CSTNode]:
        out, child = [], node
        for a in self.index.ancestors(node):
            if a is loop:
                break
            if isinstance(a, GUARDS) and not (isinstance(a, cst.If) and child is a.test):
                out.append(a)
            child = a
        return out

    # -- every iteration ----------------------------------------------------------------------------------------
    def _every_iteration(self, node: cst.CSTNode, loop) -> bool:
        """`node` runs once on every iteration of `loop`: no loop, condition or handler between them."""
        loops = self.index.enclosing_loops(node)
        if not loops or loops[0] is not loop:
            return False
        return not self._guarded(node, loop)

    def _guarded(self, node: cst.CSTNode, loop) -> bool:
        child = node
        for a in self.index.ancestors(node):
            if a is loop:
                return False
            if isinstance(a, GUARDS) and not (isinstance(a, cst.If) and child is a.test):
                if isinstance(a, cst.BooleanOperation) and child is a.left:
                    child = a
                    continue
                return True
            child = a
        return False
