"""TFL501 variables-outside-strategy-scope: a model/optimizer/metric/Variable created outside `strategy.scope()`."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...source import CELL_MARKER as MARKER
from ..base import Check
from ..common import nodes_under
from ..keras.models import model_constructor
from .strategy import in_strategy_scope, is_strategy_constructor, scope_blocks

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

    # -- evidence that the object takes part in distributed computation ----------------------------------------
    def _handle(self, call: cst.Call) -> Optional[tuple]:
        """How the created object is reached later: ("name", x), ("attr", x) for `self.x`, ("key", d, k) for a
        literal key of a dict `d` (`d = {k: ...}`, `d[k] = ...`, `d.update({k: ...})`); None when not known."""
        parent = self.index.parent(call)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            t = parent.targets[0].target
            if isinstance(t, cst.Name):
                return ("name", t.value)
            if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                return ("attr", t.attr.value)
            if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name):
                key = _literal_key(t)
                return ("key", t.value.value, key) if key is not None else None
            return None
        if isinstance(parent, cst.DictElement) and parent.value is call:
            key = parent.key.evaluated_value if isinstance(parent.key, cst.SimpleString) else None
            d = self.index.parent(parent)
            holder = self.index.parent(d) if d is not None else None
            if key is None or not isinstance(d, cst.Dict):
                return None
            if isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name):
                return ("key", holder.targets[0].target.value, key)
            arg_of = self.index.parent(self.index.parent(d)) if isinstance(holder, cst.Arg) else None
            if isinstance(arg_of, cst.Call) and isinstance(arg_of.func, cst.Attribute) and \
                    arg_of.func.attr.value == "update" and isinstance(arg_of.func.value, cst.Name):
                return ("key", arg_of.func.value.value, key)
        return None

    def _replica_functions(self) -> list:
        """The same-file functions run in a replica context: the callables passed to `<strategy>.run(...)`."""
        if getattr(self, "_replicas", None) is None:
            self._replicas = []
            for c in self.index.nodes(cst.Call):
                f = c.func
                if isinstance(f, cst.Attribute) and f.attr.value in ("run", "experimental_run_v2", "experimental_run") \
                        and c.args and self.functions._looks_like_strategy(f.value):
                    fn = self.functions.resolve_callable(c.args[0].value)
                    if fn is not None:
                        self._replicas.append(fn)
        return self._replicas

    def _refers(self, node: cst.CSTNode, handle: tuple) -> bool:
        kind = handle[0]
        if kind == "name":
            return isinstance(node, cst.Name) and node.value == handle[1] and not (
                isinstance(self.index.parent(node), cst.Attribute) and self.index.parent(node).attr is node)
        if kind == "attr":
            return isinstance(node, cst.Attribute) and node.attr.value == handle[1] and \
                isinstance(node.value, cst.Name) and node.value.value == "self"
        return isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and \
            node.value.value == handle[1] and _literal_key(node) == handle[2]

    def _used_distributed(self, call: cst.Call, what: str) -> bool:
        """Evidence that the object created by `call` takes part in distributed computation: it is used inside a
        function run by `strategy.run`, or (a model) trained with `fit`/`compile`d, or (an optimizer or metric)
        passed to a `compile`."""
        handle = self._handle(call)
        if handle is None:
            return False
        typ = cst.Name if handle[0] == "name" else cst.Attribute if handle[0] == "attr" else cst.Subscript
        if handle[0] == "name":  # the uses of the name, from the index, instead of every node of each function
            uses = [n for n in self.index.names_named(handle[1]) if self._refers(n, handle)]
            if any(self.index.contains(fn, n) for fn in self._replica_functions() for n in uses):
                return True
        else:
            for fn in self._replica_functions():
                if any(self._refers(n, handle) for n in self.functions.body_nodes(fn, typ)):
                    return True
        for c in self.index.nodes(cst.Call):
            f = c.func
            if not isinstance(f, cst.Attribute):
                continue
            if what == "a Keras model" and f.attr.value in ("fit", "compile") and self._refers(f.value, handle):
                return True
            if f.attr.value == "compile" and any(self._refers(n, handle) for a in c.args for n in nodes_under(a.value, typ)):
                return True
        return False

    def _other_branch_scoped(self, node: cst.CSTNode) -> bool:
        """`node` is in the `else:` (or `elif`) of an `if` whose body opens `strategy.scope()`: the two branches are
        the distributed and the single-device way, and the strategy exists only on the first."""
        child = node
        for a in self.index.ancestors(node):
            if isinstance(a, cst.If) and child is not a.body and child is not a.test:
                if any(self.index.contains(a.body, w) for w in scope_blocks(self.sem)):
                    return True
            child = a
        return False

    def _builder_scopes(self, call: cst.Call) -> bool:
        """`call` runs a same-file function that opens `strategy.scope()` itself (`def get_model(): with
        strategy.scope(): model = ...`; `compile` after the block is allowed): the model is created in scope."""
        fn = self.functions.resolve_callable(call.func)
        return isinstance(fn, cst.FunctionDef) and any(self.index.contains(fn, w) for w in scope_blocks(self.sem))

    def _scoped_counterpart(self, call: cst.Call, owner, what: str) -> bool:
        """The same function (or module) also creates the same kind of object inside `strategy.scope()` and uses it
        too (trains the model, compiles the optimizer): the unscoped one is its deliberate single-device counterpart,
        a baseline the distributed result is compared against."""
        for w in scope_blocks(self.sem):
            if self.functions.owner(w) is not owner:
                continue
            for c in nodes_under(w.body, cst.Call):
                if c is not call and self._creates(c) == what and self._used_distributed(c, what):
                    return True
        return False

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
        if self._other_branch_scoped(node):
            return  # `if distributed: with strategy.scope(): ... else: ...`: the else runs with no strategy
        if not self._used_distributed(node, what):
            return  # a claim needs evidence: host-side metrics, step counters and CPU-evaluation models stay silent
        if self._builder_scopes(node) or self._scoped_counterpart(node, owner, what):
            return  # created in scope by the builder, or the single-device baseline of a scoped twin
        name = strategy.rsplit(".", 1)[-1]
        self.report(node, f"{what} is created after a `{name}` exists but outside `with strategy.scope():`: its "
                          "variables are not distributed (not mirrored across replicas), so training does not run "
                          "as the strategy intends or fails later")


def _literal_key(sub: cst.Subscript) -> Optional[str]:
    if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index):
        v = sub.slice[0].slice.value
        if isinstance(v, cst.SimpleString):
            return v.evaluated_value
    return None

