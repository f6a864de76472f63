"""Qualified-name resolution through imports and aliases (tflint's own, light replacement for libcst's
QualifiedNameProvider).

`tf.data.Dataset.map` with `import tensorflow as tf` resolves to `tensorflow.data.Dataset.map`;
`AUTOTUNE = tf.data.AUTOTUNE` makes `AUTOTUNE` resolve to `tensorflow.data.AUTOTUNE`;
`tf.compat.v2.X` is `tensorflow.X`; `tf.keras.X`, `tf_keras.X` and `keras.X` are all `keras.X`.
"""
from __future__ import annotations

import builtins
from typing import Optional

import libcst as cst

from .index import Index
from .libraries import NEVER_TF, STDLIB

_BUILTINS = frozenset(dir(builtins))

_CANONICAL_PREFIXES = (
    ("tensorflow.compat.v2.", "tensorflow."),
    ("tensorflow._api.v2.", "tensorflow."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    # TF 2's top-level alias of the Keras optimizers (`tf.optimizers.SGD` is `keras.src.optimizers.sgd.SGD` on TF
    # 2.21; TF 1.15's v1 API has no `optimizers` module: read from the tensorflow-cpu 1.15.0 wheel's _api/v1/v1.py).
    # Not `tf.losses`/`tf.metrics`, which are TensorFlow's own in TF 1.
    ("tensorflow.optimizers.", "keras.optimizers."),
    ("tf_keras.", "keras."),
    ("keras.src.", "keras."),
    ("keras._tf_keras.keras.", "keras."),
)
_CANONICAL_EXACT = {
    "tensorflow.compat.v2": "tensorflow",
    "tensorflow.keras": "keras",
    "tensorflow.optimizers": "keras.optimizers",
    "tf_keras": "keras",
}

TF_ROOTS = frozenset({"tensorflow", "keras", "tensorflow_datasets", "tensorflow_io", "tensorflow_addons"})


def canonical(qualified: str) -> str:
    if qualified in _CANONICAL_EXACT:
        return _CANONICAL_EXACT[qualified]
    for old, new in _CANONICAL_PREFIXES:
        if qualified.startswith(old):
            return new + qualified[len(old):]
    return qualified


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` as text, or None if the expression is not a plain dotted name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = dotted_name(node.value)
        return f"{inner}.{node.attr.value}" if inner else None
    return None


_MODELS_EXPORTS = frozenset({"Model", "Sequential", "load_model", "model_from_json", "clone_model", "save_model"})


def _may_be_project(name: str) -> bool:
    """A name another module of the project may define: relative, or not of the standard library or of a library
    that never re-exports TensorFlow (its own package, `tensorflow_probability` say, may be the project)."""
    root = name.split(".", 1)[0]
    return name.startswith(".") or (root not in STDLIB and root not in NEVER_TF)


class Names:
    def __init__(self, index: Index) -> None:
        self.index = index
        self._cache: dict[int, Optional[str]] = {}
        self._imports_tf: Optional[bool] = None
        self.project = None  # a ProjectView: what a project module's name stands for (set by Semantics)
        self._stars: Optional[list[str]] = None  # module-level `from <TensorFlow module> import *`

    def qualified_name(self, node: cst.BaseExpression, _depth: int = 0) -> Optional[str]:
        """The canonical qualified name of a Name/Attribute expression, or None when it is not an import
        (or an alias of one) or a builtin."""
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        result = self._resolve(node, _depth)
        result = canonical(result) if result else None
        self._cache[key] = result
        return result

    def _resolve(self, node: cst.BaseExpression, depth: int) -> Optional[str]:
        if depth > 20:
            return None
        if isinstance(node, cst.Attribute):
            base = self.qualified_name(node.value, depth + 1)
            return f"{base}.{node.attr.value}" if base else None
        if isinstance(node, cst.Name):
            binding = self.index.lookup(node.value, node)
            if binding is None:
                if node.value in _BUILTINS and not self.index.module_bindings(node.value):
                    return f"builtins.{node.value}"
                return self._star_imported(node.value)
            if binding.kind == "import":
                q = binding.qualified
                if self.project is not None and (q is None or not self.is_tf(canonical(q))):
                    spelled = q or binding.relative
                    if spelled and _may_be_project(spelled):
                        # `from pkg.backend import keras` where pkg/backend.py does `import keras`: Keras
                        return self.project.tf_alias(spelled) or q
                return q
            if binding.kind in ("assign", "annassign") and isinstance(binding.value, (cst.Name, cst.Attribute)):
                if binding.value is node:
                    return None
                return self.qualified_name(binding.value, depth + 1)
            return None
        return None

    def _star_imported(self, name: str) -> Optional[str]:
        """A name no statement binds, from a module-level `from tensorflow.keras.models import *`: the star import it
        comes from when that is clear (one TensorFlow star import; or `Model`/`Sequential`/`load_model` with one
        from a `models` module, a capitalised name or `Input` with one from a `layers` module; none when a star
        import of another module could have bound it). Keras code written
        this way (`Model(inputs, outputs)` in bubbliiiing's networks) is otherwise unreadable."""
        if self._stars is None:
            stars: list[str] = []
            for stmt in self.index.module.body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                            q = dotted_name(small.module) if small.module is not None and not small.relative else None
                            if not (q and self.is_tf(canonical(q))):
                                stars = []  # another module's star import: where a name comes from is unknown
                                break
                            stars.append(q)
                    else:
                        continue
                    break
            self._stars = stars
        if not self._stars:
            return None
        if len(self._stars) == 1:
            return f"{self._stars[0]}.{name}"
        if name in _MODELS_EXPORTS:
            found = [q for q in self._stars if q.endswith(".models")]
        elif name[:1].isupper() or name == "Input":
            found = [q for q in self._stars if q.endswith(".layers")]
        else:
            return None
        return f"{found[0]}.{name}" if len(found) == 1 else None

    def import_spelling(self, node: cst.BaseExpression) -> Optional[str]:
        """The dotted name as its import spells it, before canonical names merge `tf.keras.X`, `tf_keras.X` and
        `keras.X` (`tensorflow.keras.losses.Reduction` vs `keras.losses.Reduction`), or None."""
        return self._through_imports(node, lambda b: b.qualified)

    def project_name(self, node: cst.BaseExpression) -> Optional[str]:
        """The name another module of the project may define for a Name/Attribute expression: its qualified name,
        or for a relative import its relative spelling (`from .data import make` makes `make` `.data.make`).
        None for TensorFlow, builtins and what is not an import."""
        def spelled(b) -> Optional[str]:
            q = b.qualified or b.relative
            return None if q is None or self.is_tf(canonical(q)) else q

        return self._through_imports(node, spelled)

    def _through_imports(self, node: cst.BaseExpression, spelled, depth: int = 0) -> Optional[str]:
        """`a.b.c` with `a` followed through plain aliases to the import that binds it, spelled by `spelled(binding)`
        (None: not an import this caller names)."""
        if depth > 20:
            return None
        if isinstance(node, cst.Attribute):
            base = self._through_imports(node.value, spelled, depth + 1)
            return f"{base}.{node.attr.value}" if base else None
        if isinstance(node, cst.Name):
            binding = self.index.lookup(node.value, node)
            if binding is None:
                return None
            if binding.kind == "import":
                return spelled(binding)
            if binding.kind in ("assign", "annassign") and isinstance(binding.value, (cst.Name, cst.Attribute)):
                return None if binding.value is node else self._through_imports(binding.value, spelled, depth + 1)
        return None

    def call_name(self, call: cst.Call) -> Optional[str]:
        """Qualified name of the function a call calls, if it resolves."""
        return self.qualified_name(call.func)

    def is_tf(self, qualified: Optional[str]) -> bool:
        return bool(qualified) and qualified.split(".", 1)[0] in TF_ROOTS

    def file_imports_tf(self) -> bool:
        """A module-level import of TensorFlow or Keras (answered once per file: rules ask per node)."""
        if self._imports_tf is None:
            self._imports_tf = any(
                x.kind == "import" and x.qualified and self.is_tf(canonical(x.qualified))
                for b in self.index.scopes[id(self.index.module)].bindings.values() for x in b
            )
        return self._imports_tf

    def alias_for(self, qualified: str, at: Optional[cst.CSTNode] = None) -> Optional[str]:
        """How this file spells `qualified` (e.g. `tf.data.AUTOTUNE` or an existing `AUTOTUNE` name):
        the shortest module-level spelling that resolves to it, or None when no import allows it."""
        target = canonical(qualified)
        best: Optional[str] = None
        module_scope = self.index.scopes[id(self.index.module)]
        for name, bindings in module_scope.bindings.items():
            b = bindings[-1]
            q: Optional[str] = None
            if b.kind == "import":
                q = canonical(b.qualified) if b.qualified else None
            elif b.kind == "assign" and isinstance(b.value, (cst.Name, cst.Attribute)) and len(bindings) == 1:
                # an alias counts only when it is named after what it holds (`AUTOTUNE = tf.data.AUTOTUNE`)
                q = self.qualified_name(b.value)
                if q is not None and q.rsplit(".", 1)[-1] != name:
                    q = None
            if not q:
                continue
            if target == q:
                cand = name
            elif target.startswith(q + "."):
                cand = name + target[len(q):]
            elif q == "tensorflow" and target.startswith("keras."):
                cand = name + ".keras" + target[len("keras"):]  # `tf.keras.X` is `keras.X`
            else:
                continue
            if best is None or cand.count(".") < best.count(".") or (
                cand.count(".") == best.count(".") and len(cand) < len(best)
            ):
                best = cand
        return best


def literal_value(node: cst.BaseExpression):
    """A Python literal's value (numbers, strings, True/False/None, negative numbers), else a sentinel."""
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return NOT_LITERAL
    if isinstance(node, cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value
        except Exception:
            return NOT_LITERAL
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = literal_value(node.expression)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    return NOT_LITERAL


class _NotLiteral:
    def __repr__(self) -> str:
        return "NOT_LITERAL"


NOT_LITERAL = _NotLiteral()


def get_arg(call: cst.Call, keyword: str, position: Optional[int] = None) -> Optional[cst.Arg]:
    """The argument passed as `keyword=` or at `position` (0-based among positional args)."""
    pos = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
        elif arg.star:
            continue
        else:
            if position is not None and pos == position:
                return arg
            pos += 1
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(a.star for a in call.args)
