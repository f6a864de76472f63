"""TFL123 flat-map-over-files: `files.flat_map(lambda f: tf.data.TFRecordDataset(f))` reads the files one after
another on one thread, where `interleave(..., num_parallel_calls=AUTOTUNE)` reads several in parallel.

Reported when the receiver is a tf.data pipeline (traced to its constructor) and the function given to `flat_map`
is a record reader itself (`flat_map(tf.data.TFRecordDataset)`) or a same-file lambda/def that returns a pipeline
whose source is a record reader (`TFRecordDataset`, `TextLineDataset`, `FixedLengthRecordDataset`, `CsvDataset`)
opened on its parameter. `flat_map` over anything else (unbatching a window, `from_tensor_slices` of an element) is
silent. The fix (unsafe: the records of several files are interleaved, so their order changes) renames the call to
`interleave` and adds `num_parallel_calls=AUTOTUNE`.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from ..common import add_keyword_arg, autotune, nodes_under

READERS = frozenset({"tensorflow.data.TFRecordDataset", "tensorflow.data.TextLineDataset",
                     "tensorflow.data.FixedLengthRecordDataset", "tensorflow.data.experimental.CsvDataset"})


class FlatMapOverFiles(Check):
    code = "TFL123"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "flat_map" or any(a.star for a in node.args):
            return
        if self.ctx.target.tf1 and self.target_version < (1, 13):
            return
        if not self.datasets.is_dataset(func.value):
            return
        arg = get_arg(node, "map_func", 0)
        reader = self._reader(arg.value) if arg is not None else None
        if reader is None or self._other_branch_interleaves(node):
            return
        message = (f"`flat_map` over file names with a `{reader}` per file reads the files one after another, on one "
                   f"thread; `interleave(..., num_parallel_calls=AUTOTUNE)` opens several files at once and reads them "
                   f"in parallel (the records of those files are then interleaved)")
        spelling = autotune(self.sem, self.oldest_version, node)
        if spelling is None:
            self.report(node, message, start_node=func.attr)
            return
        renamed = node.with_changes(func=func.with_changes(attr=cst.Name("interleave")))
        self.report(node, message, start_node=func.attr,
                    replacement=add_keyword_arg(renamed, "num_parallel_calls", spelling),
                    fix_message=f"Use `interleave(..., num_parallel_calls={spelling})` (the records of several files "
                                "are interleaved: their order changes)",
                    applicability=Applicability.UNSAFE)

    def _other_branch_interleaves(self, node: cst.Call) -> bool:
        """The `flat_map` is one branch of an `if` whose other branch reads in parallel (`if shuffle_files:
        ds.apply(parallel_interleave(...)) else: ds.flat_map(TFRecordDataset)`): the sequential, ordered read is the
        deliberate choice of that branch (google/uncertainty-baselines' deterministic evaluation order)."""
        child: cst.CSTNode = node
        for a in self.index.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Module)):
                return False
            if isinstance(a, cst.If):
                other = a.orelse if child is a.body else a.body if child is a.orelse else None
                if other is not None and any(self._parallel_read(c) for c in nodes_under(other, cst.Call)):
                    return True
            child = a
        return False

    def _parallel_read(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "interleave":
            return get_arg(call, "num_parallel_calls", 3) is not None
        q = self.sem.call_name(call) or ""
        return q.endswith("parallel_interleave") or get_arg(call, "num_parallel_reads") is not None

    def _reader(self, expr: cst.BaseExpression) -> Optional[str]:
        """The reader's short name when `expr` opens a record reader on its argument."""
        q = self._canonical(self.names.qualified_name(expr))
        if q in READERS:
            return q.rsplit(".", 1)[-1]
        fn = self.functions.resolve_callable(expr)
        if fn is None:
            return None
        params = {p.name.value for p in self.functions.iter_params(fn)}
        if isinstance(fn, cst.Lambda):
            returns = [fn.body]
        else:
            returns = [r.value for r in self.functions.body_nodes(fn, cst.Return)
                       if self.functions.owner(r) is fn and r.value is not None]
        if not returns:
            return None
        found = None
        for value in returns:
            p = self.datasets.pipeline(value)
            src = p.source.call if p is not None else None
            q = self._canonical(self.sem.call_name(src)) if src is not None else None
            if q not in READERS:
                return None
            first = get_arg(src, "filenames", 0)
            if first is None or not ({n.value for n in nodes_under(first.value, cst.Name)} & params):
                return None  # not a file chosen by the element
            found = q.rsplit(".", 1)[-1]
        return found

    def _canonical(self, q: Optional[str]) -> Optional[str]:
        if q and q.startswith("tensorflow.compat.v1.data."):
            return "tensorflow.data." + q[len("tensorflow.compat.v1.data."):]
        return q
