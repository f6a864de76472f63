"""TFL109 sequential-tfrecord-reads: a record reader over several files with no `num_parallel_reads`."""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from .chain import inside_parallel_interleave, read_once_pipeline
from ..common import add_keyword_arg, autotune

READERS = {  # qualified name -> (position of filenames, position of num_parallel_reads)
    "tensorflow.data.TFRecordDataset": 3,
    "tensorflow.data.TextLineDataset": 3,
    "tensorflow.data.FixedLengthRecordDataset": 6,
    "tensorflow.compat.v1.data.TFRecordDataset": 3,
    "tensorflow.compat.v1.data.TextLineDataset": 3,
    "tensorflow.compat.v1.data.FixedLengthRecordDataset": 6,
}
# Calls that return a list of several file names
MANY_FILES = frozenset({"glob.glob", "glob.iglob", "tensorflow.io.gfile.glob", "tensorflow.io.matching_files",
                        "tensorflow.compat.v1.gfile.Glob", "tensorflow.gfile.Glob", "os.listdir",
                        "tensorflow.io.gfile.listdir"})

# `num_parallel_reads` of the readers that did not always have it (read from the releases' readers.py: TF 1.12's
# TextLineDataset and FixedLengthRecordDataset take (filenames, compression_type, buffer_size[, ...]) only, TF 1.14's
# take num_parallel_reads; TFRecordDataset has it in 1.12 already)
PARALLEL_READS_SINCE = {"TextLineDataset": (1, 14), "FixedLengthRecordDataset": (1, 14)}
GLOBS = MANY_FILES - {"os.listdir", "tensorflow.io.gfile.listdir"}  # the ones that take a pattern
_WILDCARD = re.compile(r"[*?\[]")
_JOINS = frozenset({"os.path.join", "posixpath.join", "tensorflow.io.gfile.join", "pathlib.Path"})


def _pattern_wildcards(sem, expr: cst.BaseExpression, depth: int) -> Optional[bool]:
    """Whether the text of a glob pattern has a wildcard: True when a literal part of it does, False when it has
    literal parts and none does (`"%s.%s" % (prefix, lang)`, `f"{d}/train.csv"`: the name of one file, the values
    put into it being names too), None when nothing of it is literal (a parameter, a flag)."""
    if depth > 4:
        return None
    if isinstance(expr, cst.SimpleString):
        return bool(_WILDCARD.search(expr.evaluated_value if isinstance(expr.evaluated_value, str) else ""))
    if isinstance(expr, cst.ConcatenatedString):
        return _either(_pattern_wildcards(sem, e, depth + 1) for e in (expr.left, expr.right))
    if isinstance(expr, cst.FormattedString):
        text = "".join(p.value for p in expr.parts if isinstance(p, cst.FormattedStringText))
        return bool(_WILDCARD.search(text)) if text else None
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Modulo):
            return _pattern_wildcards(sem, expr.left, depth + 1)
        if isinstance(expr.operator, (cst.Add, cst.Divide)):
            return _either(_pattern_wildcards(sem, e, depth + 1) for e in (expr.left, expr.right))
        return None
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
            return _pattern_wildcards(sem, expr.func.value, depth + 1)
        if sem.call_name(expr) in _JOINS:
            return _either(_pattern_wildcards(sem, a.value, depth + 1)
                           for a in expr.args if not a.star and a.keyword is None)
        return None
    if isinstance(expr, cst.Name):
        b = sem.index.lookup(expr.value, expr)
        if b is not None and b.kind in ("assign", "annassign") and b.value is not None and b.value is not expr:
            return _pattern_wildcards(sem, b.value, depth + 1)
        if b is not None and b.kind == "param" and isinstance(b.node, cst.Param):
            return _passed_patterns(sem, b.node, depth)
    return None


def _passed_patterns(sem, param: cst.Param, depth: int) -> Optional[bool]:
    """A pattern that is a parameter of a same-file function (not a method): what its callers pass. False when every
    call passes the name of one file (`file_pattern="{}/train.tfrecord".format(data_dir)`), True when one passes a
    wildcard, None when a call passes nothing literal or the function is not called here."""
    args = sem.functions.arguments_passed(param)
    if not args or None in args:
        return None
    parts = [_pattern_wildcards(sem, arg.value, depth + 1) for arg in args]
    if None in parts:
        return None
    return any(parts)


def _either(parts) -> Optional[bool]:
    """Joined pattern parts: True when any has a wildcard, False when some are literal and none has one."""
    parts = list(parts)
    return True if True in parts else (False if False in parts else None)


class SequentialTfrecordReads(Check):
    code = "TFL109"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        q = self.sem.call_name(node)
        if q not in READERS:
            return
        if get_arg(node, "num_parallel_reads", READERS[q]) is not None or any(a.star for a in node.args):
            return
        files = get_arg(node, "filenames", 0)
        if files is None:
            return
        why = self._several(files.value, 0)
        if why is None or inside_parallel_interleave(self.sem, node):
            return
        if self._single_file_branch(node, files.value):
            return  # the `else:` of `if len(files) > 1:`: this reader only ever gets one file
        if read_once_pipeline(self.sem, node):
            return  # an evaluation input (`else:` of `if is_training:`, `val_ds = ...`): read once per evaluation
        cls = q.rsplit(".", 1)[-1]
        since = PARALLEL_READS_SINCE.get(cls)
        if since is not None and self.oldest_version < since:
            self.report(node, f"`{cls}` over {why}: the files are read one after another on one thread; this "
                              f"project's oldest TensorFlow has no `num_parallel_reads` on `{cls}` (it came in "
                              f"{since[0]}.{since[1]}): read the files in parallel with a parallel interleave of one "
                              f"`{cls}` per file")
            return
        message = (f"`{cls}` over {why} without `num_parallel_reads`: the files are read one after another on one "
                   "thread; `num_parallel_reads` reads them in parallel (records of different files interleave)")
        spelling = autotune(self.sem, self.oldest_version, node)
        if spelling is None:
            self.report(node, message)
            return
        self.report(node, message, replacement=add_keyword_arg(node, "num_parallel_reads", spelling),
                    fix_message=f"Add `num_parallel_reads={spelling}` (changes record order)",
                    applicability=Applicability.UNSAFE)

    def _single_file_branch(self, node: cst.Call, files: cst.BaseExpression) -> bool:
        """`node` sits where a count test of its file list says one file: the `else:` of `if len(files) > 1:`
        (or `>= 2`), or the body of `if len(files) == 1:` (or `<= 1`, `< 2`)."""
        names = {n.value for n in [files, *self.index.nodes_inside(files, cst.Name)] if isinstance(n, cst.Name)}
        child: cst.CSTNode = node
        for a in self.index.ancestors(node):
            if isinstance(a, cst.If):
                many = _count_test(a.test, names)
                if many is not None and ((child is a.orelse and many) or (child is a.body and not many)):
                    return True
            child = a
        return False

    def _grown(self, name: cst.Name, depth: int) -> Optional[str]:
        """`files = []` then, before the reader in the same function, `files.extend(glob(p))` (files of a glob) or
        `files.append(f)` in a loop: several files."""
        owner = self.functions.owner(name)
        for call in self.index.nodes(cst.Call):
            f = call.func
            if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name.value
                    and f.attr.value in ("extend", "append") and call.args) or self.functions.owner(call) is not owner:
                continue
            if self.index.order_of(call) > self.index.order_of(name):
                continue
            if f.attr.value == "extend":
                why = self._several(call.args[0].value, depth + 1)
                if why is not None:
                    return why
            elif self.index.enclosing_loops(call):
                return "a list of files"
        return None

    def _several(self, expr: cst.BaseExpression, depth: int) -> Optional[str]:
        """Why `expr` names several files, or None when that is not evident."""
        if depth > 4:
            return None
        if isinstance(expr, (cst.List, cst.Tuple)):
            if len(expr.elements) >= 2 or any(isinstance(e, cst.StarredElement) for e in expr.elements):
                return "a list of files"
            return None
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return "a list of files"
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind in ("assign", "annassign") and b.value is not None:
                if isinstance(b.value, cst.List) and not b.value.elements:
                    return self._grown(expr, depth)
                return self._several(b.value, depth + 1)
            return None
        if isinstance(expr, cst.Call):
            q = self.sem.call_name(expr)
            if q in MANY_FILES:
                if q in GLOBS and expr.args and _pattern_wildcards(self.sem, expr.args[0].value, 0) is False:
                    return None  # `glob("data/train.csv")`, `Glob("%s.%s" % (prefix, lang))`: one file's name
                return f"the files of `{self.code_for(expr.func)}`"
            if q in ("builtins.sorted", "builtins.list") and expr.args:
                return self._several(expr.args[0].value, depth + 1)
            p = self.datasets.pipeline(expr)
            if p is not None and p.source.kind == "files":
                src = p.source.call
                pattern = get_arg(src, "file_pattern", 0) if src is not None else None
                if pattern is not None and isinstance(src.func, cst.Attribute) and src.func.attr.value == "list_files" \
                        and _pattern_wildcards(self.sem, pattern.value, depth + 1) is False:
                    return None  # `Dataset.list_files("{}/train.tfrecord".format(d))`: one file's name
                return "a dataset of file names"
            return None
        return None


def _count_test(test: cst.BaseExpression, names: set[str]) -> Optional[bool]:
    """For `len(x) > 1` / `len(x) >= 2` (x one of `names`): True (the test means several files); for
    `len(x) == 1` / `<= 1` / `< 2`: False (one file); otherwise None."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    left, comp = test.left, test.comparisons[0]
    if not (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len"
            and len(left.args) == 1 and isinstance(left.args[0].value, cst.Name) and left.args[0].value.value in names):
        return None
    right = comp.comparator
    n = int(right.value) if isinstance(right, cst.Integer) else None
    op = comp.operator
    if (isinstance(op, cst.GreaterThan) and n == 1) or (isinstance(op, cst.GreaterThanEqual) and n == 2):
        return True
    if (isinstance(op, cst.Equal) and n == 1) or (isinstance(op, cst.LessThanEqual) and n == 1) \
            or (isinstance(op, cst.LessThan) and n == 2):
        return False
    return None
