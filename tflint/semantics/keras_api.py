"""Keras names the analysis knows by heart: how a model is made (shared by the summary other modules read and by the
Keras rules in tflint.checks.keras.models)."""
from __future__ import annotations

from typing import Optional

import libcst as cst

MODEL_CONSTRUCTORS = frozenset({
    "keras.Sequential", "keras.models.Sequential", "keras.Model", "keras.models.Model",
    "keras.models.load_model", "keras.saving.load_model", "keras.models.clone_model", "keras.models.model_from_json",
})
MODEL_CLASSES = frozenset({"keras.Model", "keras.models.Model", "keras.Sequential", "keras.models.Sequential"})
SEQUENTIAL = frozenset({"keras.Sequential", "keras.models.Sequential"})
FUNCTIONAL = frozenset({"keras.Model", "keras.models.Model"})


def model_call(q: Optional[str]) -> bool:
    """A call of this qualified name makes a Keras model (a constructor, a loader, a `keras.applications` model)."""
    return bool(q) and (q in MODEL_CONSTRUCTORS or (q.startswith("keras.applications.")
                                                    and q.rsplit(".", 1)[-1][:1].isupper()))


def returns_model(sem, fn: cst.FunctionDef, depth: int = 0) -> bool:
    """Every `return` of `fn` gives a Keras model made in this file: `model = Model(inputs, outputs); return model`,
    `return keras.Sequential([...])`, or the result of another such function of the file (nets/unet.py's `Unet`)."""
    if depth > 2:
        return False
    returns = [r for r in sem.functions.body_nodes(fn, cst.Return) if sem.functions.owner(r) is fn]
    if not returns or any(r.value is None for r in returns):
        return False
    for r in returns:
        value = r.value
        for _ in range(4):  # through single assignments in the function
            if not isinstance(value, cst.Name):
                break
            b = sem.index.lookup(value.value, value)
            if b is None or b.kind not in ("assign", "annassign") or b.value is None:
                break
            value = b.value
        if not isinstance(value, cst.Call):
            return False
        if model_call(sem.names.call_name(value)):
            continue
        target = sem.functions.resolve_callable(value.func)
        if not (isinstance(target, cst.FunctionDef) and target is not fn and returns_model(sem, target, depth + 1)):
            return False
    return True
