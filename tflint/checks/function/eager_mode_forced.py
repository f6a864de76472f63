"""TFL209 eager-mode-forced: `tf.config.run_functions_eagerly(True)`, `compile(run_eagerly=True)` or
`model.run_eagerly = True` left in code."""
from __future__ import annotations

import re

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg, literal_value
from ..base import Check, NodeEdit

RUN_EAGERLY = frozenset({"tensorflow.config.run_functions_eagerly",
                         "tensorflow.config.experimental_run_functions_eagerly"})
TEST_FILE = re.compile(r"(^|[/\\])(test_[^/\\]*|[^/\\]*_test)\.py$|(^|[/\\])(tests?|testing)[/\\]")
KERAS_LOOPS = frozenset({"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch",
                         "fit_generator", "evaluate_generator", "predict_generator"})
MESSAGE_TAIL = "every tf.function (and Keras `train_step`) then runs op by op in Python, without graph optimizations"


# how the unsafe fix can break, in its message (issue 15)
EAGER_NOTE = (" (code that works only eagerly, e.g. `.numpy()` or Python side effects in a step, then fails or runs "
              "once per trace)")

class EagerModeForced(Check):
    code = "TFL209"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._test_file = bool(TEST_FILE.search(ctx.path or ""))

    def visit_Call(self, node: cst.Call) -> None:
        if self._test_file:
            return  # tests force eager execution on purpose (to step through, or to compare modes)
        q = self.names.call_name(node)
        if q in RUN_EAGERLY:
            arg = get_arg(node, "run_eagerly", 0)
            if arg is None or literal_value(arg.value) is not True or self._conditional(node):
                return
            if self._switched_back(node):
                return  # `run_functions_eagerly(False)` later: a demonstration of eager mode, then graphs again
            self._remove_statement(node, f"`{self.code_for(node.func)}(True)` forces eager execution: {MESSAGE_TAIL}")
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "compile":
            arg = get_arg(node, "run_eagerly")
            if arg is None or self._conditional(node):
                return
            if q is not None and not self.names.is_tf(q):
                return  # re.compile & co
            if literal_value(arg.value) is not True:
                param = self._true_by_default(arg.value)
                if param is not None:
                    # `def train(..., run_eagerly: bool = True): model.compile(..., run_eagerly=run_eagerly)`: every
                    # caller that leaves the default trains eagerly (LongxingTan/Time-series-prediction's trainer, a
                    # miss in round 18); changing the default is an API decision, so no fix is offered
                    self.report(node, f"`compile(run_eagerly={param})` and `{param}` defaults to True: {MESSAGE_TAIL}",
                                start_node=arg.keyword)
                return
            if self._never_run_by_keras(func.value):
                return  # the model is only called and trained by a hand-written step: the flag changes nothing
            new_args = [a for a in node.args if a is not arg]
            if new_args and node.args[-1] is arg:
                new_args[-1] = new_args[-1].with_changes(comma=arg.comma)  # keep a trailing comma's layout
            self.report(node, f"`compile(run_eagerly=True)`: {MESSAGE_TAIL}", start_node=arg.keyword,
                        replacement=node.with_changes(args=new_args), applicability=Applicability.UNSAFE,
                        fix_message="Remove `run_eagerly=True`" + EAGER_NOTE)

    def _never_run_by_keras(self, model: cst.BaseExpression) -> bool:
        """`run_eagerly` only affects Keras's own loops (`fit`, `evaluate`, `predict`, `*_on_batch`): a model this file
        compiles and never runs through one of them, and does not hand on (returned, stored, passed), is only called
        directly by a hand-written step (round 28: GAIL's policy and discriminator, 2 findings judged false)."""
        if not isinstance(model, cst.Name):
            return False
        b = self.index.lookup(model.value, model)
        if b is None or b.kind not in ("assign", "annassign"):
            return False
        for use in self.index.names_named(model.value):
            if self.index.lookup(model.value, use) is not b:
                continue
            parent = self.index.parent(use)
            if isinstance(parent, cst.Attribute) and parent.value is use:
                if parent.attr.value in KERAS_LOOPS:
                    return False
                continue
            if isinstance(parent, (cst.Return, cst.Arg, cst.Element, cst.AssignTarget, cst.Yield)) or (
                    isinstance(parent, cst.Assign) and parent.value is use):
                return False  # handed on: who runs it is not known here
        return True

    def _switched_back(self, node: cst.Call) -> bool:
        """A later `run_functions_eagerly(False)` in the same function or module (a notebook's cells are one module):
        eager mode is switched on to show or debug something and off again (round 22: TensorFlow's "Introduction to
        graphs" guide, 2 findings judged false)."""
        owner = self.functions.owner(node)
        at = self.index.order_of(self.index.statement_of(node))
        for call in self.index.nodes(cst.Call):
            if call is node or self.names.call_name(call) not in RUN_EAGERLY or self.functions.owner(call) is not owner:
                continue
            arg = get_arg(call, "run_eagerly", 0)
            if arg is not None and literal_value(arg.value) is False \
                    and self.index.order_of(self.index.statement_of(call)) > at:
                return True
        return False

    def _true_by_default(self, value: cst.BaseExpression):
        """The name of the enclosing function's parameter `value` is, when its default is the literal True."""
        if not isinstance(value, cst.Name):
            return None
        b = self.index.lookup(value.value, value)
        if b is None or b.kind != "param" or not isinstance(b.node, cst.Param) or b.node.default is None:
            return None
        return value.value if literal_value(b.node.default) is True else None

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._test_file or len(node.targets) != 1:
            return
        t = node.targets[0].target
        if isinstance(t, cst.Attribute) and t.attr.value == "run_eagerly" and literal_value(node.value) is True:
            if self._conditional(node) or not self.names.file_imports_tf():
                return
            self._remove_statement(node, f"`{self.code_for(t)} = True` forces eager execution: {MESSAGE_TAIL}")

    def _conditional(self, node: cst.CSTNode) -> bool:
        """Under an `if` (a debug switch) or in a test helper: deliberate."""
        return any(isinstance(a, (cst.If, cst.IfExp)) for a in self.index.ancestors(node))

    def _remove_statement(self, node: cst.CSTNode, message: str) -> None:
        stmt = self.index.parent(node)
        if isinstance(node, cst.Call) and isinstance(stmt, cst.Expr):
            stmt = self.index.parent(stmt)
        elif isinstance(node, cst.Assign):
            stmt = self.index.parent(node)
        else:
            stmt = None
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            self.report(node, message)
            return
        block = self.index.parent(stmt)
        body = getattr(block, "body", None)
        if isinstance(block, cst.IndentedBlock) and isinstance(body, (list, tuple)) and len(body) == 1:
            edit = NodeEdit(node, "replace", text="pass")
        else:
            edit = NodeEdit(stmt, "delete")
        self.report(node, message, edits=[edit], applicability=Applicability.UNSAFE, fix_message="Remove it" + EAGER_NOTE)
