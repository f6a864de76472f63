"""TFL122 preprocessing-in-train-loop: a `tf.image.*`, `tf.strings.*`, NumPy or Keras `preprocess_input` transform
applied, in the Python loop that trains, to the batch a tf.data dataset yielded, on every step.

The loop: a `for` over a dataset traced to its tf.data constructor (also through `enumerate`, `zip`, `tqdm`),
outside any graph function, whose body calls a training step (a same-file function that applies gradients, see
`common.applies_gradients`, or `model.train_on_batch`). The transform: a call whose qualified name starts with
`tensorflow.image.`, `tensorflow.strings.`, `numpy.` or ends with `applications.*.preprocess_input`, that takes an
element the loop yields (a loop variable, a field of it such as `batch["image"]`, or a name bound in the loop body
to one of those or to an earlier transform of one), runs on every iteration (not under an `if`), and whose result
reaches the training call's arguments. One finding per loop, at its first such transform.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..base import Check
from ..common import APPLY_METHODS, applies_gradients, calls_in_function, is_small_loop, nodes_under

TRANSFORM_PREFIXES = ("tensorflow.image.", "tensorflow.strings.", "numpy.", "tensorflow.compat.v1.image.")
# NumPy calls that only look (no per-element work a map would take over)
NUMPY_LOOKS = frozenset({"numpy.shape", "numpy.ndim", "numpy.size", "numpy.isscalar", "numpy.dtype", "numpy.iinfo",
                         "numpy.finfo", "numpy.result_type"})
GUARDS = (cst.If, cst.IfExp, cst.ExceptHandler, cst.BooleanOperation, cst.While, cst.For)
TRAIN_METHODS = frozenset({"train_on_batch"})


class PreprocessingInTrainLoop(Check):
    code = "TFL122"
    training_input = False

    def visit_For(self, node: cst.For) -> None:
        if self.ctx.target.tf1 or self.target_version < (2, 0) or self.functions.tf_function_of(node) is not None:
            return
        elements = self._element_names(node)
        if not elements or is_small_loop(self.sem, node):
            return
        owner = self.functions.owner(node)
        calls = [c for c in nodes_under(node.body, cst.Call) if self.functions.owner(c) is owner]
        steps = [c for c in calls if self._trains(c)]
        inline = any(isinstance(c.func, cst.Attribute) and c.func.attr.value in APPLY_METHODS for c in calls)
        if not steps and not inline:
            return
        derived = set(elements)
        for stmt in self._body_statements(node):
            for call in self._in_order(nodes_under(stmt, cst.Call)):
                if self.functions.owner(call) is not owner or self._guarded(call, node):
                    continue
                op = self._transform(call) if self._takes(call, derived) else None
                if op is None:
                    continue
                target = self._assigned_name(call)
                if target is not None:
                    derived.add(target)
                if self._reaches_step(call, target, steps, node, inline):
                    q = self.names.call_name(op) or ""
                    where = "NumPy, on the host" if q.startswith("numpy.") else "eagerly, op by op"
                    via = f" (`{self.code_for(op.func)}`)" if op is not call else ""
                    self.report(call, f"`{self.code_for(call.func)}(...)`{via} transforms each batch the dataset yields "
                                      f"inside the training loop ({where}), between training steps: it runs "
                                      f"serially with the step. Move it into the pipeline (`ds.map(...)`, before "
                                      f"`prefetch`), where tf.data runs it in parallel and overlaps it with training",
                                start_node=call.func)
                    return
            # names bound in the body to a field of an element (`images = batch["image"]`) are elements too
            for assign in nodes_under(stmt, cst.Assign):
                if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and \
                        self._field_of(assign.value, derived):
                    derived.add(assign.targets[0].target.value)

    # -- the loop -----------------------------------------------------------------------------------------------
    def _element_names(self, loop: cst.For) -> set[str]:
        """Names the loop binds to elements of a tf.data dataset: `for x, y in ds`, `for i, (x, y) in
        enumerate(ds)`, `for batch in tqdm(ds)`."""
        it, target = loop.iter, loop.target
        while isinstance(it, cst.Call) and self.sem.call_name(it) in ("tqdm.tqdm", "tqdm.auto.tqdm",
                                                                      "tqdm.notebook.tqdm") and it.args:
            it = it.args[0].value
        if isinstance(it, cst.Call) and self.sem.call_name(it) == "builtins.enumerate" and it.args:
            if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                return set()
            it, target = it.args[0].value, target.elements[1].value
        if not self.datasets.is_dataset(it):
            return set()
        return {n.value for n in nodes_under(target, cst.Name)}

    def _trains(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in TRAIN_METHODS:
            return True
        target = self.functions.resolve_callable(func)
        return target is not None and applies_gradients(self.sem, target)

    def _body_statements(self, loop: cst.For) -> list[cst.CSTNode]:
        body = loop.body
        return list(body.body) if isinstance(body, cst.IndentedBlock) else [body]

    def _in_order(self, nodes: list) -> list:
        return sorted(nodes, key=lambda n: self.index.pre.get(id(n), 0))

    def _guarded(self, node: cst.CSTNode, loop: cst.For) -> bool:
        child = node
        for a in self.index.ancestors(node):
            if a is loop:
                return False
            if isinstance(a, GUARDS) and not (isinstance(a, cst.If) and child is a.test):
                return True
            child = a
        return False

    # -- the transform ----------------------------------------------------------------------------------------------
    def _transform(self, call: cst.Call) -> Optional[cst.Call]:
        """The transform `call` makes: itself, or for a same-file helper (`preprocess(x)`) that is not a training
        step, the first transform in its body (two calls deep)."""
        if self._transform_name(self.names.call_name(call) or ""):
            return call
        target = self.functions.resolve_callable(call.func)
        if target is None or applies_gradients(self.sem, target):
            return None
        for inner, q in calls_in_function(self.sem, target, 1):
            if self._transform_name(q or ""):
                return inner
        return None

    def _transform_name(self, q: str) -> bool:
        if q in NUMPY_LOOKS:
            return False
        if q.startswith(TRANSFORM_PREFIXES):
            return True
        return q.startswith("keras.applications.") and q.endswith(".preprocess_input")

    def _takes(self, call: cst.Call, names: set[str]) -> bool:
        return any(not a.star and self._field_of(a.value, names) for a in call.args[:1])

    def _field_of(self, expr: cst.BaseExpression, names: set[str]) -> bool:
        """`expr` is an element name or a field of one (`batch["image"]`, `batch[0]`)."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        return isinstance(expr, cst.Name) and expr.value in names

    def _assigned_name(self, call: cst.Call) -> Optional[str]:
        parent = self.index.parent(call)
        if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1 and \
                isinstance(parent.targets[0].target, cst.Name):
            return parent.targets[0].target.value
        return None

    def _reaches_step(self, call: cst.Call, target: Optional[str], steps: list[cst.Call], loop: cst.For,
                      inline: bool) -> bool:
        """The transform's result is an argument of a training call later in the loop body: the call is inside the
        step call's arguments, or its name (followed through later assignments in the body) is. In a loop that
        applies gradients itself (a GradientTape written inline), a later use of the name anywhere in the body."""
        for step in steps:
            if self.index.contains(step, call):
                return True
        if target is None:
            return False
        names = {target}
        after = self.index.pre.get(id(call), 0)
        for assign in self._in_order(nodes_under(loop.body, cst.Assign)):
            if self.index.pre.get(id(assign), 0) > after and len(assign.targets) == 1 and \
                    isinstance(assign.targets[0].target, cst.Name) and \
                    any(n.value in names for n in nodes_under(assign.value, cst.Name)):
                names.add(assign.targets[0].target.value)
        for step in steps:
            if self.index.pre.get(id(step), 0) > after and \
                    any(n.value in names for a in step.args for n in nodes_under(a.value, cst.Name)):
                return True
        if inline:
            stmt = self.index.statement_of(call)
            end = self.index.pre.get(id(stmt), after)
            return any(self.index.pre.get(id(n), 0) > end and n.value in names and not self._bound_here(n)
                       for n in nodes_under(loop.body, cst.Name))
        return False

    def _bound_here(self, name: cst.Name) -> bool:
        parent = self.index.parent(name)
        return isinstance(parent, cst.AssignTarget) and parent.target is name
