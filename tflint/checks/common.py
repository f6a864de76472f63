"""Helpers shared by rules: spelling AUTOTUNE in the file's own alias, adding an argument to a call, and
deciding whether a mapped function is provably pure TensorFlow."""
from __future__ import annotations

import re
from typing import Optional, Union

import libcst as cst

from ..semantics import Semantics, get_arg, literal_value
from ..semantics.tensors import tensors_of

# Calls whose result depends on hidden state or that act on the outside world: a function that calls one is not
# pure, so running it in parallel may change results (random streams) or effects (printing, Python code).
IMPURE_PREFIXES = (
    "tensorflow.random.", "tensorflow.image.random_", "tensorflow.compat.v1.random", "tensorflow.py_function",
    "tensorflow.numpy_function", "tensorflow.compat.v1.py_func", "tensorflow.print", "tensorflow.Variable",
    "tensorflow.io.write_file", "tensorflow.summary.", "tensorflow.debugging.", "tensorflow.keras.backend.random",
    "keras.random.", "tensorflow.experimental.numpy.random", "tensorflow.data.experimental.", "builtins.print",
    "builtins.open", "builtins.next",
)
PYTHON_FUNCTIONS = frozenset({"tensorflow.py_function", "tensorflow.numpy_function", "tensorflow.compat.v1.py_func",
                              "tensorflow.compat.v1.numpy_function", "tensorflow.compat.v1.py_function"})
RANDOM_PREFIXES = ("tensorflow.random.", "tensorflow.image.random_", "tensorflow.image.stateless_random_",
                   "tensorflow.compat.v1.random", "keras.random.", "tensorflow.keras.backend.random",
                   "tensorflow.experimental.numpy.random")
PURE_BUILTINS = frozenset({"builtins.len", "builtins.range", "builtins.int", "builtins.float", "builtins.isinstance",
                           "builtins.dict", "builtins.tuple", "builtins.list", "builtins.zip", "builtins.min",
                           "builtins.max", "builtins.abs", "builtins.str", "builtins.bool"})
# Tensor methods that are pure
PURE_METHODS = frozenset({"get_shape", "set_shape", "numpy", "astype", "items", "keys", "values", "get"})


def autotune(sem: Semantics, target_version: tuple[int, int], at: Optional[cst.CSTNode] = None) -> Optional[str]:
    """`tf.data.AUTOTUNE` as this file spells it (an existing `AUTOTUNE` name first), or
    `tf.data.experimental.AUTOTUNE` for targets older than 2.4; None if no import allows spelling it, or when the
    edit would go `at` a node in compatibility code (a `try/except AttributeError` fallback, an `if hasattr(...)`
    branch: it runs on versions that may lack the name, so no fix inserts it there)."""
    if at is not None and in_compat_code(sem, at):
        return None
    names = sem.names
    if target_version < (2, 4):
        return names.alias_for("tensorflow.data.experimental.AUTOTUNE")
    best = names.alias_for("tensorflow.data.AUTOTUNE")
    # an existing name bound to the older spelling is the same object; prefer the shorter spelling
    older = names.alias_for("tensorflow.data.experimental.AUTOTUNE")
    if older and "." not in older and (best is None or "." in best):
        return older
    return best


def add_keyword_arg(call: cst.Call, keyword: str, value: Union[str, cst.BaseExpression]) -> cst.Call:
    """`call` with `keyword=value` appended, keeping the call's layout (trailing commas, one arg a line)."""
    expr = cst.parse_expression(value) if isinstance(value, str) else value
    new_arg = cst.Arg(
        value=expr,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        # trailing comma: the new arg goes after it, laid out as the previous ones are
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            between = args[-2].comma.whitespace_after
        else:
            between = call.whitespace_before_args
            if isinstance(between, cst.ParenthesizedWhitespace):
                # same layout as before the first argument, without the comment that may follow `(`
                between = between.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        new_comma = last.comma
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=between))
        args.append(new_arg.with_changes(comma=new_comma))
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(new_arg)
    return call.with_changes(args=args)


def method_call(receiver: cst.BaseExpression, method: str, args: list[Union[str, cst.BaseExpression]]) -> cst.Call:
    """`receiver.method(args...)`."""
    arg_nodes = []
    for i, a in enumerate(args):
        expr = cst.parse_expression(a) if isinstance(a, str) else a
        arg_nodes.append(cst.Arg(expr))
    lpar = getattr(receiver, "lpar", ())
    if lpar:
        # `(a\n .b())` -> `(a\n .b().method())`: keep the parentheses around the whole chain
        inner = receiver.with_changes(lpar=[], rpar=[])
        return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name(method)), args=arg_nodes,
                        lpar=receiver.lpar, rpar=receiver.rpar)
    return cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name(method)), args=arg_nodes)


def calls_in_function(sem: Semantics, fn, depth: int = 1) -> list[tuple[cst.Call, Optional[str]]]:
    """Every call inside `fn` (a def or lambda) and, `depth` levels down, in same-file helpers it calls, with
    the call's qualified name (None when it does not resolve)."""
    out: list[tuple[cst.Call, Optional[str]]] = []
    seen: set[int] = set()

    def walk(f, d: int) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        for call in sem.functions.body_nodes(f, cst.Call):
            out.append((call, sem.call_name(call)))
            if d > 0:
                target = sem.functions.resolve_callable(call.func)
                if target is not None:
                    walk(target, d - 1)

    walk(fn, depth)
    return out


def sleeping_class(sem: Semantics, expr: cst.BaseExpression) -> bool:
    """`expr` names a same-file class with a `time.sleep` in its body (`class ArtificialDataset(tf.data.Dataset)`
    whose generator sleeps: the tf.data performance guide's stand-in for slow storage)."""
    if not isinstance(expr, cst.Name):
        return False
    b = sem.index.lookup(expr.value, expr)
    return (b is not None and b.kind == "class" and isinstance(b.node, cst.ClassDef)
            and any(sem.call_name(c) == "time.sleep" for c in sem.index.nodes_inside(b.node, cst.Call)))


def simulated_latency(sem: Semantics, fn, depth: int = 2) -> bool:
    """`fn` (or a same-file helper, or a function it hands to `py_function`) calls `time.sleep`: a benchmark's
    stand-in for slow reads or preprocessing (the tf.data performance guide's `ArtificialDataset`), written to
    show a pipeline's cost, not to be tuned away."""
    if fn is None:
        return False
    for call, q in calls_in_function(sem, fn, depth):
        if q == "time.sleep" or sleeping_class(sem, call.func):
            return True
        if q in PYTHON_FUNCTIONS or (q or "").endswith(("py_func", "py_function", "numpy_function")):
            first = get_arg(call, "func", 0)
            target = sem.functions.resolve_callable(first.value) if first is not None else None
            if target is not None and target is not fn and simulated_latency(sem, target, depth - 1):
                return True
    return False


def is_pure_tf(sem: Semantics, fn, depth: int = 2) -> bool:
    """True when every call in `fn` (and same-file helpers, `depth` levels) resolves to a TensorFlow or Keras
    op that is not random, not a Python function and not an effect, or to a pure builtin/tensor method."""
    if fn is None:
        return False
    for call, q in calls_in_function(sem, fn, depth):
        if q is None:
            func = call.func
            if sem.functions.resolve_callable(func) is not None:
                continue  # a same-file helper: walked by calls_in_function
            if isinstance(func, cst.Attribute) and func.attr.value in PURE_METHODS:
                continue
            return False
        if any(q.startswith(p) for p in IMPURE_PREFIXES):
            return False
        if q in PURE_BUILTINS:
            continue
        if not sem.names.is_tf(q):
            return False
    return True


def uses_random(sem: Semantics, fn, depth: int = 1) -> Optional[cst.Call]:
    """The first random-op call in `fn` or its same-file helpers, if any."""
    for call, q in calls_in_function(sem, fn, depth):
        if q and any(q.startswith(p) for p in RANDOM_PREFIXES) and "stateless" not in q:
            return call
        if q and q.startswith("keras.layers.Random"):
            return call
    return None


def python_function_call(sem: Semantics, fn, depth: int = 1) -> Optional[cst.Call]:
    for call, q in calls_in_function(sem, fn, depth):
        if q in PYTHON_FUNCTIONS:
            return call
    return None


def method_name(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def called_name(call: cst.Call) -> str:
    """The name a call is spelled with: `render` for `env.render()`, `train` for `train(x)`; "" otherwise."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def optimization_disabled(text: str, name: str, sem: Optional[Semantics] = None) -> bool:
    """The file switches one of tf.data's default static optimizations off (`options.experimental_optimization.<name>
    = False`, or all of them with `apply_default_optimizations = False`), in code that can run: with `sem`, an
    assignment under a branch that a module constant rules out (`if not ENABLE_OPTIMIZATIONS:` with
    `ENABLE_OPTIMIZATIONS = True`) does not count. Answered once per file text and name (rules ask per candidate
    call)."""
    if _DISABLED[0] is not text:
        _DISABLED[:] = [text, {}]
    known = _DISABLED[1]
    if name not in known:
        found = re.search(rf"\b(?:{name}|apply_default_optimizations)\s*=\s*False\b", text) is not None
        if found and sem is not None:
            found = any(_switches_off(a, name) and not switched_off(sem, a, negated=True)
                        for a in sem.index.nodes(cst.Assign))
        known[name] = found
    return known[name]


def _switches_off(a: cst.Assign, name: str) -> bool:
    return (isinstance(a.value, cst.Name) and a.value.value == "False" and len(a.targets) == 1
            and isinstance(a.targets[0].target, cst.Attribute)
            and a.targets[0].target.attr.value in (name, "apply_default_optimizations"))


_DISABLED: list = [None, {}]  # [the last file text asked about, name -> answer]


def order_not_required(text: str) -> bool:
    """The file lets tf.data yield elements out of order (`options.deterministic = False`,
    `experimental_deterministic = False`, or `deterministic=False` on a step): there, a transformation made parallel
    yields its elements in whatever order they finish."""
    if text is not _ORDER[0]:  # asked per call site: search each file's text once
        _ORDER[0], _ORDER[1] = text, _NOT_DETERMINISTIC.search(text) is not None
    return _ORDER[1]


_NOT_DETERMINISTIC = re.compile(r"\b(?:experimental_)?deterministic\s*=\s*False\b")
_ORDER: list = [None, False]  # [the last file text asked about, its answer]


# -- loops: how many times they run, and whether they train -----------------------------------------------------
# Since which release tf.data applies a static optimization by default, read from the releases themselves: the
# dataset graph after tf.data's meta optimizer (TF_DUMP_GRAPH_PREFIX) of `range(10).map(lambda x: x * 2)` and of
# `range(100).batch(4)`, in tensorflow-cpu 2.4.4 … 2.15.1 and 2.21.0. `map_parallelization` turns a stateless
# MapDataset into ParallelMapDatasetV2 from 2.5.3 on (2.4.4 keeps MapDataset); `inject_prefetch` appends a
# PrefetchDataset after a synchronous last transformation from 2.11.1 on (2.10.1 does not).
MAP_PARALLELIZATION_SINCE = (2, 5)
INJECT_PREFETCH_SINCE = (2, 11)
SMALL_LOOP = 10  # a loop known to run at most this many times is an inspection or a demo, not a training loop
# Calls in a loop body that do training, evaluation or inference work per element
WORK_METHODS = frozenset({
    "apply_gradients", "minimize", "gradient", "train_on_batch", "test_on_batch", "predict_on_batch", "run",
    "experimental_run_v2", "experimental_run", "fit", "evaluate", "predict", "update_state",
})
TINY_RUN_STEPS = 50  # a `fit` the code shows runs at most this many steps in all: a demo, a smoke test


def tiny_fit(sem: Semantics, call: cst.Call) -> bool:
    """`model.fit(ds, epochs=3, steps_per_epoch=3)`: a run whose step count the code spells (epochs times
    steps_per_epoch, both ints it fixes) is at most TINY_RUN_STEPS. Input time that overlaps nothing in a few dozen
    steps is seconds in all (round 20-22: notebooks fitting 9 steps, `fit(steps_per_epoch=1, epochs=3)` smoke
    tests, judged not worth acting on). Unknown counts (no `steps_per_epoch`: the dataset's size) are not tiny."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "fit"):
        return False
    steps = get_arg(call, "steps_per_epoch")
    epochs = get_arg(call, "epochs")
    if steps is None:
        return False
    n_steps = constant_int(sem, steps.value)
    n_epochs = constant_int(sem, epochs.value) if epochs is not None else 1
    return n_steps is not None and n_epochs is not None and 0 < n_steps * n_epochs <= TINY_RUN_STEPS


_STEP_NAME = re.compile(r"(^|_)(train|step|update|fit|optimi[sz]e|learn)(_|$)|_step$|step_fn|train", re.I)


def literal_int(expr: Optional[cst.BaseExpression]) -> Optional[int]:
    v = literal_value(expr) if expr is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def constant_int(sem: Semantics, expr: Optional[cst.BaseExpression]) -> Optional[int]:
    """An int the code fixes: a literal, or a name whose only binding in its scope assigns one
    (`BATCH_SIZE = 32`). A name bound twice, a parameter (its callers may pass anything) or an expression: None."""
    v = literal_int(expr)
    if v is not None or not isinstance(expr, cst.Name):
        return v
    return literal_int(sole_value(sem, expr, ("assign", "annassign")))


def sole_value(sem: Semantics, name: cst.Name, kinds=("assign",)) -> Optional[cst.BaseExpression]:
    """The value assigned to `name` by its only binding in its scope (`BATCH_SIZE = 32`, `epochs = range(10)`);
    None for a name bound twice, a parameter, an import."""
    b = sem.index.lookup(name.value, name)
    if b is None or b.kind not in kinds or b.value is None or b.scope is None:
        return None
    scope = sem.index.scopes.get(id(b.scope))
    if scope is None or len(scope.bindings.get(name.value, ())) != 1:
        return None
    return b.value


def loop_bound(sem: Semantics, loop: cst.CSTNode) -> Optional[int]:
    """At most how many times a `for` loop runs, when the code says so: `range(N)`, a literal list or tuple,
    `ds.take(N)`, `x[:N]`, `enumerate`/`zip` of those; None when unknown."""
    if isinstance(loop, cst.For):
        return _bound(sem, loop.iter)
    for_in = getattr(loop, "for_in", None)  # a comprehension: its first `for ... in ...`
    if isinstance(for_in, cst.CompFor):
        return _bound(sem, for_in.iter)
    return None


def _bound(sem: Semantics, expr: cst.BaseExpression, depth: int = 0) -> Optional[int]:
    if depth > 3:
        return None
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return len(expr.elements) if not any(isinstance(e, cst.StarredElement) for e in expr.elements) else None
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
        s = expr.slice[0].slice
        lower, upper = literal_int(s.lower) if s.lower else 0, literal_int(s.upper) if s.upper else None
        if upper is not None and lower is not None and upper >= 0 and lower >= 0 and s.step is None:
            return max(upper - lower, 0)
        return None
    if isinstance(expr, cst.Name):
        # `epochs = range(10)` ... `for epoch in epochs:` (the name's only binding in its scope)
        value = sole_value(sem, expr)
        return _bound(sem, value, depth + 1) if value is not None else None
    if not isinstance(expr, cst.Call):
        return None
    q = sem.call_name(expr)
    if q == "builtins.range":
        args = [a for a in expr.args if a.keyword is None]
        if len(args) == 1:
            return constant_int(sem, args[0].value)
        if len(args) == 2:
            lo, hi = constant_int(sem, args[0].value), constant_int(sem, args[1].value)
            return max(hi - lo, 0) if lo is not None and hi is not None else None
        return None
    if q in ("random.sample", "random.choices", "numpy.random.choice"):
        # `for s in random.sample(test_sentences, 10)`: a handful of examples picked for display
        k = get_arg(expr, "k", 1) if q != "numpy.random.choice" else get_arg(expr, "size", 1)
        return constant_int(sem, k.value) if k is not None else None
    if q == "builtins.enumerate" and expr.args:
        return _bound(sem, expr.args[0].value, depth + 1)
    if q == "builtins.zip" and expr.args:
        bounds = [_bound(sem, a.value, depth + 1) for a in expr.args]
        known = [b for b in bounds if b is not None]
        return min(known) if known else None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value == "take" and expr.args:
        n = literal_int(expr.args[0].value)
        if n is not None and n >= 0:  # `x.take(N)` in a loop header: a dataset's first N elements (a bound only
            return n                  # ever silences a rule, so an unknown receiver is taken at its word)
    return None


# calls that iterate what they are given (`for i, x in enumerate(ds)`, `for x in tqdm(ds)`, `for a, b in zip(d1, d2)`)
ITER_WRAPPERS = frozenset({"builtins.enumerate", "builtins.zip", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm",
                           "tqdm.std.tqdm"})


def iterated_values(sem, expr: cst.BaseExpression, depth: int = 0) -> list:
    """The values a `for` loop over `expr` iterates: `expr` itself, or the positional arguments of `enumerate`,
    `zip` and `tqdm` around it (nested up to three levels)."""
    if depth < 3 and isinstance(expr, cst.Call) and sem.call_name(expr) in ITER_WRAPPERS:
        out = []
        for a in expr.args:
            if a.keyword is None and not a.star:
                out.extend(iterated_values(sem, a.value, depth + 1))
        return out
    return [expr]


def runs_at_most(sem: Semantics, node: cst.CSTNode, depth: int = 0) -> Optional[int]:
    """At most how many times `node` runs, when every loop around it and around its function's call sites has a
    bound the code spells (`for epoch in range(10)`, `epochs = range(10)`); None when unknown (a function with no
    call site in the file runs unknown times)."""
    if depth > 3:
        return None
    owner = sem.functions.owner(node)
    loops = [lp for lp in sem.index.enclosing_loops(node) if sem.functions.owner(lp) is owner]
    if owner is None:
        return _product(sem, loops, None, None)  # module level (a script, a notebook's cells): runs once
    sites = tensors_of(sem).call_sites(owner)
    if not sites:
        return None
    runs = 0
    for site, _ in sites:
        # a loop over `range(steps)` of a parameter: the bound each call site passes (`forecast(model, 14)`)
        total = _product(sem, loops, owner, site)
        n = runs_at_most(sem, site, depth + 1) if total is not None else None
        if n is None:
            return None
        runs += total * n
    return runs


def _product(sem: Semantics, loops: list, owner, site: Optional[cst.Call]) -> Optional[int]:
    total = 1
    for lp in loops:
        bound = loop_bound(sem, lp)
        if bound is None and site is not None:
            bound = _bound_at(sem, lp, owner, site)
        if bound is None:
            return None
        total *= bound
    return total


def _bound_at(sem: Semantics, loop: cst.CSTNode, owner, site: cst.Call) -> Optional[int]:
    """`for _ in range(steps)` with `steps` a parameter of `owner`: the int `site` passes for it."""
    if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and sem.call_name(loop.iter) == "builtins.range"):
        return None
    args = [a for a in loop.iter.args if a.keyword is None and not a.star]
    if len(args) != 1 or len(loop.iter.args) != 1 or not isinstance(args[0].value, cst.Name):
        return None
    name = args[0].value.value
    params = [p for p in sem.functions.iter_params(owner) if p.name.value == name]
    b = sem.index.lookup(name, loop)
    if len(params) != 1 or b is None or b.kind != "param":
        return None
    return constant_int(sem, sem.functions.argument_at(owner, params[0], site))


def periodic_guard(sem: Semantics, node: cst.CSTNode, loop: cst.CSTNode) -> Optional[int]:
    """N when `node` sits, inside `loop`, under `if step % N == 0:` (or `!= 0` in its else, `not step % N`, `(i + 1) % N
    == 0`) with N an int the code fixes: it runs once every N iterations; None otherwise."""
    child = node
    for a in sem.index.ancestors(node):
        if a is loop:
            return None
        if isinstance(a, cst.If) and child is not a.test:
            in_body = child is a.body
            n = _modulo_zero(sem, a.test, in_body)
            if n is not None:
                return n
        child = a
    return None


def _modulo_zero(sem: Semantics, test: cst.BaseExpression, in_body: bool) -> Optional[int]:
    """`x % N == 0` is true once every N (so is `not x % N`); `x % N != 0` is, in its else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _modulo(sem, test.expression) if in_body else None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    comp = test.comparisons[0]
    if literal_int(comp.comparator) != 0:
        return None
    if isinstance(comp.operator, cst.Equal) and in_body or isinstance(comp.operator, cst.NotEqual) and not in_body:
        return _modulo(sem, test.left)
    return None


def _modulo(sem: Semantics, expr: cst.BaseExpression) -> Optional[int]:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        n = constant_int(sem, expr.right)
        return n if n is not None and n > 1 else None
    return None


def is_small_loop(sem: Semantics, loop: cst.CSTNode) -> bool:
    bound = loop_bound(sem, loop)
    return bound is not None and bound <= SMALL_LOOP


def working_loop(sem: Semantics, loop: cst.CSTNode) -> bool:
    """The loop is not known to run only a handful of times and does training, evaluation or inference work: what
    consumes a dataset, as opposed to a look at a few elements."""
    return not is_small_loop(sem, loop) and loop_does_work(sem, loop)


def reading_loop_trains(sem: Semantics, loop: cst.CSTNode) -> bool:
    """A loop over a dataset that consumes it as training (or evaluation, inference) input: a working loop that does
    not draw every element it reads (`for x, y in ds.batch(1): plt.bar(..., model(x)); plt.show()` is a figure per
    sample, paced by the drawing, with nothing for a prefetch to overlap)."""
    return working_loop(sem, loop) and not display_code(sem, loop)


def loop_does_work(sem: Semantics, loop: cst.CSTNode) -> bool:
    """The loop's body does training, evaluation or inference work on what it iterates: it calls a graph function
    or a step/train function, runs a strategy or a session, applies gradients, or calls a Keras model method."""
    # a `for`/`while` statement's body, or a comprehension's element expression(s)
    body = getattr(loop, "body", None) or getattr(loop, "elt", None) or getattr(loop, "value", None)
    if body is None:
        return False
    owner = sem.functions.owner(loop)
    for call in nodes_under(body, cst.Call):
        if sem.functions.owner(call) is not owner:
            continue  # a def or lambda inside the loop: not run by the loop itself
        if is_work_call(sem, call):
            return True
    return False


_USER_INPUT = frozenset({"builtins.input", "getpass.getpass", "builtins.raw_input"})
_UPLOAD = ("google.colab.files.upload", "ipywidgets.FileUpload")


def user_paced(sem: Semantics, loop: cst.CSTNode) -> bool:
    """The loop waits for a person every iteration: it calls `input()` (`Continue? (Y/n)`), or it walks the files
    the user just uploaded (`uploaded = files.upload()` then `for fn in uploaded.keys():`). Per-iteration overhead
    is invisible next to the person."""
    body = getattr(loop, "body", None)
    if body is not None and any(sem.call_name(c) in _USER_INPUT for c in nodes_under(body, cst.Call)):
        return True
    it = getattr(loop, "iter", None)
    while isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value in ("keys", "items", "values"):
        it = it.func.value
    if isinstance(it, cst.Name):
        b = sem.index.lookup(it.value, it)
        it = b.value if b is not None and b.kind == "assign" else None
    if isinstance(it, cst.Call) and (sem.call_name(it) or "").startswith(_UPLOAD):
        return True
    return _event_callback(sem, sem.index.enclosing_function(loop))


_PLOT_MODULES = ("matplotlib.", "IPython.display.", "seaborn.", "plotly.", "PIL.Image.Image.show")
# figure calls on an axes or figure object (`ax.imshow(img)`, `fig.add_subplot(...)`): names no array library uses
_PLOT_METHODS = frozenset({"imshow", "add_subplot", "set_title", "savefig", "suptitle", "set_xlabel", "set_ylabel",
                           "subplots_adjust", "tight_layout", "matshow", "set_xticks", "set_yticks"})


def _plot_call(sem: Semantics, call: cst.Call) -> bool:
    name = sem.call_name(call) or ""
    if name.startswith(_PLOT_MODULES) or name in ("builtins.display", "display"):
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in _PLOT_METHODS


def _conditional_in(sem: Semantics, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
    for a in sem.index.ancestors(node):
        if a is loop:
            return False
        if isinstance(a, cst.If):
            return True
    return False


def display_code(sem: Semantics, node: Optional[cst.CSTNode], depth: int = 1) -> bool:
    """`node` (a loop or a def) draws what it computes: it calls matplotlib, IPython's `display` or a figure method
    (`plt.subplot`, `ax.imshow`, `plt.savefig`), directly or through a same-file helper (`display([image, pred])`
    whose body plots). A loop that draws each result shows a handful of samples; the per-call overhead of the
    computation is invisible next to the drawing (judged not worth acting on in real code)."""
    body = getattr(node, "body", None) or getattr(node, "elt", None)
    if body is None:
        return False
    for call in nodes_under(body, cst.Call):
        if isinstance(node, (cst.For, cst.While)) and _conditional_in(sem, call, node):
            continue  # `if step % 50 == 0: save_images(step)`: a training loop that draws now and then
        if _plot_call(sem, call):
            return True
        if depth > 0:
            target = sem.functions.resolve_callable(call.func)
            if isinstance(target, cst.FunctionDef) and target is not node and display_code(sem, target, depth - 1):
                return True
    return False


def video_loop(sem: Semantics, loop: cst.CSTNode) -> bool:
    """The loop reads frames from a video capture (`while cap.isOpened(): ok, frame = cap.read()` with `cap =
    cv2.VideoCapture(...)`): it runs once per frame for as long as the stream lasts, so what it draws (`cv2.imshow`)
    is a live view, not a figure's handful of samples, and per-call overhead caps the frame rate."""
    parts = [getattr(loop, "test", None), getattr(loop, "body", None)]
    for part in parts:
        if part is None:
            continue
        for call in nodes_under(part, cst.Call):
            f = call.func
            if not (isinstance(f, cst.Attribute) and f.attr.value in ("read", "isOpened", "grab", "retrieve")):
                continue
            if isinstance(f.value, cst.Name):
                b = sem.index.lookup(f.value.value, f.value)
                value = b.value if b is not None and b.kind == "assign" else None
                if isinstance(value, cst.Call) and (sem.call_name(value) or "").endswith("VideoCapture"):
                    return True
    return False


_CALLBACK_REGISTRATIONS = frozenset({"observe", "on_click", "on_submit", "interact", "interactive", "interact_manual",
                                     "on_trait_change", "on_msg"})


def _event_callback(sem: Semantics, fn: Optional[cst.FunctionDef]) -> bool:
    """`fn` is registered as a widget callback (`uploader.observe(on_upload_change, names="value")`,
    `button.on_click(run)`, `interact(f, x=...)`): it runs when a person acts."""
    if fn is None:
        return False
    for name in sem.index.names_named(fn.name.value):
        arg = sem.index.parent(name)
        call = sem.index.parent(arg) if isinstance(arg, cst.Arg) and arg.value is name else None
        if isinstance(call, cst.Call):
            f = call.func
            method = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
            if method in _CALLBACK_REGISTRATIONS:
                return True
    return False


def nodes_under(node: cst.CSTNode, typ: type) -> list:
    """Every node of exactly type `typ` under `node` (itself included), read from the syntax fields."""
    from ..semantics.index import syntax_children

    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if type(n) is typ:
            out.append(n)
        stack.extend(syntax_children(n))
    return out


def is_work_call(sem: Semantics, call: cst.Call, depth: int = 2) -> bool:
    """The call does training, evaluation or inference work (a step, a graph function, a model, a strategy or
    session run, gradients), looking `depth` same-file calls deep."""
    func = call.func
    name = called_name(call)
    if isinstance(func, cst.Attribute) and name in WORK_METHODS:
        return True
    if name and _STEP_NAME.search(name):
        return True
    from .keras.models import is_model_value

    if is_model_value(sem, func):
        return True  # `model(x)`: a forward pass per element
    target = sem.functions.resolve_callable(func)
    if target is None:
        return False
    if sem.functions.is_tf_function(target):
        return True
    if depth > 0 and not isinstance(target, cst.Lambda):
        return any(is_work_call(sem, c, depth - 1) for c in sem.functions.calls_in(target))
    return False


def switched_off(sem: Semantics, node: cst.CSTNode, negated: bool = False) -> bool:
    """The node is in the body of an `if flag:` whose `flag` is a name every binding of which, in its scope, is the
    literal False (`eager = False` at the top of a training script, then `if eager: ...`): that branch runs only
    after the user edits the script, the shipped configuration never takes it. With `negated`, also the body of
    `if not flag:` whose every binding is the literal True (`if not ENABLE_DATA_OPTIMIZATIONS:`)."""
    prev = node
    for anc in sem.index.ancestors(node):
        if isinstance(anc, cst.If) and prev is anc.body:
            test, value = anc.test, False
            if negated and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, value = test.expression, True
            if isinstance(test, cst.Name):
                b = sem.index.lookup(test.value, test)
                scope = sem.index.scopes.get(id(b.scope)) if b is not None and b.scope is not None else None
                bindings = scope.bindings.get(test.value, ()) if scope is not None else ()
                if bindings and all(x.kind == "assign" and x.value is not None and literal_value(x.value) is value
                                    for x in bindings):
                    return True
        prev = anc
    return False


# -- compatibility code: written for more than one TensorFlow/Keras version on purpose ---------------------------
COMPAT_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "NameError", "TypeError"})
_COMPAT_TEST = re.compile(
    r"hasattr|getattr|__version__|version|VERSION|find_spec|executing_eagerly|keras_?3|KERAS|LooseVersion|"
    r"parse_version|tf_?[12](?!\d)|v2_behavior|tf_behavior|legacy", re.I,
)  # no bare `_is_`: `if self._is_mixed_precision:` tests a setting, not a version (judged on TensorFlowTTS)


def in_compat_code(sem: Semantics, node: cst.CSTNode) -> bool:
    """The node is part of code written for more than one version on purpose: a `try` whose handler catches an
    import or attribute error (either side), a branch of an `if`/conditional expression that tests `hasattr`, a
    version or eager mode, or the alternatives of an `isinstance(x, (Old, New))`."""
    prev = node
    for anc in sem.index.ancestors(node):
        if isinstance(anc, cst.Try):
            for h in anc.handlers:
                names = _exception_names(h.type) if h.type is not None else {"BaseException"}
                if names & COMPAT_EXCEPTIONS:
                    return True
        elif isinstance(anc, (cst.If, cst.IfExp)):
            if prev is not anc.test and _version_test(sem, anc.test):
                return True
        elif isinstance(anc, cst.Call) and isinstance(prev, cst.Arg):
            q = sem.call_name(anc)
            if q in ("builtins.isinstance", "builtins.issubclass") and isinstance(prev.value, cst.Tuple):
                return True
        prev = anc
    return False


_VERSION_LITERAL = re.compile(r"^\d+\.\d+(\.\d+)?")


def _version_test(sem: Semantics, test: cst.BaseExpression) -> bool:
    """The test of an `if` asks which TensorFlow/Keras it runs on: it spells a version or feature check
    (`hasattr`, `__version__`, `tf2`, ...), compares with a version string (`cur_tf_ver == '2.0.0'`), or reads a
    name bound to such a check (`cur_tf_ver = tf.__version__`: round 23, moono/stylegan2-tf-2.x calls
    `experimental_run_v2` on TF 2.0.0, which has no `strategy.run`; 5 findings judged false)."""
    if _COMPAT_TEST.search(sem.module.code_for_node(test)):
        return True
    for s in nodes_under(test, cst.SimpleString):
        if isinstance(s.evaluated_value, str) and _VERSION_LITERAL.match(s.evaluated_value):
            return True
    for n in nodes_under(test, cst.Name):
        b = sem.index.lookup(n.value, n)
        if b is not None and b.kind in ("assign", "annassign") and b.value is not None \
                and _COMPAT_TEST.search(sem.module.code_for_node(b.value)):
            return True
    return False


def _exception_names(expr: cst.BaseExpression) -> set[str]:
    if isinstance(expr, cst.Tuple):
        out: set[str] = set()
        for e in expr.elements:
            out |= _exception_names(e.value)
        return out
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, cst.Attribute):
        return {expr.attr.value}
    return set()


# -- training steps ---------------------------------------------------------------------------------------------
APPLY_METHODS = frozenset({"apply_gradients", "minimize"})
# updates that make a function with a GradientTape a training step (`w.assign_sub(lr * tape.gradient(loss, w))`)
UPDATE_METHODS = frozenset({"assign_sub", "assign_add", "assign"})
_TAPES = frozenset({"tensorflow.GradientTape", "tensorflow.compat.v1.GradientTape"})


def applies_gradients(sem: Semantics, fn, depth: int = 2, _seen: Optional[set] = None) -> bool:
    """`fn` (a def or lambda) is a training step: it calls `apply_gradients`/`minimize` in its body, in a same-file
    helper (`depth` calls deep) or in the function it gives `strategy.run`; or it opens a `tf.GradientTape`, takes
    `.gradient(...)` and assigns a variable (a hand-written SGD update)."""
    seen = _seen if _seen is not None else set()
    if fn is None or id(fn) in seen:
        return False
    seen.add(id(fn))
    calls = sem.functions.calls_in(fn)
    methods = {c.func.attr.value for c in calls if isinstance(c.func, cst.Attribute)}
    if methods & APPLY_METHODS:
        return True
    if "gradient" in methods and methods & UPDATE_METHODS and any(sem.call_name(c) in _TAPES for c in calls):
        return True
    if depth <= 0:
        return False
    for call in calls:
        func = call.func
        targets = [sem.functions.resolve_callable(func)]
        if isinstance(func, cst.Attribute) and func.attr.value in ("run", "experimental_run_v2"):
            first = get_arg(call, "fn", 0)
            if first is not None:
                targets.append(sem.functions.resolve_callable(first.value))
        if any(t is not None and applies_gradients(sem, t, depth - 1, seen) for t in targets):
            return True
    return False

