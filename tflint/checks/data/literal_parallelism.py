"""TFL116 literal-parallelism: hard-coded parallelism or buffer sizes where AUTOTUNE adapts."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg, literal_value
from ..base import Check
from .sequential_tfrecord_reads import READERS

# dataset method -> (keyword, position) of a parallelism/buffer argument that accepts AUTOTUNE
METHOD_ARGS = {
    "map": ("num_parallel_calls", 1),
    "interleave": ("num_parallel_calls", 3),
    "batch": ("num_parallel_calls", 2),
    "prefetch": ("buffer_size", 0),
}


class LiteralParallelism(Check):
    code = "TFL116"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        spec = None
        if isinstance(func, cst.Attribute) and func.attr.value in METHOD_ARGS:
            spec = METHOD_ARGS[func.attr.value]
            arg = get_arg(node, *spec)
            if arg is None or self._literal(arg.value) is None or not self.datasets.is_dataset(func.value):
                return
            where = f"`{func.attr.value}({spec[0]}=...)`"
        else:
            q = self.sem.call_name(node)
            if q not in READERS:
                return
            spec = ("num_parallel_reads", READERS[q])
            arg = get_arg(node, *spec)
            if arg is None or self._literal(arg.value) is None:
                return
            where = f"`{q.rsplit('.', 1)[-1]}(num_parallel_reads=...)`"
        value = self._literal(arg.value)
        if value == 1 and spec[0] != "buffer_size":
            return  # explicitly sequential: a decision, not a tuning constant
        spelling = self._autotune(node)
        if value == -1:
            message = f"{where} is `-1`: that is AUTOTUNE spelled as a magic number"
            app = Applicability.SAFE
        else:
            message = (f"{where} is hard-coded to {value}: tuned for one machine; AUTOTUNE sizes it from the cores "
                       "and the measured throughput at run time")
            app = Applicability.UNSAFE
        if spelling is None:
            self.report(arg.value, message)
            return
        note = ""
        if spec[0] == "num_parallel_reads" and value != -1:
            # a literal is the reader's cycle length (files read in turn); AUTOTUNE picks its own
            note = " (changes record order: AUTOTUNE picks how many files are read in turn)"
        self.report(arg.value, message, replacement=cst.parse_expression(spelling),
                    fix_message=f"Use `{spelling}`{note}", applicability=app)

    def _autotune(self, node: cst.Call) -> Optional[str]:
        from ..common import autotune

        return autotune(self.sem, self.oldest_version, node)

    def _literal(self, expr: cst.BaseExpression) -> Optional[int]:
        v = literal_value(expr)
        if isinstance(v, int) and not isinstance(v, bool) and (v >= 1 or v == -1):
            return v
        return None
