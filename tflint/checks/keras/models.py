"""What the Keras rules know about models and layers, from the source alone.

A value is a Keras model when it traces back (through variables, `self.x = ...` in the same class, and
same-file builder functions) to `keras.Sequential(...)`, `keras.Model(...)`, `keras.models.load_model(...)`,
`keras.applications.*(...)`, or an instance of a same-file subclass of `keras.Model`. A layer is a call to a
`keras.layers.*` constructor. `tf.keras`, `tf_keras` and standalone `keras` all resolve to `keras.*`.
Anything else (a scikit-learn estimator, a PyTorch module, a parameter of unknown type) is not a model.
"""
from __future__ import annotations

import re

from typing import Optional

import libcst as cst

from ...semantics import Semantics

from ...semantics.keras_api import FUNCTIONAL, MODEL_CLASSES, MODEL_CONSTRUCTORS, SEQUENTIAL  # noqa: F401 (re-exported)


def _keras_model_class(sem: Semantics, cls: cst.ClassDef) -> bool:
    return sem.functions.derives_from(cls, MODEL_CLASSES.__contains__)


def model_constructor(sem: Semantics, call: cst.Call, _depth: int = 0) -> Optional[str]:
    """How `call` creates a Keras model ('sequential', 'functional', 'loaded', 'application', 'subclass',
    'builder'), or None when it does not (as far as this file shows)."""
    q = sem.call_name(call)
    if q is not None:
        if q in SEQUENTIAL:
            return "sequential"
        if q in FUNCTIONAL:
            return "functional"
        if q in MODEL_CONSTRUCTORS:
            return "loaded"
        if q.startswith("keras.applications.") and q.rsplit(".", 1)[-1][:1].isupper():
            return "application"
        if _project_model_class(sem, call):
            return "subclass"
        return "builder" if _project_model_builder(sem, call) else None
    if _project_model_class(sem, call):
        return "subclass"
    if _project_model_builder(sem, call):
        return "builder"
    if isinstance(call.func, cst.Name):
        b = sem.index.lookup(call.func.value, call.func)
        if b is not None and b.kind == "class" and isinstance(b.node, cst.ClassDef):
            return "subclass" if _keras_model_class(sem, b.node) else None
    if _depth < 3:
        fn = sem.functions.resolve_callable(call.func)
        if isinstance(fn, cst.FunctionDef):
            returns = [r for r in sem.functions.body_nodes(fn, cst.Return)
                       if sem.functions.owner(r) is fn and r.value is not None]
            if returns and all(is_model(sem, r.value, _depth + 1) for r in returns):
                return "builder"
    return None


def _project_model_class(sem: Semantics, call: cst.Call) -> bool:
    """`call` constructs a Keras model class another module of the project defines (`from model import VGG16`)."""
    name = sem.names.project_name(call.func)
    return name is not None and sem.project.keras_class_of_call(name) == "model"


def _project_model_builder(sem: Semantics, call: cst.Call) -> bool:
    """`call` calls a function another module of the project defines that returns a Keras model (`from nets.unet
    import Unet as unet; self.model = unet(...)`: bubbliiiing/unet-tf2, round 17)."""
    name = sem.names.project_name(call.func)
    return name is not None and bool(sem.project.model_builder(name))


def is_model(sem: Semantics, expr: cst.BaseExpression, _depth: int = 0) -> bool:
    return model_origin(sem, expr, _depth) is not None


def model_origin(sem: Semantics, expr: cst.BaseExpression, _depth: int = 0) -> Optional[cst.Call]:
    """The call that created the Keras model `expr` refers to, or None."""
    if _depth > 6:
        return None
    if isinstance(expr, cst.Call):
        return expr if model_constructor(sem, expr, _depth) else None
    if isinstance(expr, cst.Name):
        b = sem.index.lookup(expr.value, expr)
        if b is None:
            return None
        if b.kind in ("assign", "annassign") and b.value is not None and b.value is not expr:
            return model_origin(sem, b.value, _depth + 1)
        if b.kind == "unpack" and isinstance(b.value, cst.Call) and b.index is not None:
            return _returned_model_item(sem, b.value, b.index, _depth + 1)
        return None  # parameters annotated `keras.Model`: see is_model_value
    for value in self_attribute_values(sem, expr):
        found = model_origin(sem, value, _depth + 1)
        if found is not None:
            return found
    return None


def _returned_model_item(sem: Semantics, call: cst.Call, item: int, _depth: int) -> Optional[cst.Call]:
    """`gen0, gen1 = build_generator(...)` with a same-file function whose every return is a tuple holding a Keras
    model at that position (`return gen0, gen1`: Advanced-Deep-Learning-with-Keras's StackedGAN, round 20 misses)."""
    fn = sem.functions.resolve_callable(call.func)
    if not isinstance(fn, cst.FunctionDef):
        return None
    returns = [r.value for r in sem.functions.body_nodes(fn, cst.Return) if sem.functions.owner(r) is fn]
    found = None
    for value in returns:
        if not isinstance(value, (cst.Tuple, cst.List)) or item >= len(value.elements) or any(
                isinstance(e, cst.StarredElement) for e in value.elements):
            return None
        found = model_origin(sem, value.elements[item].value, _depth)
        if found is None:
            return None
    return found


def self_attribute_values(sem: Semantics, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """For `self.x`, the values assigned to `self.x` anywhere in the enclosing class; for `obj.x` with `obj` an
    instance of a same-file class (`self.actor.model`, `agent.model`), those assigned to `self.x` in that class."""
    if not isinstance(expr, cst.Attribute):
        return []
    if not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        owner = sem.functions.instance_class(expr.value)
        return list(sem.index.self_assignments(owner).get(expr.attr.value, ())) if owner is not None else []
    cls = sem.index.enclosing_class(expr)
    if cls is None:
        return []
    # a subclass method reads what the same-file base class's `__init__` assigned (DDQNAgent's `self.q_model`)
    for c in sem.functions.lineage(cls):
        values = sem.index.self_assignments(c).get(expr.attr.value, ())
        if values:
            return list(values)
    return []


def origin_call(sem: Semantics, expr: cst.BaseExpression) -> Optional[cst.Call]:
    """The call a name or `self.x` was assigned from (the only one, for `self.x`), or None."""
    value = resolve_value(sem, expr)
    if isinstance(value, cst.Call):
        return value
    values = self_attribute_values(sem, expr)
    if len(values) == 1:
        value = resolve_value(sem, values[0])
        if isinstance(value, cst.Call):
            return value
    return None


def is_model_value(sem: Semantics, expr: cst.BaseExpression) -> bool:
    """A Keras model created in this file, a parameter annotated as one, or `self` in a Keras model subclass."""
    if is_model(sem, expr):
        return True
    if isinstance(expr, cst.Name) and expr.value == "self":
        cls = sem.index.enclosing_class(expr)  # `self.predict(obs)` in a method of a Keras model subclass
        return cls is not None and _keras_model_class(sem, cls)
    if isinstance(expr, cst.Name):
        b = sem.index.lookup(expr.value, expr)
        if b is not None and b.kind == "param" and isinstance(b.node, cst.Param):
            if b.node.annotation is not None:
                return sem.names.qualified_name(b.node.annotation.annotation) in MODEL_CLASSES
            return _model_passed(sem, b.node)
        if b is not None and b.kind == "unpack" and isinstance(b.node, cst.Assign) and b.index is not None:
            return _unpacked_model_param(sem, b)
    return False


def _unpacked_model_param(sem: Semantics, b) -> bool:
    """`generator, discriminator, adversarial = models` with `models` a parameter that a same-file call fills with
    a tuple whose item at that position is a Keras model (`models = (generator, discriminator, adversarial)`;
    `train(models, ...)`: the GAN chapters of PacktPublishing's Advanced-Deep-Learning-with-Keras, 11 round-20
    misses)."""
    if not isinstance(b.value, cst.Name):
        return False
    pb = sem.index.lookup(b.value.value, b.value)
    if pb is None or pb.kind != "param" or not isinstance(pb.node, cst.Param):
        return False
    for arg in sem.functions.arguments_passed(pb.node) or ():
        items = resolve_value(sem, arg.value) if arg is not None else None
        if isinstance(items, (cst.Tuple, cst.List)) and b.index < len(items.elements) and not any(
                isinstance(e, cst.StarredElement) for e in items.elements):
            if is_model(sem, items.elements[b.index].value):
                return True
        if isinstance(items, cst.Call) and _returned_model_item(sem, items, b.index, 1) is not None:
            return True  # `models = build_cyclegan(...)`, a same-file function returning the tuple of models
    return False


def _model_passed(sem: Semantics, param: cst.Param, depth: int = 3) -> bool:
    """A parameter of a same-file function (not a method) that a call site in the file fills with a Keras model:
    `def generate_fake_samples(g_model, n): ... g_model.predict(x)` called as `generate_fake_samples(generator,
    n)` with `generator = define_generator()` a model; or with a parameter of its caller that is itself filled so
    (`train(g_model, ...)` passing its `g_model` on, called as `train(generator, ...)`: the GAN scripts of
    python_for_microscopists, round-15 misses), up to `depth` boundaries."""
    for arg in sem.functions.arguments_passed(param) or ():
        if arg is not None and is_model(sem, arg.value):
            return True
        if arg is not None and depth > 1 and isinstance(arg.value, cst.Name):
            b = sem.index.lookup(arg.value.value, arg.value)
            if b is not None and b.kind == "param" and isinstance(b.node, cst.Param) and b.node is not param \
                    and _model_passed(sem, b.node, depth - 1):
                return True
    return False


def layer_name(sem: Semantics, call: cst.Call) -> Optional[str]:
    """`Dense` when `call` constructs `keras.layers.Dense` (any spelling), else None."""
    q = sem.call_name(call)
    if q and q.startswith("keras.layers.") and q.rsplit(".", 1)[-1][:1].isupper():
        return q.rsplit(".", 1)[-1]
    return None


def resolve_value(sem: Semantics, expr: cst.BaseExpression, depth: int = 0) -> cst.BaseExpression:
    """Follow a Name through single assignments to the value it holds (the Name itself when unknown)."""
    while isinstance(expr, cst.Name) and depth < 8:
        b = sem.index.lookup(expr.value, expr)
        if b is None or b.kind not in ("assign", "annassign") or b.value is None or b.value is expr:
            break
        expr = b.value
        depth += 1
    return expr


# API only Keras 3 has: a file that uses it runs Keras 3 whatever the project pins say (or do not say)
KERAS3_MARKERS = re.compile(r"\bkeras\.ops\b|\bfrom keras import ops\b|\bkeras_core\b|\bPyDataset\b|\bkeras\.random\.")


def keras3_established(ctx, index) -> bool:
    """The file runs Keras 3 by evidence, not by default: its target is Keras 3 and comes from the project's pins
    that allow no TensorFlow before 2.16 (`tensorflow>=1.15` leaves Keras 2 possible), a notebook's printed
    versions or `target-version`, or the file uses Keras 3 API. With nothing pinned, which Keras a project runs is
    unknown, and a claim that only holds on Keras 3 is not made."""
    if keras_major(index, ctx.target) != 3:
        return False
    pinned = bool(ctx.target.source) and ctx.target.floor is not None and ctx.target.floor >= (2, 16)
    return bool(ctx.settings.config.target_explicit or pinned or KERAS3_MARKERS.search(ctx.text))


def keras_major(index, target) -> int:
    """3 when the file's Keras is Keras 3: the target (an engine Target) runs Keras 3 (TF >= 2.16, no `keras<3` or
    `tf-keras` pinned) and the file does not import `tf_keras` (Keras 2 as a package)."""
    for bindings in index.scopes[id(index.module)].bindings.values():
        for b in bindings:
            if b.kind == "import" and b.qualified and b.qualified.split(".")[0] == "tf_keras":
                return 2
    return 2 if target.keras2 else 3
