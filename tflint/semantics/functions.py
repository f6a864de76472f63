"""Which function a callable expression is, and which code runs inside a `tf.function`.

A def runs as a tf.function when it is decorated with `tf.function` (with or without arguments), wrapped by
`tf.function(fn)` anywhere in the file (also `tf.function(jit_compile=True)(fn)`), is a Keras
`train_step`/`test_step`/`predict_step` override, is the step function given to `strategy.run(...)` inside a
tf.function, is a function TensorFlow traces into a graph of its own (the body/condition of `tf.while_loop`, the
branches of `tf.cond`/`tf.switch_case`, the function of `tf.map_fn`/`tf.vectorized_map`/`tf.scan`/`tf.foldl`, the
function given to a tf.data `map`/`filter`/`flat_map`/`interleave`/`reduce`/`scan`), or is called (transitively)
from one of those in the same file or, with project facts, from graph code in another module. A function handed to `tf.py_function`/`tf.numpy_function` runs as Python and
is never counted.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional, Union

import libcst as cst

from .index import Index
from .names import Names, get_arg

FunctionLike = Union[cst.FunctionDef, cst.Lambda]

TF_FUNCTION_NAMES = frozenset({"tensorflow.function", "tensorflow.compat.v1.function"})
PARTIAL_NAMES = frozenset({"functools.partial"})
KERAS_STEP_METHODS = frozenset({"train_step", "test_step", "predict_step"})
TF_AGENTS_HOOKS = frozenset({"_train"})
# Bases that make a class a Keras layer or model (not any keras.* class: a `KerasVariable`, a callback or an
# optimizer subclass has no `call`/`train_step` that Keras traces, and no weights Keras tracks).
KERAS_LAYER_MODEL_EXACT = frozenset({"keras.Model", "keras.Layer", "keras.Sequential", "keras.Functional"})
KERAS_LAYER_MODEL_PREFIXES = (
    "keras.layers.", "keras.models.", "keras.engine.", "keras.applications.", "keras_hub.models.",
    "keras_hub.layers.", "keras_nlp.models.", "keras_nlp.layers.", "keras_cv.models.", "keras_cv.layers.",
)


def is_keras_layer_or_model(qualified: str) -> bool:
    return qualified in KERAS_LAYER_MODEL_EXACT or qualified.startswith(KERAS_LAYER_MODEL_PREFIXES)
# TensorFlow functions that trace the callables they are given into a graph: name -> (keyword, position) of each
# callable argument.
GRAPH_FUNCTION_ARGS: dict[str, tuple[tuple[str, int], ...]] = {
    "tensorflow.while_loop": (("cond", 0), ("body", 1)),
    "tensorflow.cond": (("true_fn", 1), ("false_fn", 2)),
    "tensorflow.map_fn": (("fn", 0),),
    "tensorflow.vectorized_map": (("fn", 0),),
    "tensorflow.scan": (("fn", 0),),
    "tensorflow.foldl": (("fn", 0),),
    "tensorflow.foldr": (("fn", 0),),
    "tensorflow.switch_case": (),  # branch_fns is a list/dict: handled apart
}
PYTHON_FUNCTION_OPS = frozenset({
    "tensorflow.py_function", "tensorflow.numpy_function", "tensorflow.compat.v1.py_func",
    "tensorflow.compat.v1.py_function", "tensorflow.compat.v1.numpy_function",
})
# tf.data methods whose function argument is traced as a graph function.
DATASET_FUNCTION_METHODS = frozenset({"map", "filter", "flat_map", "interleave", "reduce", "scan"})


class Functions:
    def __init__(self, index: Index, names: Names, project=None) -> None:
        self.index = index
        self.names = names
        self.project = project  # the file's ProjectView: other modules that call its functions from graph code
        self._calls_by_function: Optional[dict[int, list[cst.Call]]] = None
        self._tf_functions: Optional[dict[int, str]] = None
        self._datasets = None  # the file's Datasets (which needs this Functions): attached by Semantics
        self._python_functions: Optional[set[int]] = None

    def attach_datasets(self, datasets) -> None:
        """The file's `Datasets` (built from this Functions), which says whether a `map`'s receiver is a dataset."""
        self._datasets = datasets
        self._tf_functions = None

    # -- callables ---------------------------------------------------------------------------------------
    def arguments_passed(self, param: cst.Param) -> Optional[list[Optional[cst.Arg]]]:
        """What each same-file call of the function that declares `param` passes to it (by keyword or position),
        None for a call that passes nothing there or spreads `*args`/`**kwargs`; None (no list) when the function is
        a method or a lambda (positions shift with `self`, or no name to call it by)."""
        fn = self.index.parent(self.index.parent(param))  # Param -> Parameters -> its def or lambda
        if not isinstance(fn, cst.FunctionDef) or self.index.enclosing_class(fn) is not None:
            return None
        positional = list(fn.params.posonly_params) + list(fn.params.params)
        position = next((i for i, p in enumerate(positional) if p is param), None)
        out: list[Optional[cst.Arg]] = []
        for use in self.index.names_named(fn.name.value):
            call = self.index.parent(use)
            if not (isinstance(call, cst.Call) and call.func is use) or self.resolve_callable(use) is not fn:
                continue
            star = any(a.star for a in call.args)
            out.append(None if star else get_arg(call, param.name.value, position))
        return out

    def resolve_callable(self, expr: cst.BaseExpression, _depth: int = 0) -> Optional[FunctionLike]:
        """The same-file def or lambda an expression refers to: a lambda, a (local or module) def, a name
        bound to a lambda, `functools.partial(f, ...)`, `tf.function(f)`, `self.method`, or the `__call__` of an
        instance of a same-file class (`RandomProcess(...)`)."""
        if _depth > 10:
            return None
        if isinstance(expr, cst.Lambda):
            return expr
        if isinstance(expr, cst.Call):
            q = self.names.call_name(expr)
            if q in PARTIAL_NAMES or q in TF_FUNCTION_NAMES:
                first = get_arg(expr, "func", 0)
                if first is not None:
                    return self.resolve_callable(first.value, _depth + 1)
            if isinstance(expr.func, cst.Name):
                # an instance of a same-file class that defines `__call__` (`ds.map(RandomProcess(...))`: the
                # instance is called per element; keras_cv_attention_models' COCO augmentation, round 18)
                b = self.index.lookup(expr.func.value, expr.func)
                if b is not None and b.kind == "class" and isinstance(b.node, cst.ClassDef):
                    return self.method(b.node, "__call__")
                if b is not None and b.kind == "def" and isinstance(b.node, cst.FunctionDef):
                    return self.returned_closure(b.node)
            return None
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is None:
                return None
            if b.kind == "def" and isinstance(b.node, cst.FunctionDef):
                return b.node
            if b.kind in ("assign", "annassign") and b.value is not None and b.value is not expr:
                return self.resolve_callable(b.value, _depth + 1)
            return None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
            cls = self.index.enclosing_class(expr)
            if cls is not None:
                return self.method(cls, expr.attr.value)
        if isinstance(expr, cst.Attribute):
            cls = self.instance_class(expr.value)
            if cls is not None:
                return self.method(cls, expr.attr.value)
        return None

    @staticmethod
    def argument_at(fn, param: cst.Param, call: cst.Call) -> Optional[cst.BaseExpression]:
        """The expression `call` passes to `fn`'s `param` (by keyword or by position, `self`/`cls` not counted);
        None when it passes none or spreads `*args`/`**kwargs`."""
        if any(a.star for a in call.args):
            return None
        positional = list(fn.params.posonly_params) + list(fn.params.params)
        offset = 0
        if isinstance(fn, cst.FunctionDef) and positional and positional[0].name.value in ("self", "cls"):
            offset = 1
        pos = None
        for i, p in enumerate(positional):
            if p is param:
                pos = i - offset
        arg = get_arg(call, param.name.value, pos if pos is not None and pos >= 0 else None)
        return arg.value if arg is not None else None

    def returned_closure(self, factory: cst.FunctionDef) -> Optional[FunctionLike]:
        """The nested def or lambda a factory returns, when each of its returns gives that same one:
        `input_fn = file_based_input_fn_builder(path)` then `input_fn()` calls the builder's inner `input_fn`
        (BERT/ALBERT's input pipelines, round 21)."""
        found: Optional[FunctionLike] = None
        for node in self.body_nodes(factory, cst.Return):
            if self.owner(node) is not factory:
                continue
            value = node.value
            target: Optional[FunctionLike] = None
            if isinstance(value, cst.Lambda):
                target = value
            elif isinstance(value, cst.Name):
                b = self.index.lookup(value.value, value)
                if b is not None and b.kind == "def" and isinstance(b.node, cst.FunctionDef) \
                        and self.index.enclosing_function(b.node) is factory:
                    target = b.node
            if target is None or (found is not None and target is not found):
                return None
            found = target
        return found

    def instance_class(self, expr: cst.BaseExpression) -> Optional[cst.ClassDef]:
        """The same-file class `expr` is an instance of, when its only assignments construct it: `agent` with
        `agent = Agent(env)`, or `self.actor` with every `self.actor = Actor(...)` of the enclosing class (an agent
        that holds its actor and critic: marload/DeepRL-TensorFlow2, round 20)."""
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            values = [b.value] if b is not None and b.kind in ("assign", "annassign") and b.value is not None else []
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.index.enclosing_class(expr)
            values = list(self.index.self_assignments(cls).get(expr.attr.value, ())) if cls is not None else []
        else:
            return None
        found: Optional[cst.ClassDef] = None
        for value in values:
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
                return None
            cb = self.index.lookup(value.func.value, value.func)
            if cb is None or cb.kind != "class" or not isinstance(cb.node, cst.ClassDef) or (found is not None and cb.node is not found):
                return None
            found = cb.node
        return found

    def method(self, cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
        return self.index.class_methods(cls).get(name)

    # -- calls inside functions -----------------------------------------------------------------------------
    def calls_in(self, fn: FunctionLike) -> list[cst.Call]:
        """Calls lexically inside `fn` (not inside nested defs/lambdas, which are functions of their own)."""
        if self._calls_by_function is None:
            groups: dict[int, list[cst.Call]] = defaultdict(list)
            for call in self.index.nodes(cst.Call):
                owner = self.owner(call)
                if owner is not None:
                    groups[id(owner)].append(call)
            self._calls_by_function = groups
        return self._calls_by_function.get(id(fn), [])

    def owner(self, node: cst.CSTNode) -> Optional[FunctionLike]:
        """The innermost def or lambda whose body contains `node` (recorded by the index's walk)."""
        return self.index.owner(node)

    def callees(self, fn: FunctionLike) -> list[FunctionLike]:
        out: list[FunctionLike] = []
        seen: set[int] = set()
        for call in self.calls_in(fn):
            target = self.resolve_callable(call.func)
            if target is not None and target is not fn and id(target) not in seen:
                seen.add(id(target))
                out.append(target)
        return out

    def body_nodes(self, fn: FunctionLike, typ: type) -> list:
        """Nodes of `typ` inside `fn` (decorators, defaults and nested defs included), in source order."""
        return self.index.nodes_inside(fn, typ)

    def is_inside(self, node: cst.CSTNode, fn: cst.CSTNode) -> bool:
        return self.index.contains(fn, node)

    # -- tf.function ---------------------------------------------------------------------------------------
    def decorator_is_tf_function(self, dec: cst.Decorator) -> bool:
        expr = dec.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        return self.names.qualified_name(expr) in TF_FUNCTION_NAMES

    def tf_function_decorator(self, fn: cst.FunctionDef) -> Optional[cst.Decorator]:
        for dec in fn.decorators:
            if self.decorator_is_tf_function(dec):
                return dec
        return None

    def tf_functions(self) -> dict[int, str]:
        """id(def or lambda) -> why it runs as a tf.function ('decorated', 'wrapped', 'keras-step',
        'strategy-run', 'graph-fn', 'dataset-fn', 'called': from one of those in this file, 'called-elsewhere': from
        graph code of another module, a tf.function or a tf.data function, which is not known here)."""
        if self._tf_functions is not None:
            return self._tf_functions
        found: dict[int, str] = {}
        by_id: dict[int, FunctionLike] = {}
        for fn in self.index.functions:
            if self.tf_function_decorator(fn) is not None:
                found[id(fn)] = "decorated"
                by_id[id(fn)] = fn
            elif fn.name.value in KERAS_STEP_METHODS:
                cls = self.index.parent(self.index.parent(fn) or fn)
                if isinstance(cls, cst.ClassDef) and self._is_keras_class(cls) and not self._step_called_by_hand(fn):
                    found[id(fn)] = "keras-step"
                    by_id[id(fn)] = fn
        if self.project is not None:
            # a module-level function another module of the project calls from graph code
            for name, bindings in self.index.scopes[id(self.index.module)].bindings.items():
                b = bindings[-1]
                if (b.kind == "def" and isinstance(b.node, cst.FunctionDef) and id(b.node) not in found
                        and all(x.kind == "def" for x in bindings) and self.project.called_from_graph(name)):
                    found[id(b.node)] = "called-elsewhere"
                    by_id[id(b.node)] = b.node
        for call in self.index.nodes(cst.Call):
            for target, why in self._graph_targets(call):
                if why != "graph-fn" and id(target) not in found:
                    found[id(target)] = why
                    by_id[id(target)] = target
        # Close over same-file calls, and over strategy.run(step_fn) inside tf.functions.
        work = list(by_id.values())
        while work:
            fn = work.pop()
            for call in self.calls_in(fn):
                targets: list[tuple[FunctionLike, str]] = []
                t = self.resolve_callable(call.func)
                if t is not None:
                    targets.append((t, "called"))
                # tf.cond/while_loop/map_fn... trace their functions only in graph mode, i.e. here
                targets.extend(x for x in self._graph_targets(call) if x[1] == "graph-fn")
                if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("run", "experimental_run_v2"):
                    first = get_arg(call, "fn", 0)
                    if first is not None and self._looks_like_strategy(call.func.value):
                        st = self.resolve_callable(first.value)
                        if st is not None:
                            targets.append((st, "strategy-run"))
                for target, why in targets:
                    if id(target) not in found:
                        found[id(target)] = why
                        by_id[id(target)] = target
                        work.append(target)
        self._tf_functions = found
        return found

    def _graph_targets(self, call: cst.Call) -> list[tuple[FunctionLike, str]]:
        """Functions this call turns into graph functions, whatever encloses the call."""
        out: list[tuple[FunctionLike, str]] = []
        q = self.names.call_name(call)
        if q in TF_FUNCTION_NAMES:
            first = get_arg(call, "func", 0)
            target = self.resolve_callable(first.value) if first is not None else None
            if target is not None:
                out.append((target, "wrapped"))
        elif isinstance(call.func, cst.Call) and self.names.call_name(call.func) in TF_FUNCTION_NAMES:
            # tf.function(jit_compile=True)(fn)
            first = get_arg(call, "func", 0)
            target = self.resolve_callable(first.value) if first is not None else None
            if target is not None and get_arg(call.func, "func", 0) is None:
                out.append((target, "wrapped"))
        elif q in GRAPH_FUNCTION_ARGS:
            for kw, pos in GRAPH_FUNCTION_ARGS[q]:
                arg = get_arg(call, kw, pos)
                target = self.resolve_callable(arg.value) if arg is not None else None
                if target is not None:
                    out.append((target, "graph-fn"))
            if q == "tensorflow.switch_case":
                arg = get_arg(call, "branch_fns", 1)
                if arg is not None and isinstance(arg.value, (cst.List, cst.Tuple)):
                    for el in arg.value.elements:
                        target = self.resolve_callable(el.value)
                        if target is not None:
                            out.append((target, "graph-fn"))
        elif isinstance(call.func, cst.Attribute) and call.func.attr.value in DATASET_FUNCTION_METHODS:
            kw, pos = ("reduce_func", 1) if call.func.attr.value == "reduce" else (
                ("scan_func", 1) if call.func.attr.value == "scan" else (None, 0))
            arg = get_arg(call, kw or "map_func", pos)
            if arg is None and call.func.attr.value == "filter":
                arg = get_arg(call, "predicate", 0)
            if arg is not None and self._dataset_receiver(call.func.value):
                target = self.resolve_callable(arg.value)
                if target is not None:
                    out.append((target, "dataset-fn"))
        return out

    def _dataset_receiver(self, expr: cst.BaseExpression) -> bool:
        if self._datasets is None:  # no dataset knowledge attached: nothing is known to be a dataset
            return False
        try:
            return self._datasets.is_dataset(expr)
        except RecursionError:
            return False

    def tf_function_reason(self, fn: cst.CSTNode) -> Optional[str]:
        """Why `fn` runs as a graph function ('decorated', 'wrapped', 'keras-step', 'strategy-run', 'graph-fn',
        'dataset-fn', 'called'), or None."""
        return self.tf_functions().get(id(fn))

    def graph_everywhere(self, fn: cst.CSTNode) -> bool:
        """`fn` runs as a graph function wherever it is called (decorated or wrapped by `tf.function`, a Keras step),
        not only when a graph calls it."""
        return self.tf_function_reason(fn) in ("decorated", "wrapped", "keras-step")

    def is_tf_function(self, fn: cst.CSTNode) -> bool:
        return id(fn) in self.tf_functions()

    def tf_function_of(self, node: cst.CSTNode) -> Optional[FunctionLike]:
        """The innermost enclosing def/lambda that runs as a tf.function (a def nested in a tf.function and
        called there counts through the same-file call closure)."""
        tf_fns = self.tf_functions()
        python_fns = self.python_functions()
        a = self.index.owner(node)
        while a is not None:  # the defs/lambdas whose bodies hold the node, innermost first
            if id(a) in tf_fns:
                return a
            if id(a) in python_fns:
                return None  # handed to tf.py_function & co: runs as Python, eagerly
            a = self.index.owner(a)
        return None

    def python_functions(self) -> set[int]:
        """ids of the same-file functions given to `tf.py_function`/`tf.numpy_function`/`py_func` or
        `Dataset.from_generator`: they run as plain Python even when called from a graph."""
        if self._python_functions is None:
            out: set[int] = set()
            for call in self.index.nodes(cst.Call):
                q = self.names.call_name(call)
                if q in PYTHON_FUNCTION_OPS:
                    arg = get_arg(call, "func", 0)
                elif q == "tensorflow.data.Dataset.from_generator":
                    arg = get_arg(call, "generator", 0)
                else:
                    continue
                target = self.resolve_callable(arg.value) if arg is not None else None
                if target is not None:
                    out.add(id(target))
            self._python_functions = out
        return self._python_functions

    def in_tf_function(self, node: cst.CSTNode) -> bool:
        return self.tf_function_of(node) is not None

    def _is_keras_class(self, cls: cst.ClassDef) -> bool:
        return self.derives_from(cls, is_keras_layer_or_model)

    def derives_from(self, cls: cst.ClassDef, base_is) -> bool:
        """A base of `cls`, or of a same-file class it derives from (five levels at most), has a qualified name that
        `base_is` accepts (`is_keras_layer_or_model`, a TF-Agents prefix)."""
        for c in self.lineage(cls):
            for base in c.bases:
                q = self.names.qualified_name(base.value)
                if q and base_is(q):
                    return True
        return False

    def overrides(self, fn: FunctionLike) -> list[cst.FunctionDef]:
        """The methods of same-file subclasses that override method `fn` (`ImagenetDataset._train_transform_fn`
        over the base class's identity `_train_transform_fn`): what `self._train_transform_fn` may run."""
        cls = self._method_class(fn)
        if cls is None:
            return []
        subclasses = [c for c in self.index.nodes(cst.ClassDef) if c is not cls and any(b is cls for b in self.lineage(c))]
        return self._same_named(fn, subclasses)

    def overridden(self, fn: FunctionLike) -> list[cst.FunctionDef]:
        """The same-file base-class methods that method `fn` overrides (a call `self.m(...)` written in the base
        class runs `fn` on an instance of the subclass)."""
        cls = self._method_class(fn)
        return self._same_named(fn, [b for b in self.lineage(cls) if b is not cls]) if cls is not None else []

    def _method_class(self, fn: FunctionLike) -> Optional[cst.ClassDef]:
        """The class `fn` is a method of (defined in its body), else None."""
        if not isinstance(fn, cst.FunctionDef):
            return None
        cls = self.index.enclosing_class(fn)
        return cls if cls is not None and self.method(cls, fn.name.value) is fn else None

    def _same_named(self, fn: cst.FunctionDef, classes: list[cst.ClassDef]) -> list[cst.FunctionDef]:
        found = [self.method(c, fn.name.value) for c in classes]
        return [m for m in found if m is not None and m is not fn]

    def lineage(self, cls: cst.ClassDef, depth: int = 0) -> Iterable[cst.ClassDef]:
        """`cls`, then the same-file classes it derives from, depth first (five levels at most)."""
        yield cls
        if depth >= 5:
            return
        for base in cls.bases:
            if isinstance(base.value, cst.Name):
                b = self.index.lookup(base.value.value, base.value)
                if b is not None and b.kind == "class" and isinstance(b.node, cst.ClassDef):
                    yield from self.lineage(b.node, depth + 1)

    def _step_called_by_hand(self, fn: cst.FunctionDef) -> bool:
        """The file calls a Keras step method itself (`model.train_step([x, y])` in a Python loop, outside any
        decorated function): it then runs eagerly too, and whether Keras ever traces it is unknown (round 22:
        TensorFlow's migration-debugging guide steps its model by hand to log values, 2 findings judged false).
        `super().train_step(data)` inside an override is Keras's own path; a receiver that is an instance of
        another same-file class calls that class's step."""
        name = fn.name.value
        cls = self.index.parent(self.index.parent(fn) or fn)
        for call in self.index.nodes(cst.Call):
            f = call.func
            if not (isinstance(f, cst.Attribute) and f.attr.value == name):
                continue
            if isinstance(f.value, cst.Call) and isinstance(f.value.func, cst.Name) and f.value.func.value == "super":
                continue
            receiver = self.instance_class(f.value)
            if receiver is not None and receiver is not cls:
                continue
            owner = self.owner(call)
            if isinstance(owner, cst.FunctionDef) and (owner.name.value in KERAS_STEP_METHODS
                                                       or self.tf_function_decorator(owner) is not None):
                continue
            return True
        return False

    def is_keras_class(self, cls: cst.ClassDef) -> bool:
        return self._is_keras_class(cls)

    def framework_hook(self, fn: cst.CSTNode) -> bool:
        """`fn` is a method a framework calls from its own graph function: TF-Agents' `_train`, which
        `TFAgent.train` runs through `common.function` (TF 1) and which agents' users and TF-Agents' `Learner` wrap
        in `common.function` (TF 2). Whether it runs eagerly is not known here (round 21: google-research/rigl's
        `SparsePPOAgent._train`, judged false as an eager step)."""
        if not (isinstance(fn, cst.FunctionDef) and fn.name.value in TF_AGENTS_HOOKS):
            return False
        cls = self.index.parent(self.index.parent(fn) or fn)
        return isinstance(cls, cst.ClassDef) and self.derives_from(cls, lambda q: q.startswith("tf_agents."))

    def _looks_like_strategy(self, expr: cst.BaseExpression) -> bool:
        q = self.names.qualified_name(expr)
        if q and q.startswith("tensorflow.distribute."):
            return True
        name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
        if "strategy" in name.lower():
            return True
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and isinstance(b.value, cst.Call):
                cq = self.names.call_name(b.value)
                return bool(cq and cq.startswith("tensorflow.distribute."))
        return False

    def iter_params(self, fn: FunctionLike) -> Iterable[cst.Param]:
        from .index import all_params

        return all_params(fn.params)
