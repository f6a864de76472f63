"""The one generic matcher for rules written as data (`pattern:` in a rule's YAML), built-in or user packs.

Each entry of `pattern:` is one shape (no control flow: anything that needs it is a Python rule):

    - symbol: tensorflow.data.experimental.AUTOTUNE     # any reference spelled through an import
      replace-with: tensorflow.data.AUTOTUNE            # fix: the file's own spelling of the new symbol
    - call: tensorflow.function                         # a call to a qualified name (or a list of them)
      keyword: experimental_compile                     # ...that passes this keyword
      rename-keyword: jit_compile                       # fix: rename it
    - call: tensorflow.compat.v1.Session                # a call, no condition: always reported
    - method: experimental_run_v2                       # `x.experimental_run_v2(...)`
      receiver: strategy                                # dataset | strategy | any
      rename-method: run
    - method: interleave
      receiver: dataset
      missing-arg: {name: deterministic, position: 4}   # ...without this argument
      add-arg: {name: deterministic, value: "False"}    # fix: add it (or `symbol: tensorflow.data.AUTOTUNE`)
    - call: mypkg.data.make_reader
      arg: {name: num_readers, position: 1, equals: 1}  # ...with this literal argument value
    - call: tensorflow.compat.v1.data.make_one_shot_iterator
      rename-to: builtins.iter                          # fix: call another function instead
    - dataset-function: mypkg.data.load_dataset         # knowledge: this function returns a tf.data Dataset

Every entry may carry `message:`, `fix:` (safe | unsafe | display; default: the rule's first fix kind) and
`since: "2.9"` (the TensorFlow release from which the entry applies: on an older target, the file's own pins or
`target-version`, the old spelling is that release's API and nothing is reported). `alias: true` marks an old
spelling that still works on the newest TensorFlow: reported only when the rule's `aliases` option is true (its
default is the rule's own, `options: {aliases: false}` in its YAML) and the project's oldest release is known
(pins, `target-version`, a notebook's printed version, or API the file uses) to have the new spelling.
"""
from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from .evidence import version as _version

from ..findings import Applicability
from ..semantics import NOT_LITERAL, get_arg, literal_value
from ..semantics.names import canonical
from .base import Check
from .common import add_keyword_arg

ENTRY_KEYS = {
    "symbol", "replace-with", "call", "keyword", "rename-keyword", "method", "receiver", "rename-method",
    "missing-arg", "add-arg", "arg", "rename-to", "dataset-function", "message", "fix", "since", "alias",
}
MATCH_KEYS = ("symbol", "call", "method", "dataset-function")
RECEIVERS = ("dataset", "strategy", "any")


_ENTRIES: dict[int, tuple[Any, list[dict[str, Any]]]] = {}


def _entries_of(meta) -> list[dict[str, Any]]:
    """A rule's validated `pattern:` entries, validated once per rule (not per file)."""
    pattern = meta.pattern or []
    cached = _ENTRIES.get(id(meta))
    if cached is None or cached[0] is not pattern:
        cached = (pattern, validate_entries(pattern))
        _ENTRIES[id(meta)] = cached
    return cached[1]


def _alias_names(sem) -> set[str]:
    """Names that stand for another name (`from m import f as g`, `g = m.f`), once per file for every rule."""
    found = sem.__dict__.get("_tflint_alias_names")
    if found is None:
        found = {
            b.name for scope in sem.index.scopes.values() for bs in scope.bindings.values() for b in bs
            if (b.kind == "import" and b.qualified and b.qualified.rsplit(".", 1)[-1] != b.name)
            or (b.kind in ("assign", "annassign") and isinstance(b.value, (cst.Name, cst.Attribute)))
        }
        sem.__dict__["_tflint_alias_names"] = found
    return found


class PatternError(ValueError):
    """A malformed `pattern:` entry; the message names the entry and the problem."""


def validate_entries(pattern: Any) -> list[dict[str, Any]]:
    entries = pattern if isinstance(pattern, list) else [pattern]
    out = []
    for i, e in enumerate(entries):
        where = f"pattern[{i}]"
        if not isinstance(e, dict):
            raise PatternError(f"{where}: each entry must be a mapping")
        unknown = sorted(set(e) - ENTRY_KEYS)
        if unknown:
            raise PatternError(f"{where}: unknown key `{unknown[0]}` (known: {', '.join(sorted(ENTRY_KEYS))})")
        kinds = [k for k in MATCH_KEYS if k in e]
        if len(kinds) != 1:
            raise PatternError(f"{where}: needs exactly one of {', '.join(MATCH_KEYS)}")
        if "receiver" in e and e["receiver"] not in RECEIVERS:
            raise PatternError(f"{where}: `receiver` must be one of {', '.join(RECEIVERS)}")
        if "fix" in e and e["fix"] not in ("safe", "unsafe", "display"):
            raise PatternError(f"{where}: `fix` must be safe, unsafe or display")
        for key in ("missing-arg", "arg", "add-arg"):
            if key in e:
                v = e[key]
                if not isinstance(v, dict) or not isinstance(v.get("name"), str):
                    raise PatternError(f"{where}: `{key}` must be a mapping with a `name`")
        if "since" in e and not _is_version(e["since"]):
            raise PatternError(f"{where}: `since` must be a TensorFlow version such as \"2.9\"")
        if "rename-keyword" in e and "keyword" not in e:
            raise PatternError(f"{where}: `rename-keyword` needs `keyword`")
        if "replace-with" in e and "symbol" not in e:
            raise PatternError(f"{where}: `replace-with` goes with `symbol`")
        if ("rename-method" in e or "receiver" in e) and "method" not in e:
            raise PatternError(f"{where}: `rename-method`/`receiver` go with `method`")
        if "add-arg" in e and "missing-arg" not in e:
            raise PatternError(f"{where}: `add-arg` needs `missing-arg` (else the fix could pass the argument twice)")
        out.append(e)
    return out


def dataset_functions(pattern: Any) -> list[str]:
    try:
        entries = validate_entries(pattern)
    except PatternError:
        return []
    out = []
    for e in entries:
        v = e.get("dataset-function")
        out += [canonical(q) for q in (v if isinstance(v, list) else ([v] if v else []))]
    return out


def applies_to(path: Optional[str], config: Any, paths: Any) -> bool:
    """Whether a rule with `paths: {include: [globs], exclude: [globs]}` looks at this file. Globs are relative
    to the project root and match as `per-file-ignores` patterns do (a folder covers what is below it)."""
    if not paths or not isinstance(paths, dict) or not path:
        return True
    from ..config import path_matches, relative_path

    rel = relative_path(path, config.root)
    include = paths.get("include") or []
    if include and not any(path_matches(rel, g) for g in include):
        return False
    return not any(path_matches(rel, g) for g in paths.get("exclude") or [])


def _names(value: Any) -> set[str]:
    return set(value) if isinstance(value, list) else {value}


def qnames(value: Any) -> set[str]:
    """Qualified names as the resolver spells them (`tensorflow.keras.X` -> `keras.X`, ...)."""
    return {canonical(v) for v in _names(value)}


class DeclarativeCheck(Check):
    """Runs the `pattern:` entries of one rule. Python rules that also carry table data may subclass it."""

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.code = meta.code  # instance attribute: this class serves every declarative rule
        entries = _entries_of(meta)
        if not applies_to(ctx.path, ctx.settings.config, (meta.raw or {}).get("paths")):
            entries = []  # the rule's `paths:` leave this file out
        self.symbols = [e for e in entries if "symbol" in e]
        self.calls = [e for e in entries if "call" in e]
        self.methods = [e for e in entries if "method" in e]
        self._symbol_tails = {s.rsplit(".", 1)[-1] for e in self.symbols for s in qnames(e["symbol"])}
        self._call_tails = {s.rsplit(".", 1)[-1] for e in self.calls for s in qnames(e["call"])}
        self._method_names = {m for e in self.methods for m in _names(e["method"])}
        self._default_fix = next((f for f in meta.fix if f != "none"), "display")
        # a rule that renames or replaces API is about versions: compatibility code is left alone
        self.compat_sensitive = any(k.startswith(("rename", "replace")) for e in entries for k in e)
        # A pure pattern rule whose names do not even occur in the text cannot match (an alias is spelled through an
        # import or assignment that contains the original name): the engine skips its visits for this file.
        words = self._symbol_tails | self._call_tails | self._method_names
        self.skip_file = type(self) is DeclarativeCheck and not any(w in ctx.text for w in words)
        if self.skip_file:
            self._alias_names: set[str] = set()
            return
        # names that stand for another name (`from m import f as g`, `g = m.f`): their own spelling says nothing
        self._alias_names = _alias_names(self.sem) if (self.symbols or self.calls) else set()

    def _aliased_tail(self, node: cst.Name) -> Optional[str]:
        """The last part of the qualified name an alias stands for, so `g()` above is matched as `m.f()`."""
        if node.value not in self._alias_names:
            return None
        q = self.names.qualified_name(node)
        return q.rsplit(".", 1)[-1] if q else None

    # -- symbols ------------------------------------------------------------------------------------------
    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._symbol_tails or (self.symbols and self._aliased_tail(node) in self._symbol_tails):
            parent = self.index.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                return  # the attribute part of `a.b`: handled by visit_Attribute
            b = self.index.lookup(node.value, node)
            if b is None or b.kind != "import" or self._in_import(node):
                return
            self._symbol(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in self._symbol_tails and not self._in_import(node):
            self._symbol(node)

    def _in_import(self, node: cst.CSTNode) -> bool:
        stmt = self.index.statement_of(node)
        return isinstance(stmt, (cst.Import, cst.ImportFrom))

    def _symbol_message(self, q: str, new: Optional[str]) -> str:
        """The message of a `symbol:` entry without its own."""
        return f"`{q}` is deprecated; use `{new}`" if new else f"`{q}` is not allowed here"

    def _symbol(self, node: cst.BaseExpression) -> None:
        q = self.names.qualified_name(node)
        if q is None:
            return
        for e in self.symbols:
            if q in qnames(e["symbol"]) and self._applies_to_target(e):
                new = e.get("replace-with")
                message = e.get("message") or self._symbol_message(q, new)
                spelled = self.names.alias_for(new) if new else None
                if spelled:
                    self.report(node, message, replacement=cst.parse_expression(spelled),
                                fix_message=f"Replace with `{spelled}`", applicability=self._applicability(e))
                else:
                    self.report(node, message)
                return

    # -- calls and methods ----------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        tail = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if tail is None:
            return
        if isinstance(func, cst.Name) and tail not in self._call_tails:
            tail = self._aliased_tail(func) or tail
        if tail in self._call_tails:
            q = self.names.call_name(node)
            if q is not None:
                for e in self.calls:
                    if q in qnames(e["call"]) and self._conditions(node, e):
                        self._report_call(node, e, f"`{q}`")
                        return
        if tail in self._method_names and isinstance(func, cst.Attribute):
            for e in self.methods:
                if tail in _names(e["method"]) and self._receiver_ok(func.value, e.get("receiver", "any")):
                    if self._conditions(node, e):
                        self._report_call(node, e, f"`.{tail}()`")
                        return

    def _receiver_ok(self, receiver: cst.BaseExpression, kind: str) -> bool:
        if kind == "any":
            return True
        if kind == "dataset":
            return self.datasets.is_dataset(receiver)
        if kind == "strategy":
            return self.functions._looks_like_strategy(receiver)
        return False

    def _applies_to_target(self, e: dict[str, Any]) -> bool:
        if "since" not in e and not e.get("alias"):
            return True
        since = _version(e.get("since", "2.0"))
        if e.get("alias"):
            # the old spelling still works on the newest TensorFlow: a rename with no effect on how the code runs,
            # reported only where the rule's `aliases` option asks for it (TFL504's and TFL110's were judged not worth
            # acting on 30 times in 43 on real code), and then only where the project is known to run a release with
            # the new name (pins, target-version, a notebook's printed version, or API the file uses); unpinned, it
            # may run an older one where the new name breaks (judged false 40 times)
            if not self.options.get("aliases", True):
                return False
            known = self.ctx.known_floor
            return known is not None and known >= since
        return self.oldest_version >= since

    def _conditions(self, call: cst.Call, e: dict[str, Any]) -> bool:
        if not self._applies_to_target(e):
            return False
        if "keyword" in e and get_arg(call, e["keyword"]) is None:
            return False
        if "missing-arg" in e:
            spec = e["missing-arg"]
            if get_arg(call, spec["name"], spec.get("position")) is not None or any(a.star for a in call.args):
                return False
        if "arg" in e:
            spec = e["arg"]
            arg = get_arg(call, spec["name"], spec.get("position"))
            if arg is None:
                return False
            if "equals" in spec:
                value = literal_value(arg.value)
                if value is NOT_LITERAL or value != spec["equals"] or type(value) is not type(spec["equals"]):
                    return False
        return True

    def _report_call(self, call: cst.Call, e: dict[str, Any], what: str) -> None:
        func = call.func
        start = func.attr if isinstance(func, cst.Attribute) else None
        app = self._applicability(e)
        message = e.get("message") or self.meta.summary
        if "rename-keyword" in e:
            arg = get_arg(call, e["keyword"])
            new_kw = e["rename-keyword"]
            self.report(call, message, start_node=start, target=arg.keyword, replacement=cst.Name(new_kw),
                        fix_message=f"Rename `{e['keyword']}` to `{new_kw}`", applicability=app)
        elif "rename-method" in e and isinstance(func, cst.Attribute):
            new = e["rename-method"]
            self.report(call, message, start_node=start, target=func.attr, replacement=cst.Name(new),
                        fix_message=f"Rename `.{func.attr.value}()` to `.{new}()`", applicability=app)
        elif "rename-to" in e:
            new = e["rename-to"]
            spelled = new.split(".", 1)[1] if new.startswith("builtins.") else self.names.alias_for(new)
            if spelled:
                self.report(call, message, start_node=start, target=func, replacement=cst.parse_expression(spelled),
                            fix_message=f"Call `{spelled}` instead{e.get('fix-note', '')}", applicability=app)
            else:
                self.report(call, message, start_node=start)
        elif "add-arg" in e:
            spec = e["add-arg"]
            value = self.names.alias_for(spec["symbol"]) if "symbol" in spec else spec.get("value")
            if value is None:
                self.report(call, message, start_node=start)
            else:
                value = value if isinstance(value, str) else repr(value)
                self.report(call, message, start_node=start, replacement=add_keyword_arg(call, spec["name"], value),
                            fix_message=f"Add `{spec['name']}={value}`", applicability=app)
        else:
            self.report(call, message, start_node=start)

    def _applicability(self, e: dict[str, Any]) -> Applicability:
        return Applicability(e.get("fix") or self._default_fix)




def _is_version(text: Any) -> bool:
    try:
        _version(text)
        return True
    except (ValueError, TypeError):
        return False

