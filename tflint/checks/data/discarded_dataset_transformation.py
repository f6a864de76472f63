"""TFL118 discarded-dataset-transformation: `ds.shuffle(1024)` as a statement of its own.

A `tf.data.Dataset` is immutable: every transformation returns a new dataset and leaves its receiver as it was, so
a transformation whose result is thrown away does nothing. Reported only when the receiver is traced to a tf.data
constructor (a pandas frame, a list, a PyTorch loader or a Hugging Face dataset is not), and not where discarding
is deliberate: test code (a test file or a `test*` function), a call expected to raise (`with pytest.raises(...)`,
`assertRaises`, a short `try` with an `except`), or a notebook cell's last statement, which IPython displays.
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg, literal_value
from ...semantics.datasets import DATASET_METHODS
from ...source import CELL_MARKER
from ..base import Check, NodeEdit

# Methods in DATASET_METHODS that return something other than a new dataset (or are not Dataset methods at all)
NOT_A_TRANSFORMATION = frozenset({"save", "distribute"})
TRANSFORMATIONS = DATASET_METHODS - NOT_A_TRANSFORMATION
# Context managers of tests that expect the code inside them to raise
RAISES = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assertRaisesOpError",
                    "assertRaisesWithPredicateMatch", "assertRaisesIncompatibleShapesError"})
TEST_FRAMEWORK = re.compile(r"\bimport pytest\b|\bunittest\b|\btf\.test\.|\babsltest\b|\bparameterized\b")


class DiscardedDatasetTransformation(Check):
    code = "TFL118"

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
            return
        method = call.func.attr.value
        if method not in TRANSFORMATIONS:
            return
        receiver = call.func.value
        if self.datasets.pipeline(receiver) is None:
            return  # unknown origin: silent
        if self._in_test(node) or self._expects_error(node) or self._displayed_by_notebook(node):
            return
        if self._done_anyway(call, method, receiver):
            return  # the pipeline gets the same step where it counts: the lost line changes nothing
        shown = self._short(call)
        message = (f"`{shown}` returns a new dataset that is thrown away: a `tf.data.Dataset` is immutable, so this "
                   f"statement does nothing and the pipeline is not {self._effect(method)}; assign the result")
        name = self._plain_local_name(receiver, node)
        if name is None:
            self.report(call, message, start_node=call.func.attr)
            return
        self.report(call, message, start_node=call.func.attr,
                    edits=[NodeEdit(call, "insert_before", text=f"{name} = ")],
                    applicability=Applicability.UNSAFE,
                    fix_message=f"Assign the result back (`{name} = {name}.{method}(...)`): this changes what the "
                                "pipeline yields, by design")

    def _done_anyway(self, call: cst.Call, method: str, receiver: cst.BaseExpression) -> bool:
        """The pipeline gets the thrown-away step anyway: a later statement of the same function applies the same
        method to the same variable and keeps it (`d.shuffle(n)` alone, then `d = d.shuffle(buffer_size=...)`: the
        dual-encoder launcher in google-research/federated), or for `shuffle`, its files are listed shuffled
        (`list_files(pattern, shuffle=is_training)`: tensor2robot). The statement is dead code, not a missing
        shuffle (rounds 26 and 28: judged not worth acting on)."""
        p = self.datasets.pipeline(receiver)
        if method == "shuffle" and p is not None and p.source.call is not None and p.source.kind == "files":
            flag = get_arg(p.source.call, "shuffle", 1)
            if flag is None or literal_value(flag.value) is not False:
                return True  # `list_files` shuffles by default, or as its argument says
        if not isinstance(receiver, cst.Name):
            return False
        owner = self.functions.owner(call)
        at = self.index.order_of(self.index.statement_of(call))
        for later in self.index.nodes(cst.Call):
            f = later.func
            if later is call or not (isinstance(f, cst.Attribute) and f.attr.value == method):
                continue
            if self.functions.owner(later) is not owner or self.index.order_of(self.index.statement_of(later)) <= at:
                continue
            base = f.value
            while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute):
                base = base.func.value  # `d = d.repeat().shuffle(n)`: the chain's first receiver
            if isinstance(base, cst.Name) and base.value == receiver.value \
                    and isinstance(self.index.parent(later), (cst.Assign, cst.Return, cst.Arg, cst.Attribute)):
                return True
        return False

    # -- when the result is thrown away on purpose ---------------------------------------------------------------
    def _in_test(self, node: cst.CSTNode) -> bool:
        """Test code: a test file (`tests/`, `test_*.py`, `*_test.py`) or a `test*` function in a file that uses a
        test framework. A test that builds
        `ds.map(layer)` and drops it checks that the function traces (Keras' own RandAugment test does)."""
        path = self.ctx.path.replace("\\", "/")
        name = path.rsplit("/", 1)[-1]
        if "/tests/" in f"/{path}" or name.startswith("test_") or name.endswith(("_test.py", "_tests.py")):
            return True
        if not TEST_FRAMEWORK.search(self.ctx.text):
            return False  # `def test_input_fn()` in a training script builds the test split: not test code
        fn = self.index.enclosing_function(node)
        while fn is not None:
            if fn.name.value.startswith("test"):
                return True
            fn = self.index.enclosing_function(fn)
        return False

    def _expects_error(self, node: cst.CSTNode) -> bool:
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.With):
                for item in anc.items:
                    c = item.item
                    if isinstance(c, cst.Call):
                        f = c.func
                        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
                        if name in RAISES:
                            return True
            elif isinstance(anc, cst.Try) and anc.handlers and len(anc.body.body) <= 2:
                return True  # a short `try` around it: called to see whether it raises
        return False

    def _displayed_by_notebook(self, node: cst.Expr) -> bool:
        """The last statement of a notebook cell at the top level: IPython shows its value (`ds.take(1)` to look)."""
        if not self.ctx.path.endswith(".ipynb"):
            return False
        line = self.index.parent(node)
        if not isinstance(line, cst.SimpleStatementLine) or line.body[-1] is not node:
            return False
        body = list(self.ctx.module.body)
        for i, stmt in enumerate(body):
            if stmt is line:
                if i + 1 == len(body):
                    return True
                nxt = body[i + 1]
                return any(e.comment is not None and e.comment.value.strip() == CELL_MARKER for e in nxt.leading_lines)
        return False

    # -- the fix ---------------------------------------------------------------------------------------------
    def _plain_local_name(self, receiver: cst.BaseExpression, stmt: cst.CSTNode) -> Optional[str]:
        """The receiver's name when assigning to it in this statement's scope rebinds the same variable (not a
        global or a closure's variable read from an inner function, where the assignment would make it local)."""
        if type(receiver) is not cst.Name or receiver.lpar:
            return None
        b = self.index.lookup(receiver.value, receiver)
        if b is None or b.scope is not self.index.scope_of(stmt).node:
            return None
        return receiver.value

    def _short(self, call: cst.Call) -> str:
        text = self.code_for(call)
        if "\n" in text or len(text) > 60:
            recv = self.code_for(call.func.value)
            if "\n" in recv or len(recv) > 30:
                recv = "..."
            return f"{recv}.{call.func.attr.value}(...)"
        return text

    @staticmethod
    def _effect(method: str) -> str:
        return {
            "shuffle": "shuffled", "map": "mapped", "batch": "batched", "padded_batch": "batched",
            "prefetch": "prefetched", "repeat": "repeated", "filter": "filtered", "cache": "cached",
            "with_options": "given these options", "take": "shortened", "skip": "shortened", "shard": "sharded",
            "unbatch": "unbatched", "interleave": "interleaved", "flat_map": "flat-mapped",
        }.get(method, "changed")
