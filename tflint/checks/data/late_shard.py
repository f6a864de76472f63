"""TFL117 late-shard: `.shard()` after reading records or after an expensive map."""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ...semantics import get_arg
from ..base import Check
from .chain import dataset_call

EXPENSIVE = ("map", "flat_map", "interleave", "filter", "map_with_legacy_function", "batch", "padded_batch")
READERS = ("records", "tfds")
# calls that return several file names (a list, or a dataset of names)
FILE_LISTS = frozenset({
    "glob.glob", "glob.iglob", "os.listdir", "builtins.sorted", "builtins.list",
    "tensorflow.io.gfile.glob", "tensorflow.io.gfile.listdir", "tensorflow.compat.v1.gfile.Glob",
    "tensorflow.compat.v1.io.gfile.glob", "tensorflow.gfile.Glob", "tensorflow.data.Dataset.list_files",
    "tensorflow.data.Dataset.from_tensor_slices", "tensorflow.compat.v1.data.Dataset.list_files",
})
# calls that return one path
ONE_FILE = frozenset({"os.path.join", "os.path.abspath", "os.path.expanduser", "builtins.str", "pathlib.Path"})
_SINGULAR = re.compile(r"(^|_)(file|filename|fname|path|filepath|file_path|file_name)$", re.I)
_PLURAL = re.compile(r"(^|_)(files|filenames|fnames|paths|filepaths|file_paths|file_names|file_list|filelist|"
                     r"patterns|shards|tfrecords)$", re.I)


class LateShard(Check):
    code = "TFL117"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("shard",))
        if p is None:
            return
        work = [s.method for s in p.steps[1:] if s.method in EXPENSIVE]
        if work:
            what = f"after `{work[0]}()`"
        elif p.source.kind == "tfds" and p.source.call is not None:
            what = "after reading the records"
        elif p.source.kind == "records" and p.source.call is not None and self._several_files(p.source.call):
            what = "after reading the records of several files"
        else:
            return  # right after a cheap source, or after a reader of one file (records are all there is to shard)
        self.report(
            node,
            f"`shard()` {what}: every worker reads (and transforms) all the data and then keeps 1/N of it; "
            "shard the list of files first (`list_files(..., shuffle=False).shard(...)`) or right after the source",
            start_node=node.func.attr,
        )

    def _several_files(self, reader: cst.Call) -> bool:
        """The record reader's input is a list of files (a list of two or more, a glob or listing, a dataset of
        names, a name spelled like a list of files): sharding those first was possible. One file (a string, a
        joined path, a name spelled like one file) or an input of unknown shape is not."""
        arg = get_arg(reader, "filenames", 0)
        return arg is not None and self._files_shape(arg.value) == "list"

    def _files_shape(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        if depth > 3:
            return None
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            if any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return "list"
            return "list" if len(expr.elements) > 1 else "one"
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return "list"
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return "one"  # the readers do not expand glob patterns: a string is one file
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            sides = (self._files_shape(expr.left, depth + 1), self._files_shape(expr.right, depth + 1))
            return "list" if "list" in sides else ("one" if "one" in sides else None)
        if isinstance(expr, cst.Call):
            q = self.sem.call_name(expr)
            if q in FILE_LISTS or self.datasets.is_dataset(expr):
                return "list"
            if q in ONE_FILE:
                return "one"
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "split":
                return "list"  # "a.txt,b.txt".split(",")
            return None
        name = None
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind in ("assign", "annassign") and b.value is not None:
                shape = self._files_shape(b.value, depth + 1)
                if shape is not None:
                    return shape
            name = expr.value
        elif isinstance(expr, cst.Attribute):
            name = expr.attr.value
        elif isinstance(expr, cst.Subscript) and isinstance(expr.value, (cst.Name, cst.Attribute)):
            return None  # params["files"], files[0]: unknown
        if name is not None:
            if _PLURAL.search(name):
                return "list"
            if _SINGULAR.search(name):
                return "one"
        return None
