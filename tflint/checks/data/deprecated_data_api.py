"""TFL110 deprecated-data-api: deprecated tf.data API with a current replacement.

The simple entries (renamed symbols, renamed methods, `make_one_shot_iterator(ds)` -> `iter(ds)`) are `pattern:`
data run by the generic DeclarativeCheck. This subclass adds the entries of the YAML's `table:` that need real
rewriting: `ds.apply(tf.data.experimental.X(...))` -> `ds.x(...)` (with argument mapping, AUTOTUNE, negated flags),
`tf.data.experimental.f(ds, ...)` -> `ds.f(...)`, `ds.make_one_shot_iterator()` -> `iter(ds)`, and renamed
`tf.data.Options` attributes; and the `since:` versions that keep older targets from being told to use a
replacement they do not have.
"""
from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from ...config import parse_version
from ...findings import Applicability
from ...semantics import get_arg, literal_value
from ..common import autotune
from ..declarative import DeclarativeCheck

OPTIONS = ("tensorflow.data.Options", "tensorflow.compat.v1.data.Options")


def _version(text: Any) -> tuple[int, int]:
    try:
        return parse_version(str(text), "rules/data/deprecated-data-api.yaml")
    except Exception:
        return (0, 0)


class DeprecatedDataApi(DeclarativeCheck):
    code = "TFL110"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        raw = meta.raw or {}
        self.since = {k: _version(v) for k, v in (raw.get("since") or {}).items()}
        self.table = [e for e in raw.get("table") or [] if self.target_version >= _version(e.get("since", "2.0"))]
        self.by_via: dict[str, dict[str, dict]] = {}
        for e in self.table:
            self.by_via.setdefault(e["via"], {})[e["old"]] = e
        self._apply_tails = {q.rsplit(".", 1)[-1] for q in self.by_via.get("apply", {})}
        self._function_tails = {q.rsplit(".", 1)[-1] for q in self.by_via.get("function", {})}
        self._method_tails = {q.rsplit(".", 1)[-1]: e for q, e in self.by_via.get("method", {}).items()}
        self._attribute_tails = {q.rsplit(".", 1)[-1]: e for q, e in self.by_via.get("attribute", {}).items()}

    # -- version gate for the declarative symbol entries ------------------------------------------------------
    def _symbol(self, node: cst.BaseExpression) -> None:
        q = self.names.qualified_name(node)
        if q in self.since and self.target_version < self.since[q]:
            return
        super()._symbol(node)

    # -- table entries ------------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        func = node.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name == "apply" and node.args:
                self._apply(node)
            elif name in self._method_tails and not node.args:
                self._method(node, self._method_tails[name])
            elif name in self._function_tails:
                self._function(node)
        elif isinstance(func, cst.Name) and func.value in self._function_tails:
            self._function(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        super().visit_Attribute(node)
        e = self._attribute_tails.get(node.attr.value)
        if e is None or not self._is_options(node.value):
            return
        new = e["new"][0]["attribute"]
        self.report(node, f"`Options.{node.attr.value}` is deprecated; use `Options.{new}` ({e['why']})",
                    target=node.attr, replacement=cst.Name(new), fix_message=f"Rename to `{new}`",
                    applicability=self._app(e))

    def _is_options(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return self.sem.call_name(expr) in OPTIONS
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            return b is not None and b.kind in ("assign", "annassign") and isinstance(b.value, cst.Call) \
                and self.sem.call_name(b.value) in OPTIONS
        return False

    def _apply(self, node: cst.Call) -> None:
        arg = get_arg(node, "transformation_func", 0)
        if arg is None or not isinstance(arg.value, cst.Call):
            return
        inner = arg.value
        q = self.sem.call_name(inner)
        e = self.by_via.get("apply", {}).get(q or "")
        if e is None:
            return
        old_args = self._old_args(inner, e)
        message = f"`apply({self._spelled(inner)}(...))` is deprecated; {self._new_text(e)} ({e['why']})"
        if old_args is None:
            self.report(node, message, start_node=node.func.attr)
            return
        replacement, app = self._build(node.func.value, e, old_args, node)
        self.report(node, message, start_node=node.func.attr, replacement=replacement,
                    fix_message=f"Use {self._new_text(e)}", applicability=app)

    def _function(self, node: cst.Call) -> None:
        q = self.sem.call_name(node)
        e = self.by_via.get("function", {}).get(q or "")
        if e is None:
            return
        old_args = self._old_args(node, e)
        message = f"`{self._spelled(node)}(dataset, ...)` is deprecated; {self._new_text(e)} ({e['why']})"
        start = node.func.attr if isinstance(node.func, cst.Attribute) else None
        if old_args is None or e["params"][0] not in old_args:
            self.report(node, message, start_node=start)
            return
        receiver = old_args.pop(e["params"][0])
        if not isinstance(receiver, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            receiver = receiver.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        replacement, app = self._build(receiver, e, old_args, None)
        self.report(node, message, start_node=start, replacement=replacement,
                    fix_message=f"Use {self._new_text(e)}", applicability=app)

    def _method(self, node: cst.Call, e: dict) -> None:
        """`ds.make_one_shot_iterator()` -> `iter(ds)` on a value traced to a tf.data constructor."""
        func = node.func
        if not self.datasets.is_dataset(func.value):
            return
        fn = e["new"][0]["function"].split(".", 1)[-1]
        replacement = cst.Call(func=cst.Name(fn), args=[cst.Arg(func.value)])
        self.report(node, f"`Dataset.{func.attr.value}()` is TF1 graph-mode API; use `{fn}(ds)` ({e['why']})",
                    start_node=func.attr, replacement=replacement, fix_message=f"Use `{fn}(...)`",
                    applicability=self._app(e))

    # -- helpers -----------------------------------------------------------------------------------------------
    def _spelled(self, call: cst.Call) -> str:
        return self.code_for(call.func)

    def _new_text(self, e: dict) -> str:
        steps = []
        for s in e["new"]:
            if "method" in s:
                steps.append(f".{s['method']}()")
            elif "function" in s:
                steps.append(f"`{s['function'].split('.', 1)[-1]}()`")
        return "use `" + "".join(steps) + "`" if all(st.startswith(".") for st in steps) else "use " + " ".join(steps)

    def _old_args(self, call: cst.Call, e: dict) -> Optional[dict[str, cst.BaseExpression]]:
        """old parameter name -> value expression, or None when the call cannot be mapped (star args, unknown
        keywords, too many positional arguments)."""
        params = e.get("params") or []
        out: dict[str, cst.BaseExpression] = {}
        pos = 0
        for a in call.args:
            if a.star:
                return None
            if a.keyword is None:
                if pos >= len(params):
                    return None
                out[params[pos]] = a.value
                pos += 1
            else:
                if a.keyword.value not in params:
                    return None
                out[a.keyword.value] = a.value
        return out

    def _app(self, e: dict) -> Applicability:
        return Applicability.SAFE if e.get("equivalence") == "exact" else Applicability.UNSAFE

    def _build(self, receiver: cst.BaseExpression, e: dict, old: dict[str, cst.BaseExpression],
               like: Optional[cst.Call]) -> tuple[cst.BaseExpression, Applicability]:
        app = self._app(e)
        if any(p in old for p in e.get("drop") or []):
            app = Applicability.UNSAFE
        cur = receiver
        for i, step in enumerate(e["new"]):
            args: list[cst.Arg] = []
            keyword_only = False
            for k, (new_kw, old_p) in enumerate((step.get("args") or {}).items()):
                if old_p not in old:
                    keyword_only = True
                    continue
                positional = not keyword_only and k < int(step.get("positional", 0))
                args.append(self._arg(new_kw if not positional else None, old[old_p]))
            for kw in step.get("autotune") or []:
                spelling = autotune(self.sem, self.target_version)
                if spelling:
                    args.append(self._arg(kw, cst.parse_expression(spelling)))
            for new_kw, old_p in (step.get("negate") or {}).items():
                if old_p in old:
                    v = literal_value(old[old_p])
                    if v is True:
                        args.append(self._arg(new_kw, cst.Name("False")))
                    elif v is not False:
                        args.append(self._arg(new_kw, cst.UnaryOperation(
                            operator=cst.Not(), expression=old[old_p].with_changes(
                                lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))))
            args = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    if j < len(args) - 1 else a for j, a in enumerate(args)]
            if i == 0 and like is not None:
                cur = like.with_changes(func=like.func.with_changes(value=cur, attr=cst.Name(step["method"])), args=args)
            else:
                cur = cst.Call(func=cst.Attribute(value=cur, attr=cst.Name(step["method"])), args=args)
        return cur, app

    def _arg(self, keyword: Optional[str], value: cst.BaseExpression) -> cst.Arg:
        if keyword is None:
            return cst.Arg(value=value)
        return cst.Arg(value=value, keyword=cst.Name(keyword), equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))

