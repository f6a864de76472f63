"""TFL208 eager-train-step: a GradientTape + apply_gradients step called in a loop with no tf.function.

The fix adds `@tf.function` only where none of the preconditions of the Hybridize Functions refactoring fails
(Khatchadourian et al.): no Python side effects, no `.numpy()`/NumPy/`float()` on values, no Python iteration over
the step's arguments, no recursion, some TensorFlow computation, and no call site passing a Python number that
changes per iteration (that would retrace on every call). Otherwise the finding has no fix and says why.
"""
from __future__ import annotations

import re

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check, NodeEdit
from ..common import APPLY_METHODS, SMALL_LOOP, runs_at_most
from ._graph import LIST_MUTATORS, indentation, is_outer_container, spell, tensors, walk

_CONTRIB_EAGER = re.compile(r"\bcontrib\.eager\b|\bfrom tensorflow\.contrib import eager\b")
EFFECT_PREFIXES = ("builtins.print", "builtins.open", "builtins.input", "logging.", "time.", "tqdm.", "os.",
                   "sys.", "wandb.", "mlflow.", "absl.logging.", "json.", "pickle.", "random.", "shutil.")
_PASS_THROUGH = frozenset({"builtins.staticmethod", "builtins.classmethod", "builtins.property", "functools.wraps",
                           "abc.abstractmethod", "typing.overload"})
SCALAR_STEPS = 500  # a scalar model trained at most this many steps eagerly: under 1 s in all (measured)
_VARIABLE = ("tensorflow.Variable", "tensorflow.compat.v1.Variable")
_SCALAR_RANDOM = ("numpy.random.randn", "numpy.random.rand", "numpy.random.random", "numpy.random.normal",
                  "numpy.random.uniform", "random.random", "random.gauss")
NUMPY_CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.complex"})


def applies_update(calls) -> bool:
    """The calls apply gradients: an optimizer's `apply_gradients`/`minimize`, or `tape.gradient(...)` and a
    variable's `assign_sub` (the hand-written SGD update of TensorFlow's low-level training tutorials:
    `w.assign_sub(lr * dw)`; dragen1860's book, four round-20 misses) or a Sonnet optimizer's `apply`."""
    methods = {c.func.attr.value for c in calls if isinstance(c.func, cst.Attribute)}
    # Sonnet 2's optimizers update with `opt.apply(grads, params)` (deepmind/sonnet's MLP-on-MNIST example, a
    # round-19 miss): `apply` beside `tape.gradient` in the same function
    return bool(methods & APPLY_METHODS) or {"gradient", "assign_sub"} <= methods or {"gradient", "apply"} <= methods


# precondition failures that mean the step works on host values every iteration (an RL step sampling a NumPy
# replay buffer, a step that logs `loss.numpy()`): `tf.function` cannot wrap it as written, so the claim that
# wrapping it runs each step as one graph does not hold; unknown means silent
NUMPY_READ = "calls `.numpy()`"
HOST_VALUE_REASONS = ("it calls `.numpy()`", "it calls NumPy", "it converts a value to Python", "it calls `")  # helpers and passed functions too


class EagerTrainStep(Check):
    code = "TFL208"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        # contrib-era TF1 eager code (`tfe = tf.contrib.eager`, written for TF 1.8-1.12): the remedy there is
        # `tfe.defun`, not `tf.function` (round 20, judged false). Plain `tf.enable_eager_execution()` code on a
        # TF 1.15 target keeps the finding: TF 1.15 has `tf.function` (horovod's eager MNIST, judged true)
        if ctx.target.version < (2, 0) and _CONTRIB_EAGER.search(ctx.text):
            self.skip_file = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.functions.is_tf_function(node) or self.functions.framework_hook(node) or not self._is_step(node) \
                or self._loops_inline(node):
            return
        if any(not self._pass_through(d) for d in node.decorators):
            return  # a decorator of the project's (`@distributed(strategy)` returning a `tf.function` wrapper that runs
            # the step through `strategy.run`: deeplearning.ai's distributed GAN, round 28, judged false): unknown
        call = self._loop_call(node)
        if call is None or self._scalar_model(self.functions.calls_in(node), call):
            return
        message = (f"`{node.name.value}` computes gradients and applies them, and is called in a loop, but runs "
                   "eagerly (op by op, in Python): wrapping it in `tf.function` runs each step as one graph")
        failed = self._precondition_failure(node)
        if failed is not None and failed.startswith(HOST_VALUE_REASONS):
            return  # it needs host values each step (`.numpy()`, NumPy, `predict`): not a graph step as written
        if failed is None:
            failed = self._retrace_risk(node)
        deco = spell(self, "tensorflow.function")
        if failed is not None or deco is None or node.decorators or node.asynchronous is not None:
            reason = failed or ("it already has decorators" if node.decorators else "no `tensorflow` import to spell it")
            self.report(node.name, f"{message}; no automatic fix: {reason}")
            return
        text = f"@{deco}\n{indentation(self, node)}"
        self.report(node.name, message, edits=[NodeEdit(node, "insert_before", text=text)],
                    applicability=Applicability.UNSAFE, fix_message=f"Decorate `{node.name.value}` with `@{deco}`"
                                 " (Python control flow on tensors becomes graph control flow; the first call traces, "
                                 "and arguments of new shapes or new Python values trace again)")

    def visit_For(self, node: cst.For) -> None:
        self._inline_loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._inline_loop(node)

    # -- matching ----------------------------------------------------------------------------------------
    def _is_step(self, fn: cst.FunctionDef) -> bool:
        if not self._tapes(fn):
            return self._calls_steps(fn)
        return applies_update(self.functions.calls_in(fn))

    def _tapes(self, fn: cst.FunctionDef) -> list[cst.With]:
        """The `with tf.GradientTape() as tape:` blocks of `fn`'s own body (not of defs nested in it)."""
        return [w for w in self.functions.body_nodes(fn, cst.With) if self.functions.owner(w) is fn
                and any(self._is_tape(i.item) for i in w.items)]

    def _pass_through(self, dec: cst.Decorator) -> bool:
        """A decorator that leaves how the function runs as it is: `staticmethod`, `classmethod`, `functools.wraps`,
        `property`, `abc.abstractmethod`."""
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        q = self.names.qualified_name(expr) or ""
        return q in _PASS_THROUGH

    def _calls_steps(self, fn: cst.FunctionDef) -> bool:
        """`fn` opens no tape itself but calls, once each and outside any loop of its own, same-file functions that
        are eager steps (`train_step` calling `discriminator_train_step` and `generator_train_step`, each a tape and
        `apply_gradients`: a GAN's step, asl-ml-immersion's conditional GAN, a round-21 miss). Decorating `fn` runs
        the whole step as one graph."""
        found = False
        for call in self.functions.calls_in(fn):
            callee = self.functions.resolve_callable(call.func)
            if not isinstance(callee, cst.FunctionDef) or callee is fn \
                    or self.functions.tf_function_reason(callee) in ("decorated", "wrapped"):
                continue  # (a helper also called from graph code elsewhere still runs eagerly when `fn` calls it)
            if not self._tapes(callee) or not applies_update(self.functions.calls_in(callee)):
                continue
            if any(isinstance(lp, (cst.For, cst.While)) for lp in self.index.enclosing_loops(call)):
                return False  # a loop of steps: `fn` trains an epoch, its helper is the step (reported itself)
            found = True
        return found

    def _loops_inline(self, fn: cst.FunctionDef) -> bool:
        """Every tape of `fn` sits in a loop of `fn`'s own: `fn` is a training loop (an epoch, a whole run) with
        the step written inline, which the inline finding reports; wrapping the loop in `tf.function` is not the
        remedy (round 20: an epoch function printing `loss.numpy()`, a DQN `train` sampling a Python replay buffer
        per iteration, each reported twice and judged false)."""
        tapes = self._tapes(fn)
        return bool(tapes) and all(
            any(isinstance(lp, (cst.For, cst.While)) for lp in self.index.enclosing_loops(w)) for w in tapes)

    def _is_tape(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.names.call_name(expr) in ("tensorflow.GradientTape",
                                                                             "tensorflow.compat.v1.GradientTape")

    def _loop_call(self, fn: cst.FunctionDef) -> Optional[cst.Call]:
        for call in self.index.nodes(cst.Call):
            if self.functions.resolve_callable(call.func) is fn:
                loops = [lp for lp in self.index.enclosing_loops(call) if isinstance(lp, (cst.For, cst.While))]
                if loops and self.functions.tf_function_of(call) is None and not self._few_steps(call):
                    return call
        return None

    def _inline_loop(self, loop) -> None:
        """A loop whose own body opens a GradientTape and applies gradients, outside any graph function."""
        if self.functions.tf_function_of(loop) is not None:
            return
        owner = self.functions.owner(loop)
        if owner is not None and self.functions.framework_hook(owner):
            return  # TF-Agents' `_train`: the framework traces it
        for w in walk(loop.body, cst.With):
            if self.functions.owner(w) is not owner or not any(self._is_tape(i.item) for i in w.items):
                continue
            inner_loops = [lp for lp in self.index.enclosing_loops(w) if isinstance(lp, (cst.For, cst.While))]
            if not inner_loops or inner_loops[0] is not loop:
                continue  # reported for the innermost loop
            calls = walk(loop.body, cst.Call)
            if applies_update(calls) and not self._few_steps(w) and not self._scalar_model(calls, w):
                self.report(w, "A GradientTape training step written inline in a loop runs eagerly (op by op, in "
                               "Python); move the step into a function decorated with `@tf.function` and call it "
                               "in the loop")
            return

    def _scalar_model(self, calls, site: cst.CSTNode) -> bool:
        """Every `tape.gradient(loss, sources)` differentiates with respect to scalar variables only (`W =
        tf.Variable(0.0)`, `b = tf.Variable(np.random.randn())`, a `tf.Module` whose `__init__` holds only such
        variables), and the loops around `site` run it at most SCALAR_STEPS times: the two-number linear regressions
        of guides and textbooks. Measured on TF 2.21 (2 CPU cores): 1.9 ms per eager step, 0.1 ms per graph step,
        ~150 ms to trace, so 100 steps save 0.14 s and 500 under 1 s, while 1,000 save 1.7 s (round 22: eight such
        loops of 30-200 steps judged not worth acting on; a 1,000-step one judged true). Sources spelled any other
        way (a model's layers, a parameter, an attribute) keep the finding."""
        runs = runs_at_most(self.sem, site)
        if runs is None or runs > SCALAR_STEPS:
            return False
        grads = [c for c in calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "gradient"]
        if not grads:
            return False
        for g in grads:
            sources = get_arg(g, "sources", 1)
            if sources is None or not self._scalar_variables(sources.value, 0):
                return False
        return True

    def _scalar_variables(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, (cst.List, cst.Tuple)):
            return bool(expr.elements) and all(
                not isinstance(e, cst.StarredElement) and self._scalar_variables(e.value, depth + 1)
                for e in expr.elements)
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("trainable_variables", "variables"):
            cls = self.functions.instance_class(expr.value)
            init = self.functions.method(cls, "__init__") if cls is not None else None
            if init is None or self.functions.is_keras_class(cls):
                return False
            held = self.index.self_assignments(cls)
            return bool(held) and all(self._scalar_variable(v) for values in held.values() for v in values)
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is None or b.kind != "assign" or b.value is None:
                return False
            return self._scalar_variable(b.value) or self._scalar_variables(b.value, depth + 1)
        return False

    def _scalar_variable(self, value: cst.BaseExpression) -> bool:
        """`tf.Variable(0.0)`, `tf.Variable(-1)`, `tf.Variable(np.random.randn())`, `tf.Variable(5.0, name="w")`."""
        if not (isinstance(value, cst.Call) and self.names.call_name(value) in _VARIABLE):
            return False
        init = get_arg(value, "initial_value", 0)
        if init is None:
            return False
        v = init.value
        if isinstance(v, cst.UnaryOperation) and isinstance(v.operator, (cst.Minus, cst.Plus)):
            v = v.expression
        if isinstance(v, (cst.Integer, cst.Float)):
            return True
        return isinstance(v, cst.Call) and not v.args and self.names.call_name(v) in _SCALAR_RANDOM

    def _few_steps(self, node: cst.CSTNode) -> bool:
        """The loops around `node` have bounds the code spells (`for epoch in range(10)`, `epochs = range(10)`), also
        around the calls of the function it sits in, and together run it at most SMALL_LOOP times: a trace costs
        about as much as that many eager steps (measured on TF 2.21, 2 CPU cores: the first `tf.function` call of a
        two-variable tape step took 175 ms against 18.6 ms per eager step and 2.1 ms per graph step, even after 11
        steps; a 64-unit Keras MLP's, 464 ms against 110 ms and 1.8 ms, after 4). Round 22: TensorFlow's guides
        train ten times to show the loop, judged not worth acting on."""
        runs = runs_at_most(self.sem, node)
        return runs is not None and runs <= SMALL_LOOP

    # -- preconditions -----------------------------------------------------------------------------------
    def _precondition_failure(self, fn: cst.FunctionDef) -> Optional[str]:
        params = {p.name.value for p in (list(fn.params.posonly_params) + list(fn.params.params))}
        has_tf = False
        shown: Optional[cst.Call] = None  # a host read whose value is only printed or logged
        for call in self.functions.body_nodes(fn, cst.Call):
            q = self.names.call_name(call) or ""
            func = call.func
            if q.startswith(EFFECT_PREFIXES):
                return f"it has a Python side effect (`{self.code_for(func)}`)"
            read = self._host_read(call)  # exclusive with the checks below: `.numpy()` / `float(t)`
            if read is not None and self._only_shown(call, fn):
                shown = shown or call
                continue
            if read is not None:
                return f"it {read}" if read == NUMPY_READ else f"it {read} (`{self.code_for(call)}`)"
            if isinstance(func, cst.Attribute) and func.attr.value == "predict":
                return f"it calls `{self.code_for(func)}` (a whole Keras predict loop)"
            if q.startswith("numpy."):
                return f"it calls NumPy (`{self.code_for(func)}`)"
            if isinstance(func, cst.Attribute) and func.attr.value in LIST_MUTATORS and is_outer_container(self, func.value, fn):
                return f"it mutates `{self.code_for(func.value)}`, created outside the step"
            if self.functions.resolve_callable(func) is fn:
                return "it is recursive"
            if self.names.is_tf(q) or isinstance(func, cst.Attribute):
                has_tf = True
        for typ in (cst.Global, cst.Nonlocal):
            if self.functions.body_nodes(fn, typ):
                return "it writes a `global`/`nonlocal` variable"
        for loop in self.functions.body_nodes(fn, cst.For):
            if {n.value for n in walk(loop.iter, cst.Name)} & params:
                return "it iterates in Python over an argument"
        for assign in self.functions.body_nodes(fn, cst.Assign):
            for t in assign.targets:
                if isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) and t.target.value.value == "self":
                    return f"it assigns `{self.code_for(t.target)}` (a Python side effect)"
        for aug in self.functions.body_nodes(fn, cst.AugAssign):
            # `self.epsilon *= self.epsilon_decay` in the step: a traced step would decay it only while tracing
            # (rlcode's Deep SARSA, round 28: the offered decorator judged false)
            t = aug.target
            if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                return f"it updates `{self.code_for(t)}` (a Python side effect)"
        if not has_tf and not self._calls_steps(fn):  # (a step made of same-file steps computes in them)
            return "it does no TensorFlow computation"
        found = (self._host_values_in_helpers(fn) or self._host_values_in_passed_functions(fn)
                 or self._python_state_in_passed_instances(fn) or self._eager_only_model(fn))
        if found is None and shown is not None:
            return (f"it reads `{self.code_for(shown)}` back to Python where the tensor itself would do (printed "
                    "with `tf.print`, logged to `tf.summary` or assigned to a variable): drop the read, then "
                    "decorate the step")
        return found

    def _only_shown(self, read: cst.Call, fn: cst.FunctionDef) -> bool:
        """The host value `read` produces goes only where the tensor itself would do: into the arguments of
        `tf.print` or a `tf.summary` call, directly or in a string it formats (`tf.print("lr: %.6f" %
        optimizer.lr.numpy())`), or straight into a variable's `assign` (`optimizer.lr.assign(lr.numpy())`):
        yolov4-tflite's step in round 19. Its value feeds no Python computation, so the step compiles once the
        read is dropped (and the print is a graph print)."""
        child: cst.CSTNode = read
        for a in self.index.ancestors(read):
            if a is fn or isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return False
            if isinstance(a, cst.Call) and child is not a.func:
                q = self.names.call_name(a) or ""
                if q in ("tensorflow.print", "tensorflow.compat.v1.print") or q.startswith("tensorflow.summary."):
                    return True
                direct = isinstance(child, cst.Arg) and child.value is read
                return direct and isinstance(a.func, cst.Attribute) and \
                    a.func.attr.value in ("assign", "assign_add", "assign_sub")
            child = a
        return False

    def _host_read(self, call: cst.Call) -> Optional[str]:
        """What the call does that reads a value back to the host: `.numpy()`, or `float(t)`/`int(t)` of a tensor."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not call.args:
            return NUMPY_READ
        if (self.names.call_name(call) or "") in NUMPY_CONVERSIONS and call.args \
                and literal_value_is_python(call.args[0].value) is False:
            return "converts a value to Python"
        return None

    def _host_values_in_helpers(self, fn: cst.FunctionDef, depth: int = 2, seen: Optional[set] = None) -> Optional[str]:
        """A same-file helper the step calls (`self.plot(...)`, `grad_clipping(...)`, two calls deep) reads host
        values (`.numpy()`, `float(t)`). Compiling the step then needs that helper rewritten too."""
        seen = seen if seen is not None else {id(fn)}
        for call in self.functions.calls_in(fn):
            target = self.functions.resolve_callable(call.func)
            if not isinstance(target, cst.FunctionDef) or id(target) in seen:
                continue
            seen.add(id(target))
            for inner in self.functions.calls_in(target):
                read = self._host_read(inner)
                if read is not None:
                    return f"it calls `{self.code_for(call.func)}`, which {read}"
            if depth > 1:
                found = self._host_values_in_helpers(target, depth - 1, seen)
                if found:
                    return found
        return None

    def _eager_only_model(self, fn: cst.FunctionDef) -> Optional[str]:
        """The step calls an instance of a same-file class (`model(ids)`, `self.net(x)`) whose `call`/`__call__` reads
        host values or runs NumPy on its inputs (`np.unique(ids)`, `.numpy()`, two helper calls deep): an eager-only
        model, which a `tf.function` around the step cannot trace (round 20: recommenders-addons' dynamic-embedding
        tutorial, `np.unique` in the model's `call`, judged false)."""
        for call in self.functions.calls_in(fn):
            cls = self.functions.instance_class(call.func)
            if cls is None:
                continue
            method = self.functions.method(cls, "call") or self.functions.method(cls, "__call__")
            if method is None:
                continue
            params = {p.name.value for p in self.functions.iter_params(method)} - {"self"}
            read = self._reads_inputs(method, params, "runs NumPy on its inputs")
            if read is not None:
                return f"it calls `{self.code_for(call.func)}`, whose `{method.name.value}` {read} (an eager-only model)"
            found = self._host_values_in_helpers(method, 1, {id(fn), id(method)})
            if found is not None:
                return f"it calls `{self.code_for(call.func)}`, whose `{method.name.value}` {found[len('it '):]}"
        return None

    def _host_values_in_passed_functions(self, fn: cst.FunctionDef) -> Optional[str]:
        """A call site passes the step a same-file function (`_train_step(net, x, y, acc=accuracy)`) that runs NumPy
        on its arguments or reads them back (`np.argmax(logits, 1)`): called on the step's symbolic tensors inside a
        `tf.function`, it fails (judged false 8 times in tensorlayer's quantized-net tutorials)."""
        for call in self.index.nodes(cst.Call):
            if self.functions.resolve_callable(call.func) is not fn:
                continue
            for a in call.args:
                if not isinstance(a.value, cst.Name):
                    continue
                target = self.functions.resolve_callable(a.value)
                if not isinstance(target, cst.FunctionDef) or target is fn:
                    continue
                params = {p.name.value for p in (list(target.params.posonly_params) + list(target.params.params))}
                read = self._reads_inputs(target, params, "calls NumPy on its arguments")
                if read is not None:
                    return f"it calls `{a.value.value}` (passed in at a call site), which {read}"
        return None

    def _reads_inputs(self, fn, params: set[str], numpy_reason: str) -> Optional[str]:
        """What `fn`'s own calls do that needs host values: a read back (`.numpy()`, `float(t)`), or a NumPy call on
        one of `params` (then `numpy_reason`); None when nothing does."""
        for inner in self.functions.calls_in(fn):
            read = self._host_read(inner)
            q = self.names.call_name(inner) or ""
            if read is None and q.startswith("numpy.") and any(
                    n.value in params for a in inner.args for n in walk(a.value, cst.Name)):
                read = numpy_reason
            if read is not None:
                return read
        return None

    def _python_state_in_passed_instances(self, fn: cst.FunctionDef) -> Optional[str]:
        """A call site passes the step an instance of a same-file class (`train_step(..., optimizer=Adam())`) whose
        method the step calls updates Python state on the instance (`self.t += 1.` in a hand-written Adam's
        `apply_gradients`): inside a `tf.function` that runs only while tracing, so the compiled step would keep
        t at its first value (round 22: TensorFlow's own core-API MLP guide, judged false)."""
        positional = list(fn.params.posonly_params) + list(fn.params.params)
        receivers: dict[str, list[str]] = {}
        for call in self.functions.calls_in(fn):
            f = call.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name):
                receivers.setdefault(f.value.value, []).append(f.attr.value)
        params = [p for p in positional if p.name.value in receivers]
        if not params:
            return None
        for site, _ in tensors(self).call_sites(fn):
            for param in params:
                arg = self.functions.argument_at(fn, param, site)  # a method's `self` is not a call-site argument
                cls = self.functions.instance_class(arg) if arg is not None else None
                if cls is None:
                    continue
                for method_name in receivers[param.name.value]:
                    method = self.functions.method(cls, method_name)
                    if method is None:
                        continue
                    for aug in self.functions.body_nodes(method, cst.AugAssign):
                        t = aug.target
                        if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                            return (f"it calls `{param.name.value}.{method_name}` (`{cls.name.value}`, passed in at a "
                                    f"call site), which updates Python state (`{self.code_for(aug).strip()}`) that a "
                                    "graph would update only while tracing")
        return None

    def _retrace_risk(self, fn: cst.FunctionDef) -> Optional[str]:
        t = tensors(self)
        for call in self.index.nodes(cst.Call):
            if self.functions.resolve_callable(call.func) is not fn:
                continue
            for a in call.args:
                for name in walk(a.value, cst.Name):
                    if t.python_loop_index(name) is not None and not t.is_tensor(a.value):
                        return (f"a call passes the Python loop counter `{name.value}`, which would retrace the "
                                "function on every call")
        return None


def literal_value_is_python(expr: cst.BaseExpression) -> bool:
    from ...semantics import NOT_LITERAL, literal_value

    return literal_value(expr) is not NOT_LITERAL
