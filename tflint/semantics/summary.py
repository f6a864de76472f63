"""A file's summary: what other modules of the project may ask of it, computed from its own text alone (no
project facts), so the cache can keep it beside the file's findings.

    {"defs": [module-level function names],
     "functions": {name: {"dataset": ORIGIN, "graph": "decorated" | "wrapped",    # only functions with a fact
                          "model": true}},                                      # (returns a Keras model)
     "classes": {name: "model" | "layer"},                                          # Keras subclasses
     "imports": {local name: "pkg.mod.name" or ".mod.name"},                        # re-exports (`__init__.py`)
     "calls": [{"target": "data.make", "args": {"0": ORIGIN | None, "ds": ...}, "graph": true, "star": true,
                "fns": {"1": "plain" | "graph"}}],                  # same-file functions passed as arguments
     "trains": [{"via": "data.make", "methods": [...], "index": 0}],                # training on such a dataset
                                                           # (`index`: the item of a returned tuple it unpacks)
     "aliases": {local name: "keras"}, "star": "keras"}                            # TensorFlow through this module

ORIGIN is where a value comes from when it is a dataset: {"kind": source kind, "methods": [...]} for a pipeline
traced in this file, {"via": "data.make", "methods": [...]} for one that starts at a call of another project
module's function (the project index follows it), or {"param": "ds", "pos": 0, "methods": [...]} for a function's
return value made from its parameter (`return ds.map(f)`: the caller's dataset, transformed). Calls are recorded only for names imported from modules that may
belong to the project (not TensorFlow, the standard library or a well-known third-party package).
"""
from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from .datasets import DATASET_METHODS
from .keras_api import returns_model

from .libraries import STDLIB as _STDLIB, THIRD_PARTY as _THIRD_PARTY


def project_like(name: str) -> bool:
    """A dotted name that may name a module of the project (relative, or not a known library's)."""
    if name.startswith("."):
        return True
    root = name.split(".", 1)[0]
    return root not in _STDLIB and root not in _THIRD_PARTY


def summarize(sem) -> dict:
    index = sem.index
    module_scope = index.scopes[id(index.module)]
    defs: list[str] = []
    functions: dict[str, dict] = {}
    imports: dict[str, str] = {}
    classes: dict[str, str] = {}
    for name, bindings in module_scope.bindings.items():
        b = bindings[-1]
        if b.kind == "def" and isinstance(b.node, cst.FunctionDef) and all(x.kind == "def" for x in bindings):
            defs.append(name)
            facts = _function_facts(sem, b.node)
            if facts:
                functions[name] = facts
        elif b.kind == "class" and isinstance(b.node, cst.ClassDef) and len(bindings) == 1:
            if sem.functions.is_keras_class(b.node):
                classes[name] = "model" if _is_model_class(sem, b.node) else "layer"
        elif b.kind == "import" and len(bindings) == 1:
            q = b.qualified or b.relative
            if q and project_like(q) and not sem.names.is_tf(q):
                imports[name] = q
    calls = []
    for call in index.nodes(cst.Call):
        target = sem.names.project_name(call.func)
        if not target or not project_like(target):
            continue
        site: dict = {"target": target}
        args: dict[str, Optional[dict]] = {}
        position = 0
        fns: dict[str, str] = {}
        for a in call.args:
            if a.star:
                site["star"] = True
                continue
            if a.keyword is not None:
                key = a.keyword.value
            else:
                key = str(position)
                position += 1
            args[key] = origin(sem, a.value)
            kind = _callable_kind(sem, a.value) if args[key] is None else None
            if kind is not None:
                fns[key] = kind
        if args:
            site["args"] = args
        if fns:
            site["fns"] = fns
        if sem.functions.tf_function_of(call) is not None:
            site["graph"] = True
        calls.append(site)
    out = {"defs": sorted(defs), "functions": functions, "imports": imports, "calls": calls, "classes": classes}
    aliases, star = _aliases(sem)
    if aliases:
        out["aliases"] = aliases
    if star:
        out["star"] = star
    trains = _trains(sem)
    if trains:
        out["trains"] = trains
    return out


def _callable_kind(sem, expr: cst.BaseExpression) -> Optional[str]:
    """A same-file function passed as an argument: "graph" when it runs as a graph function wherever it is called
    (decorated or wrapped by `tf.function`, a Keras step), else "plain"; None for anything else."""
    if not isinstance(expr, (cst.Name, cst.Lambda)):
        return None
    fn = sem.functions.resolve_callable(expr)
    if fn is None:
        return None
    return "graph" if sem.functions.graph_everywhere(fn) else "plain"


def _aliases(sem) -> tuple[dict[str, str], Optional[str]]:
    """Module-level names that stand for TensorFlow or Keras (`import keras`, `keras = tf.keras`, the same name bound
    in both branches of a version switch to spellings with one canonical name), and the one TensorFlow or Keras module
    the whole module re-exports with `from X import *` (a compatibility shim: `from tf_keras import *` or, on the other
    branch, `from tensorflow.compat.v2.keras import *`). Another module that imports such a name reaches TensorFlow
    through it (`from bert4keras.backend import keras`)."""
    from .names import canonical as _canonical, dotted_name

    def canonical(q: str) -> str:  # to the fixed point: `tensorflow.compat.v2.keras` -> `tensorflow.keras` -> `keras`
        for _ in range(4):
            q, before = _canonical(q), q
            if q == before:
                break
        return q

    index = sem.index
    aliases: dict[str, str] = {}
    for name, bindings in index.scopes[id(index.module)].bindings.items():
        spelled = set()
        for b in bindings:
            if b.kind == "import":
                q = b.qualified
            elif b.kind in ("assign", "annassign") and isinstance(b.value, (cst.Name, cst.Attribute)):
                q = sem.names.qualified_name(b.value)
            else:
                q = None
            spelled.add(canonical(q) if q and sem.names.is_tf(canonical(q)) else None)
        if len(spelled) == 1 and None not in spelled:
            aliases[name] = spelled.pop()
    stars = set()
    for node in index.module.body:
        for stmt in _module_level(node):
            if isinstance(stmt, cst.ImportFrom) and isinstance(stmt.names, cst.ImportStar) and not stmt.relative:
                q = dotted_name(stmt.module) if stmt.module is not None else None
                stars.add(canonical(q) if q and sem.names.is_tf(canonical(q)) else None)
    star = stars.pop() if len(stars) == 1 and None not in stars else None
    return aliases, star


def _module_level(node: cst.CSTNode):
    """The simple statements of a module-level statement, through `if`/`else` and `try`/`except` (a version switch)."""
    if isinstance(node, cst.SimpleStatementLine):
        yield from node.body
    elif isinstance(node, (cst.If, cst.Try, cst.Else, cst.ExceptHandler, cst.Finally)):
        body = node.body
        for stmt in getattr(body, "body", ()):
            yield from _module_level(stmt)
        for extra in ("orelse", "finalbody"):
            nxt = getattr(node, extra, None)
            if nxt is not None:
                yield from _module_level(nxt)
        for h in getattr(node, "handlers", ()):
            yield from _module_level(h)


def _trains(sem) -> list[dict]:
    """Where this file trains on a dataset another project module returns: {"via", "methods"}."""
    from ..checks.data.dataset_without_prefetch import training_reads  # the checks import this package

    out = []
    for expr, _ in training_reads(sem):
        o = origin(sem, expr)
        if o is not None and "via" in o:
            out.append({"via": o["via"], "methods": o["methods"]})
        elif o is None and isinstance(expr, cst.Name):
            # `train_ds, val_ds, n = data.generate_datasets()` then `for x, y in train_ds:`: an item of the tuple
            # another module's function returns
            b = sem.index.lookup(expr.value, expr)
            if b is not None and b.kind == "unpack" and b.index is not None and isinstance(b.value, cst.Call) \
                    and _fits_or_steps(sem, expr):
                target = sem.names.project_name(b.value.func)
                if target and project_like(target):
                    out.append({"via": target, "methods": [], "index": b.index})
    return out


_TRAIN_CALL = re.compile(r"train|^fit$|^apply_gradients$|^minimize$", re.I)


def _fits_or_steps(sem, expr: cst.Name) -> bool:
    """The dataset `expr` is read by `fit`, or by a `for` loop that calls a training step (`train_step(x, y)`,
    `apply_gradients`): not a validation or test pass (the other items of a `train, valid, test` tuple)."""
    parent = sem.index.parent(sem.index.parent(expr))
    if isinstance(parent, cst.Call) and isinstance(parent.func, cst.Attribute) and parent.func.attr.value == "fit":
        return True
    loop = next((a for a in sem.index.ancestors(expr) if isinstance(a, cst.For)), None)
    if loop is None:
        return False
    for call in sem.index.nodes_inside(loop.body, cst.Call):
        name = call.func.attr.value if isinstance(call.func, cst.Attribute) else \
            call.func.value if isinstance(call.func, cst.Name) else ""
        if _TRAIN_CALL.search(name):
            return True
    return False


def _is_model_class(sem, cls: cst.ClassDef, depth: int = 0) -> bool:
    """A Keras model subclass (not a layer): a base is `keras.Model`/`Sequential` (any spelling) or a same-file
    class that is one."""
    if depth > 5:
        return False
    for base in cls.bases:
        q = sem.names.qualified_name(base.value) or ""
        if q in ("keras.Model", "keras.Sequential", "keras.models.Model", "keras.models.Sequential") or \
                q.startswith("keras.applications."):
            return True
        if isinstance(base.value, cst.Name):
            b = sem.index.lookup(base.value.value, base.value)
            if b is not None and b.kind == "class" and isinstance(b.node, cst.ClassDef) and \
                    _is_model_class(sem, b.node, depth + 1):
                return True
    return False


def _function_facts(sem, fn: cst.FunctionDef) -> dict:
    facts: dict = {}
    returns = [r for r in sem.functions.body_nodes(fn, cst.Return) if sem.functions.owner(r) is fn]
    if returns and all(r.value is not None for r in returns):
        origins = [origin(sem, r.value) for r in returns]
        if all(o is not None for o in origins):
            facts["dataset"] = origins[-1]
    reason = sem.functions.tf_function_reason(fn)
    if reason in ("decorated", "wrapped"):
        facts["graph"] = reason
    if returns_model(sem, fn):
        facts["model"] = True
    return facts


def origin(sem, expr: cst.BaseExpression) -> Optional[dict]:
    """Where a value comes from when it is a dataset (see the module's docstring), else None."""
    p = sem.datasets.pipeline(expr)
    if p is not None:
        return {"kind": p.source.kind or "", "methods": [s.method for s in p.steps[1:]]}
    methods: list[str] = []
    e = expr
    for _ in range(30):
        if isinstance(e, cst.Name):
            b = sem.index.lookup(e.value, e)
            if b is not None and b.kind == "param" and isinstance(b.scope, cst.FunctionDef):
                # `return ds.map(f)` on a parameter: the caller's dataset, transformed (`augment(ds)`); `return ds`:
                # the caller's dataset itself (zurutech/ashpy's `wrap(dataset)` sets an attribute and returns it)
                positional = [*b.scope.params.posonly_params, *b.scope.params.params]
                pos = next((i for i, q in enumerate(positional) if q.name.value == e.value), None)
                return {"param": e.value, "pos": pos, "methods": methods}
            if b is None or b.kind not in ("assign", "annassign") or b.value is None or b.value is e:
                return None
            e = b.value
            continue
        if not isinstance(e, cst.Call):
            return None
        if isinstance(e.func, cst.Attribute) and e.func.attr.value in DATASET_METHODS:
            methods.insert(0, e.func.attr.value)
            e = e.func.value
            continue
        target = sem.names.project_name(e.func)
        if target and project_like(target):
            return {"via": target, "methods": methods}
        return None
    return None


def outline(tree: ast.Module) -> dict:
    """The summary of a file analysed no further (no TensorFlow in it), from CPython's tree: its module-level
    defs and what it re-exports (a package's `__init__.py`)."""
    defs: list[str] = []
    imports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append(node.name)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module + "." if node.module else "")
            if not node.level and not node.module:
                continue
            for alias in node.names:
                if alias.name != "*":
                    q = base + alias.name
                    if project_like(q):
                        imports[alias.asname or alias.name] = q
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and project_like(alias.name):
                    imports[alias.asname] = alias.name
    return {"defs": sorted(set(defs)), "functions": {}, "imports": imports, "calls": []}
