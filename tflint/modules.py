"""The project's facts across modules, built from every checked file's summary (tflint.semantics.summary).

A name another file uses (`data.make_dataset`, `.data.make`, `pkg.input.make`) is resolved the way Python would
find it from the importing file: a relative name from the importer's package; an absolute one from the nearest
folder above the importer (its own folder first: a script's sibling module) that holds `pkg/input.py` or
`pkg/input/__init__.py` among the checked files; a name re-exported by a package's `__init__.py` is followed. A
name that resolves to no checked file is unknown (None), and rules stay silent.

    facts = ProjectFacts.build({path: summary, ...})
    facts.answer("train.py", "d:data.make_dataset")    # -> {"kind": "records", "methods": ["map", ...], ...}
    facts.changed("train.py", {"d:data.make_dataset": ""})   # -> True: this file must be checked again
"""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Optional

from .semantics.crossref import fingerprint

_MAX_DEPTH = 8


class ProjectFacts:
    def __init__(self, summaries: dict[str, dict]) -> None:
        self.summaries = summaries  # absolute path -> summary
        try:  # no module lies above the checked files' common folder: the search for one stops there
            self._top = os.path.dirname(os.path.commonpath(list(summaries))) if summaries else ""
        except ValueError:  # paths on different drives
            self._top = ""
        self._files: dict[tuple[str, tuple[str, ...], int], Optional[str]] = {}
        self._callers: Optional[dict[tuple[str, str], list[tuple[str, dict]]]] = None
        self._trainers: Optional[dict[tuple[str, str], str]] = None
        self._resolved: dict[tuple[str, str], Optional[tuple[str, str]]] = {}
        self._bases: dict[str, list[str]] = {}  # folder -> it and the folders above it, up to the search's top
        self._by_place: Optional[dict[tuple[str, tuple[str, ...]], tuple[Optional[str], Optional[str]]]] = None

    @classmethod
    def build(cls, summaries: dict[str, Optional[dict]]) -> "ProjectFacts":
        return cls({os.path.abspath(p): s for p, s in summaries.items() if s})

    def __bool__(self) -> bool:
        return len(self.summaries) > 1

    # -- questions --------------------------------------------------------------------------------------------
    def answer(self, path: str, key: str) -> Any:
        path = os.path.abspath(path)
        kind, _, rest = key.partition(":")
        if kind == "d":
            r = self.resolve(path, rest)
            if r is None:
                return None
            f, fn = r
            o = self.summaries[f].get("functions", {}).get(fn, {}).get("dataset")
            return self._dataset(f, o, 0, where=f"{os.path.basename(f)}:{fn}")
        if kind == "m":
            r = self.resolve(path, rest)
            return self.summaries[r[0]].get("classes", {}).get(r[1]) if r is not None else None
        if kind == "g":
            sites = self.callers().get((path, rest), [])
            return True if any(site.get("graph") for _, site in sites) else None
        if kind == "p":
            fn, pos, param = (rest.split(":", 2) + ["", ""])[:3]
            sites = self.callers().get((path, fn), [])
            if not sites:
                return None
            for caller, site in sites:
                if site.get("star"):
                    return "other"
                args = site.get("args", {})
                o = args.get(pos) if pos and pos in args else args.get(param)
                if self._dataset(caller, o, 0) is None:
                    return "other"
            return "dataset"
        if kind == "f":  # what calls from other modules pass for a parameter when it is a function
            fn, pos, param = (rest.split(":", 2) + ["", ""])[:3]
            sites = self.callers().get((path, fn), [])
            if not sites:
                return None
            kinds = set()
            for _, site in sites:
                if site.get("star"):
                    return "other"
                fns = site.get("fns", {})
                kinds.add(fns.get(pos) if pos and pos in fns else fns.get(param, "other"))
            return kinds.pop() if len(kinds) == 1 else "other"
        if kind == "t":
            return self.trainers().get((path, rest))
        if kind == "a":
            return self.alias(path, rest)
        if kind == "b":
            r = self.resolve(path, rest)
            return True if r is not None and self.summaries[r[0]].get("functions", {}).get(r[1], {}).get("model") else None
        if kind == "k":  # a Keras model class, a function that returns a model, or a TensorFlow alias
            keras = (self.answer(path, f"m:{rest}") == "model" or self.answer(path, f"b:{rest}")
                     or self.alias(path, rest))
            return True if keras else None
        return None

    def alias(self, importer: str, name: str, depth: int = 0) -> Optional[str]:
        """The TensorFlow or Keras name (canonical) that `name`, a module or a module-level name of the project as
        `importer` spells it, stands for: a module that star-imports one (`tf_keras.py`: `from tf_keras import *`),
        or a name bound to one (`backend.py`: `import keras`), followed through re-exports. None when unknown."""
        if depth > _MAX_DEPTH:
            return None
        stripped = name.lstrip(".")
        dots = len(name) - len(stripped)
        parts = stripped.split(".") if stripped else []
        if not parts:
            return None
        f = self._module_file(importer, parts, dots)
        if f is not None:
            return self.summaries[f].get("star")
        f = self._module_file(importer, parts[:-1], dots) if len(parts) > 1 or dots else None
        if f is None:
            return None
        s = self.summaries[f]
        if parts[-1] in s.get("aliases", {}):
            return s["aliases"][parts[-1]]
        target = s.get("imports", {}).get(parts[-1])
        return self.alias(f, target, depth + 1) if target is not None else None

    def changed(self, path: str, queries: dict[str, str]) -> bool:
        """Some question the file asked has a different answer here than when it was checked."""
        return any(fingerprint(self.answer(path, k)) != fp for k, fp in queries.items())

    # -- resolution ---------------------------------------------------------------------------------------------
    def resolve(self, importer: str, name: str, depth: int = 0) -> Optional[tuple[str, str]]:
        """(file, function) that `name`, as the file `importer` spells it, refers to; None when unknown."""
        key = (importer, name)
        if key not in self._resolved:
            self._resolved[key] = None  # a cycle of re-exports resolves to nothing
            self._resolved[key] = self._resolve(importer, name, depth)
        return self._resolved[key]

    def _resolve(self, importer: str, name: str, depth: int) -> Optional[tuple[str, str]]:
        if depth > _MAX_DEPTH:
            return None
        stripped = name.lstrip(".")
        dots = len(name) - len(stripped)
        parts = stripped.split(".") if stripped else []
        if not parts or (len(parts) < 2 and not dots):
            return None
        module, fn = parts[:-1], parts[-1]
        f = self._module_file(importer, module, dots)
        if f is None:
            return None
        s = self.summaries[f]
        if fn in s.get("defs", ()) or fn in s.get("classes", {}):
            return f, fn
        target = s.get("imports", {}).get(fn)
        if target is not None:
            return self.resolve(f, target, depth + 1)
        return None

    def _module_file(self, importer: str, module: list[str], dots: int) -> Optional[str]:
        key = (importer, tuple(module), dots)
        if key not in self._files:
            self._files[key] = self._find_module_file(importer, module, dots)
        return self._files[key]

    def _find_module_file(self, importer: str, module: list[str], dots: int) -> Optional[str]:
        here = os.path.dirname(importer)
        if dots:
            base = here
            for _ in range(dots - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = self._bases.get(here)
            if bases is None:
                bases = self._bases[here] = []
                d = here
                while True:
                    bases.append(d)
                    up = os.path.dirname(d)
                    if up == d or d == self._top:
                        break
                    d = up
        if all(part and os.sep not in part and (not os.altsep or os.altsep not in part) for part in module):
            # each checked file under each folder above it, as (folder, module parts): a dict lookup per folder
            # instead of two joined paths (the same answer: a key is stored only where os.path.join rebuilds the
            # file's own path from it)
            places = self._places()
            key = tuple(module)
            for base in bases:
                found = places.get((base, key))
                if found is not None:
                    for c in found:
                        if c is not None and c != importer:
                            return c
            return None
        for base in bases:
            if module:
                candidates = (os.path.join(base, *module) + ".py", os.path.join(base, *module, "__init__.py"))
            else:
                candidates = (os.path.join(base, "__init__.py"),)
            for c in candidates:
                if c in self.summaries and c != importer:
                    return c
        return None

    def _places(self) -> dict[tuple[str, tuple[str, ...]], tuple[Optional[str], Optional[str]]]:
        """(folder, module parts) -> (`folder/a/b.py`, `folder/a/b/__init__.py`) among the checked files, for every
        folder above each file: `_find_module_file`'s candidates, in its order."""
        if self._by_place is None:
            out: dict[tuple[str, tuple[str, ...]], list[Optional[str]]] = {}
            for path in self.summaries:
                top, name = os.path.split(path)
                if not name.endswith(".py") or name == ".py":
                    continue
                # `a/b.py` as module `a.b`; `a/__init__.py` also as the package `a` (and as `a.__init__`)
                for slot, parts in ((0, [name[:-3]]), (1, [])) if name == "__init__.py" else ((0, [name[:-3]]),):
                    folder = top
                    while True:
                        key = tuple(reversed(parts))
                        rebuilt = (os.path.join(folder, *key, "__init__.py") if slot
                                   else os.path.join(folder, *key) + ".py")
                        if rebuilt == path:
                            out.setdefault((folder, key), [None, None])[slot] = path
                        up, part = os.path.split(folder)
                        if up == folder or not part:
                            break
                        parts.append(part)
                        folder = up
            self._by_place = {k: (v[0], v[1]) for k, v in out.items()}
        return self._by_place

    def _dataset(self, path: str, origin: Optional[dict], depth: int, where: str = "") -> Optional[dict]:
        if origin is None or depth > _MAX_DEPTH:
            return None
        if "param" in origin:
            # the caller's own dataset, transformed: the asking file resolves the argument (depth 0 only)
            return dict(origin, where=where) if depth == 0 and where else None
        if "via" not in origin:
            out = {"kind": origin.get("kind", ""), "methods": list(origin.get("methods", []))}
            if where:
                out["where"] = where
            return out
        r = self.resolve(path, origin["via"])
        if r is None:
            return None
        f, fn = r
        inner = self._dataset(f, self.summaries[f].get("functions", {}).get(fn, {}).get("dataset"), depth + 1,
                              where or f"{os.path.basename(f)}:{fn}")
        if inner is None:
            return None
        inner["methods"] = inner["methods"] + list(origin.get("methods", []))
        return inner

    def callers(self) -> dict[tuple[str, str], list[tuple[str, dict]]]:
        """(file, function) -> [(calling file, call site)] for calls from other files."""
        if self._callers is None:
            out: dict[tuple[str, str], list[tuple[str, dict]]] = defaultdict(list)
            for path, s in self.summaries.items():
                for site in s.get("calls", ()):
                    r = self.resolve(path, site["target"])
                    if r is not None and r[0] != path:
                        out[r].append((path, site))
            self._callers = dict(out)
        return self._callers

    def trainers(self) -> dict[tuple[str, str], str]:
        """(file, function) -> "train.py", the first other file that trains on the function's dataset as it
        is returned (its summary's `trains`: `fit(make())`, `for x in enumerate(ds)` with `ds = data.make()`);
        (file, "function#i") for the item i of the tuple it returns (`train_ds, test_ds = data.make()`)."""
        if self._trainers is None:
            out: dict[tuple[str, str], str] = {}
            for path, s in sorted(self.summaries.items()):
                for t in s.get("trains", ()):
                    if t.get("methods"):
                        continue  # steps added by the consumer: the producer's end is not the pipeline's end
                    r = self.resolve(path, t["via"])
                    if r is not None and r[0] != path:
                        key = r if t.get("index") is None else (r[0], f"{r[1]}#{t['index']}")
                        out.setdefault(key, os.path.basename(path))
            self._trainers = out
        return self._trainers
