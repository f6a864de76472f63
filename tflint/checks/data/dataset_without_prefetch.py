"""TFL102 dataset-without-prefetch: a consumed pipeline with no `prefetch` at its end."""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import NOT_LITERAL, Pipeline, get_arg, literal_value
from ..base import Check
from ...semantics.tensors import tensors_of
from .chain import EVALUATION, cheap_function, downstream, evaluation_pipeline, mapped_fn, method_of
from .consumption import TF1_ITERATOR_FUNCS, TF1_ITERATOR_METHODS
from ..redundancy.sessions import is_session
from ..common import (
    INJECT_PREFETCH_SINCE, autotune, is_work_call, iterated_values, method_call, optimization_disabled,
    reading_loop_trains, tiny_fit,
)

# Training consumes the pipeline epoch after epoch; `evaluate`/`predict` and `fit(validation_data=...)` read a
# test or validation set once per call, where the overlap saves little (judged not worth acting on in real code).
CONSUMER_METHODS = {"fit": ("x", 0)}
DISTRIBUTE = ("experimental_distribute_dataset", "distribute_dataset")
INPUT_FN_NAME = re.compile(r"input_fn|input_pipeline")


def has_prefetch(p: Pipeline, sem) -> bool:
    if p.source_prefetched and len(p.steps) == 1:
        return True
    for s in p.steps:
        if s.method == "prefetch":
            return True
        if s.method == "apply" and s.call is not None:
            arg = get_arg(s.call, "transformation_func", 0)
            if arg is not None and isinstance(arg.value, cst.Call):
                q = sem.call_name(arg.value) or ""
                if "prefetch" in q or "copy_to_device" in q:
                    return True
                if q.endswith(".map_and_batch") and s is p.steps[-1]:
                    return True  # the fused map-and-batch computes the next batches in background threads itself
    return False


def _literal(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Name) and literal_value(expr) is not NOT_LITERAL:
        return True
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(isinstance(e, cst.Element) and _literal(e.value) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _literal(e.value) for e in expr.elements)
    return False


def _tiny_literal_source(p: Pipeline) -> bool:
    """`from_tensor_slices([1., 2., 3.])`, `from_tensors({"x": [1, 2]})`: data written out in the code."""
    call = p.source.call
    if call is None or not isinstance(call.func, cst.Attribute):
        return False
    if call.func.attr.value not in ("from_tensor_slices", "from_tensors"):
        return False
    args = [a for a in call.args if a.keyword is None]
    return bool(args) and _literal(args[0].value)


TINY_ELEMENTS = 100  # a pipeline known to yield at most this many elements per pass has no input time to hide


def _few_elements(p: Pipeline) -> bool:
    """The pipeline yields a handful of elements per pass: one element (`from_tensors` with no repeat), or a
    literal `take(k)` with a small k and no endless repeat after it (a predict or demo input function)."""
    bound: Optional[int] = None
    if p.source.call is not None and isinstance(p.source.call.func, cst.Attribute) and \
            p.source.call.func.attr.value == "from_tensors":
        bound = 1
    for s in p.steps[1:]:
        if s.method == "take" and s.call is not None and s.call.args:
            v = literal_value(s.call.args[0].value)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                bound = v if bound is None else min(bound, v)
        elif s.method == "cache" and bound is not None and bound <= TINY_ELEMENTS:
            return True  # `take(1).cache().repeat()`: a fake-data mode replaying a few cached elements from memory
        elif s.method == "repeat":
            count = literal_value(s.call.args[0].value) if s.call is not None and s.call.args else None
            if not isinstance(count, int) or count < 0:
                bound = None  # endless
            elif bound is not None:
                bound *= count
    return bound is not None and bound <= TINY_ELEMENTS


IN_MEMORY_SOURCES = frozenset({"from_tensor_slices", "from_tensors", "range"})
# steps that only reorder, group or slice elements already computed: no input time worth overlapping
ASSEMBLY_STEPS = frozenset({
    "shuffle", "batch", "padded_batch", "repeat", "cache", "take", "skip", "unbatch", "shard", "with_options",
    "enumerate", "prefetch", "rebatch",
})


def _only_assembly(p: Pipeline, sem, start: int) -> bool:
    """Every step from `start` on reorders, batches or slices, or maps a cheap function (field selection, casts,
    arithmetic): microseconds per batch, nothing for a prefetch to hide."""
    for s in p.steps[start:]:
        if s.method in ASSEMBLY_STEPS:
            continue
        if s.method == "map" and s.call is not None and cheap_function(sem, mapped_fn(sem, s)):
            continue
        return False
    return True


def _handed_in_generator(p: Pipeline, sem) -> bool:
    """The pipeline starts at `from_generator(g)` where `g` is a parameter of an enclosing function."""
    src = p.source
    if src.kind != "generator" or src.call is None:
        return False
    arg = get_arg(src.call, "generator", 0)
    if arg is None or not isinstance(arg.value, cst.Name):
        return False
    b = sem.index.lookup(arg.value.value, arg.value)
    return b is not None and b.kind == "param"


def _in_memory(p: Pipeline, sem, depth: int = 3) -> bool:
    """`from_tensor_slices((x_train, y_train)).shuffle(10000).batch(128)`: slices of arrays already in memory,
    shuffled and batched (the in-memory MNIST of many examples): producing a batch costs microseconds. A
    `Dataset.zip((features, labels))` of such pipelines is one too (round 21: a DataFrame's features and its labels
    sliced, batched and repeated separately, then zipped, judged not worth acting on)."""
    call = p.source.call
    if call is None or not isinstance(call.func, cst.Attribute):
        return False
    if p.source.kind == "zip":
        members = _zip_members(call)
        if depth <= 0 or not members:
            return False
        for m in members:
            q = sem.datasets.pipeline(m)
            if q is None or not _in_memory(q, sem, depth - 1):
                return False
    elif call.func.attr.value not in IN_MEMORY_SOURCES:
        return False
    return _only_assembly(p, sem, 1)


def _zip_members(call: cst.Call) -> list[cst.BaseExpression]:
    """The datasets `Dataset.zip((a, b))`, `Dataset.zip(a, b)` or `Dataset.zip({"x": a, "y": b})` combines; empty
    when one is spelled otherwise (a starred argument, a name bound to a tuple)."""
    args = [a for a in call.args if a.keyword is None or a.keyword.value == "datasets"]
    if len(args) != len(call.args) or any(a.star for a in args):
        return []
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        elements = args[0].value.elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return []
        return [e.value for e in elements]
    if len(args) == 1 and isinstance(args[0].value, cst.Dict):
        elements = args[0].value.elements
        if any(not isinstance(e, cst.DictElement) for e in elements):
            return []
        return [e.value for e in elements]
    if len(args) == 1:
        return []  # a name bound to a tuple elsewhere: not followed
    return [a.value for a in args]


def _assembled_from_memory_cache(p: Pipeline, sem) -> bool:
    """`...map(parse).cache().shuffle(n).batch(bs).repeat()`: an in-memory `cache()` with only reordering,
    batching or cheap maps after it. From the second epoch on a batch is assembled from memory in microseconds
    (round 19/20: MNIST records cached in memory in Estimator and parameter-server samples, judged not worth acting
    on). A file cache (`cache(path)`) is read from disk every epoch and keeps the finding."""
    for i in range(len(p.steps) - 1, 0, -1):
        s = p.steps[i]
        if s.method != "cache" or s.call is None:
            continue
        if s.call.args and literal_value(s.call.args[0].value) != "":
            return False  # a file cache, or one whose location is not known
        return _only_assembly(p, sem, i + 1)
    return False


class DatasetWithoutPrefetch(Check):
    code = "TFL102"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._reported: set[int] = set()

    def _consider(self, expr: cst.BaseExpression, consumer: str) -> None:
        p = self.datasets.pipeline(expr)
        if p is None or has_prefetch(p, self.sem):
            return
        last = p.last
        if last.call is None or last.method == "source" and p.source.kind in ("param", "declared"):
            return  # a dataset handed in from elsewhere: its producer decides
        if id(last.call) in self._reported:
            return
        self._reported.add(id(last.call))
        if evaluation_pipeline(self.sem, last.call, p):
            # a validation, test or inference input (by its names, its split argument, or the evaluation branch of an
            # input function: round 20, not worth): read once per evaluation or request
            return
        disabled = optimization_disabled(self.ctx.text, "inject_prefetch", self.sem)
        if self.target_version >= INJECT_PREFETCH_SINCE and not disabled:
            return  # tf.data's `inject_prefetch` (default since 2.11) adds the final prefetch itself
        if _tiny_literal_source(p) or _few_elements(p):
            return  # a dataset of a few literal values or elements: there is no input time to overlap
        if _handed_in_generator(p, self.sem):
            return  # `from_generator(generator)` of a parameter: it may follow state its caller sets per call
            # (the FastPredict pattern re-yields the features set before each `predict()`: prefetching reads ahead)
        if _in_memory(p, self.sem):
            return  # in-memory arrays sliced, shuffled and batched: no input time worth overlapping
        if _assembled_from_memory_cache(p, self.sem):
            return  # after the first epoch batches are assembled from an in-memory cache: nothing to overlap
        if p.source_prefetched and _only_assembly(p, self.sem, 1):
            return  # another module's function ends with `prefetch`; only cheap steps follow it
        note = " (this file switches tf.data's `inject_prefetch` off)" if disabled else ""
        message = f"Pipeline consumed by {consumer} has no `prefetch` at its end: input and training do not overlap{note}"
        spelling = autotune(self.sem, self.oldest_version, last.call)
        start = last.call.func.attr if isinstance(last.call.func, cst.Attribute) else None
        if spelling is None:
            self.report(last.call, message, start_node=start)
            return
        self.report(
            last.call,
            message,
            start_node=start,
            replacement=method_call(last.call, "prefetch", [spelling]),
            fix_message=f"Add `.prefetch({spelling})` at the end of the pipeline",
            applicability=Applicability.SAFE,
        )

    def visit_Module(self, node: cst.Module) -> None:
        for expr, consumer in training_reads(self.sem):
            self._consider(expr, consumer)
        for expr in ([] if self.sem.notebook else session_trained(self.sem)):  # modules: trainer scripts
            self._consider(expr, "a `Session.run` training loop (through its iterator)")
        for call in self.index.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "distribute_datasets_from_function":
                arg = get_arg(call, "dataset_fn", 0)
                fn = self.functions.resolve_callable(arg.value) if arg is not None else None
                if fn is not None:
                    self._returns_of(fn, "`distribute_datasets_from_function`")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if INPUT_FN_NAME.search(node.name.value):
            # TPUEstimator runs the input in an infeed thread that enqueues batches ahead of the TPU step: the overlap
            # is there (TFL102 in files using TPUEstimator: 2 true, 11 not worth, 15 false in the real-code ledger)
            if not self._prefetched_by_caller(node) and not self._tpu_estimator():
                self._returns_of(node, f"its caller (returned from `{node.name.value}`)")
                inner = self.functions.returned_closure(node)
                if inner is not None and not self.functions.is_tf_function(inner) and not (
                        isinstance(inner, cst.FunctionDef) and INPUT_FN_NAME.search(inner.name.value)):
                    # `_make_input_fn(...)` returning its nested `load_dataset(params)`: the input function itself
                    # (disentanglement_lib's builders, round 27 misses)
                    name = inner.name.value if isinstance(inner, cst.FunctionDef) else "lambda"
                    self._returns_of(inner, f"its caller (returned from `{name}`, built by `{node.name.value}`)")
        elif self.index.parent(node) is self.index.module:
            # another module of the project trains on what this function returns, as it is (no step added there)
            where = self.sem.project.trained_elsewhere(node.name.value)
            if where:
                self._returns_of(node, f"training in {where}")
            for ret in self.functions.body_nodes(node, cst.Return):
                if not isinstance(ret.value, cst.Tuple) or self.functions.owner(ret) is not node:
                    continue
                for i, el in enumerate(ret.value.elements):
                    if isinstance(el, cst.StarredElement) or self.datasets.pipeline(el.value) is None:
                        continue
                    where = self.sem.project.trained_elsewhere(node.name.value, i)
                    if where:
                        self._consider(el.value, f"training in {where}")

    def _returns_of(self, fn, consumer: str) -> None:
        if isinstance(fn, cst.Lambda):
            self._consider(fn.body, consumer)
            return
        # a TF1 input_fn returns its iterator's tensors: `features = iterator.get_next(); return features, labels`;
        # not an evaluation input's (`eval_input_fn` reads the evaluation set once per evaluation), nor in a notebook
        # (an Estimator prototype: 3 true, 25 not worth, 9 false in round 19's judging)
        iterators = not self.sem.notebook and not (isinstance(fn, cst.FunctionDef) and EVALUATION.search(fn.name.value))
        for ret in self.functions.body_nodes(fn, cst.Return):
            if ret.value is None or self.functions.owner(ret) is not fn:
                continue
            if self.datasets.pipeline(ret.value) is not None:
                self._consider(ret.value, consumer)
                continue
            if not iterators:
                continue
            values = [e.value for e in ret.value.elements] if isinstance(ret.value, cst.Tuple) else [ret.value]
            for value in values:
                ds = iterator_dataset(self.sem, value)
                if ds is not None:
                    self._consider(ds, consumer)
                    break

    def _tpu_estimator(self) -> bool:
        """The file runs a TPUEstimator on a TPU: a `TPUEstimator(...)` that does not pass `use_tpu=False` (with it,
        the estimator trains on CPU or GPU with no infeed thread: disentanglement_lib, round 27), or a
        `TPUEstimatorSpec`."""
        if not hasattr(self, "_uses_tpu_estimator"):
            found = False
            if "TPUEstimator" in self.ctx.text:
                for c in self.index.nodes(cst.Call):
                    q = self.sem.call_name(c) or ""
                    if q.endswith(".TPUEstimatorSpec"):
                        found = True
                    elif q.endswith(".TPUEstimator"):
                        use_tpu = get_arg(c, "use_tpu")
                        found = found or use_tpu is None or literal_value(use_tpu.value) is not False
            self._uses_tpu_estimator = found
        return self._uses_tpu_estimator

    def _prefetched_by_caller(self, fn: cst.FunctionDef) -> bool:
        """A caller in this file that adds `.prefetch` to the returned dataset: chained on directly
        (`input_fn().prefetch(...)`, or another step the caller owns), or later through the variable it is assigned
        to, also where a builder returns the input function (`input_fn = builder(path); d = input_fn()` ...
        `d = d.prefetch(1024)`: ALBERT's inner `input_fn`, round 21, judged false)."""
        for name in self.index.names_named(fn.name.value):
            call = self.index.parent(name)
            if isinstance(call, cst.Call) and call.func is name:
                parent = self.index.parent(call)
                if isinstance(parent, cst.Attribute):
                    return True  # chained on directly: `input_fn().prefetch(...)` or other use the caller owns
        for call, _ in tensors_of(self.sem).call_sites(fn):
            if any(method_of(c) == "prefetch" for c in downstream(self.sem, call)):
                return True
        return False


def training_reads(sem) -> list[tuple[cst.BaseExpression, str]]:
    """The expressions whose dataset this file trains on, each with how: passed to `fit`, distributed, iterated by
    a `for` loop that does training work (through `enumerate`, `tqdm`, `zip`), or read with `next()` from an
    `iter()` that feeds such work. Also what other modules of the project learn from a file's summary: once per
    file for both."""
    found = sem.__dict__.get("_tflint_training_reads")
    if found is None:
        found = sem.__dict__["_tflint_training_reads"] = _training_reads(sem)
    return found


def _training_reads(sem) -> list[tuple[cst.BaseExpression, str]]:
    out: list[tuple[cst.BaseExpression, str]] = []
    for node in sem.index.nodes(cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute):
            m = func.attr.value
            if m in CONSUMER_METHODS:
                kw, pos = CONSUMER_METHODS[m]
                arg = get_arg(node, kw, pos)
                if arg is not None and not tiny_fit(sem, node):  # a 9-step demo fit: nothing to overlap
                    out.append((arg.value, f"`{m}`"))
            elif m in DISTRIBUTE:
                arg = get_arg(node, "dataset", 0)
                if arg is not None:
                    out.append((arg.value, f"`{m}`"))
            continue
        if sem.call_name(node) == "builtins.iter" and node.args and _iterator_feeds_work(sem, node):
            out.append((node.args[0].value, "`iter()`"))
    for loop in sem.index.nodes(cst.For):
        # a loop that only looks at a few elements (`for x in ds.take(1): print(x)`) or does no training work on
        # them has nothing to overlap: only a loop that trains, evaluates or predicts counts as consuming
        if not reading_loop_trains(sem, loop):
            continue
        for value in iterated_values(sem, loop.iter):  # `enumerate(ds)`, `tqdm(ds)`, `zip(ds_a, ds_b)`
            out.append((value, "a `for` loop"))
    return out


def _iterator_feeds_work(sem, call: cst.Call) -> bool:
    """`iter(ds)` whose iterator is passed to a step function or read by `next()` inside a loop that trains
    (`next(iter(ds))` on its own is a peek at one element)."""
    index = sem.index
    parent = index.parent(call)
    stmt = index.statement_of(call)
    target = None
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        target = parent.targets[0].target.value
    if target is None:
        return False
    owner = sem.functions.owner(call)
    after = index.order_of(stmt) + 1
    for use in index.nodes_between(cst.Call, after, len(index.stmt_order) + 1):
        if sem.functions.owner(use) is not owner:
            continue
        if not any(isinstance(a.value, cst.Name) and a.value.value == target for a in use.args):
            continue
        if sem.call_name(use) == "builtins.next":
            loops = index.enclosing_loops(use)
            if loops and reading_loop_trains(sem, loops[0]):
                return True
        elif is_work_call(sem, use):
            return True
    return False


def iterator_of(sem, call: cst.Call) -> Optional[cst.BaseExpression]:
    """The dataset expression a TF1 iterator is made from (`ds` in `ds.make_one_shot_iterator()` or
    `tf.compat.v1.data.make_initializable_iterator(ds)`), else None."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in TF1_ITERATOR_METHODS and not call.args:
        return call.func.value
    if sem.call_name(call) in TF1_ITERATOR_FUNCS and call.args and call.args[0].keyword is None:
        return call.args[0].value
    return None


def iterator_dataset(sem, expr: cst.BaseExpression, depth: int = 6) -> Optional[cst.BaseExpression]:
    """The dataset behind a TF1 iterator's `get_next()` tensors, through the variables they are assigned to:
    `features` in `iterator = ds.batch(b).make_one_shot_iterator(); features = iterator.get_next()` is `ds.batch(b)`.
    None when the value is not evidently such a tensor."""
    seen_get_next = False
    for _ in range(depth):
        if isinstance(expr, cst.Name):
            b = sem.index.lookup(expr.value, expr)
            if b is None or b.value is None or b.kind not in ("assign", "annassign", "unpack"):
                return None
            expr = b.value
            continue
        if not isinstance(expr, cst.Call):
            return None
        if not seen_get_next:
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get_next" and not expr.args:
                seen_get_next = True
                expr = expr.func.value
                continue
            return None
        return iterator_of(sem, expr)
    return None


def _trains(sem, fetch: cst.BaseExpression) -> bool:
    """A `sess.run` fetch that is a training op: a name bound to `opt.minimize(...)` / `opt.apply_gradients(...)`,
    or a name or attribute called like one (`train_op`, `self.train_step`)."""
    if isinstance(fetch, (cst.List, cst.Tuple)):
        return any(isinstance(e, cst.Element) and _trains(sem, e.value) for e in fetch.elements)
    name = fetch.value if isinstance(fetch, cst.Name) else fetch.attr.value if isinstance(fetch, cst.Attribute) \
        else None
    if name is None:
        return False
    if TRAIN_OP_NAME.search(name):
        return True
    if isinstance(fetch, cst.Name):
        b = sem.index.lookup(name, fetch)
        value = b.value if b is not None and b.kind == "assign" else None
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in ("minimize", "apply_gradients")
    return False


TRAIN_OP_NAME = re.compile(r"^(train|optimi[sz]e|update)(_?(op|step|ops))?$|^train_?op|_train_op$|^opt_op$", re.I)


def session_trained(sem) -> list[cst.BaseExpression]:
    """Datasets read through a TF1 iterator made in a function (or at module level) that also runs a training op
    in a loop: `it = ds.make_initializable_iterator()` ... `for i in range(steps): sess.run([train_op, loss])`. The
    iterator's tensors feed the graph that the loop runs every step."""
    found = sem.__dict__.get("_tflint_session_trained")
    if found is not None:
        return found
    found = sem.__dict__["_tflint_session_trained"] = []
    makers = [(c, ds) for c in sem.index.nodes(cst.Call) for ds in [iterator_of(sem, c)] if ds is not None]
    if not makers:
        return found
    training_owners: set[int] = set()
    for call in sem.index.nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "run" and call.args):
            continue
        fetch = get_arg(call, "fetches", 0)
        if fetch is None or not sem.index.enclosing_loops(call) or not _trains(sem, fetch.value):
            continue
        if not is_session(sem, func.value, default=True):
            continue
        training_owners.add(id(sem.functions.owner(call)))
    for call, ds in makers:
        if id(sem.functions.owner(call)) in training_owners and not evaluation_pipeline(sem, call):
            found.append(ds)  # (`validation_iterator = validation_dataset.make_initializable_iterator()`: not)
    return found
