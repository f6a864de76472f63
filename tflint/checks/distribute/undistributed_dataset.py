"""TFL503 undistributed-dataset: `strategy.run` fed with elements of a plain (not distributed) tf.data dataset."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import get_arg
from ...semantics.index import all_params
from ..base import Check
from .strategy import run_calls


DISTRIBUTING = frozenset({"experimental_distribute_dataset", "distribute_datasets_from_function",
                          "experimental_distribute_datasets_from_function"})


class UndistributedDataset(Check):
    code = "TFL503"

    def finish(self) -> None:
        for run in run_calls(self.sem):
            for value in self._inputs(run):
                source = self._plain_dataset(value, 0)
                if source is not None:
                    self.report(run, f"`strategy.run` gets elements of `{source}`, a plain tf.data dataset: every "
                                     "replica receives the same whole batch instead of its share; iterate "
                                     "`strategy.experimental_distribute_dataset(...)` (or "
                                     "`distribute_datasets_from_function`) instead",
                                start_node=run.func.attr)
                    break

    def _inputs(self, run: cst.Call) -> list[cst.BaseExpression]:
        out = []
        positional = [a for a in run.args if a.keyword is None and not a.star]
        out += [a.value for a in positional[1:]]
        args = get_arg(run, "args")
        if args is not None:
            if isinstance(args.value, (cst.Tuple, cst.List)):
                out += [e.value for e in args.value.elements if not isinstance(e, cst.StarredElement)]
            else:
                out.append(args.value)
        return out

    def _plain_dataset(self, expr: cst.BaseExpression, depth: int) -> Optional[str]:
        """The dataset expression `expr` is an element of, when that dataset is a plain tf.data pipeline."""
        if depth > 3:
            return None
        if isinstance(expr, cst.Call) and self.sem.call_name(expr) == "builtins.next" and expr.args:
            return self._iterator_source(expr.args[0].value, depth)
        if not isinstance(expr, cst.Name):
            return None
        b = self.index.lookup(expr.value, expr)
        if b is None:
            return None
        if isinstance(b.node, cst.For) and b.kind in ("for", "unpack"):
            return self._dataset_text(b.node.iter)
        if b.kind == "assign" and b.value is not None:
            return self._plain_dataset(b.value, depth + 1)
        if b.kind == "param" and isinstance(b.node, cst.Param):
            return self._through_callers(b.node, depth)
        return None

    def _iterator_source(self, it: cst.BaseExpression, depth: int) -> Optional[str]:
        """The plain dataset an iterator comes from: `iter(ds)`, a name bound to it, or a parameter every caller
        in the file passes one (`def train_step(iterator): strategy.run(fn, args=(next(iterator),))`)."""
        if depth > 3:
            return None
        value = self._value(it)
        if isinstance(value, cst.Call) and self.sem.call_name(value) == "builtins.iter" and value.args:
            if isinstance(it, cst.Name) and self._distributed_binding(it):
                return None  # `if strategy: it = iter(distributed) else: it = iter(ds)`: which one runs is not known
            return self._dataset_text(value.args[0].value)
        if isinstance(it, cst.Name):
            b = self.index.lookup(it.value, it)
            if b is not None and b.kind == "param" and isinstance(b.node, cst.Param):
                for arg in self._caller_args(b.node):
                    found = self._iterator_source(arg, depth + 1)
                    if found is not None:
                        return found
        return None

    def _caller_args(self, param: cst.Param) -> list[cst.BaseExpression]:
        """What the same-file call sites of `param`'s function pass for it."""
        fn = next((a for a in self.index.ancestors(param) if isinstance(a, cst.FunctionDef)), None)
        if fn is None:
            return []
        params = list(all_params(fn.params))
        pos = next((i for i, p in enumerate(params) if p is param), None)
        if pos is None:
            return []
        if params and params[0].name.value == "self":
            pos -= 1
        out = []
        for call in self.index.nodes(cst.Call):
            if self.functions.resolve_callable(call.func) is fn:
                arg = get_arg(call, param.name.value, pos)
                if arg is not None:
                    out.append(arg.value)
        return out

    def _through_callers(self, param: cst.Param, depth: int) -> Optional[str]:
        fn = self.index.parent(self.index.parent(param))
        if not isinstance(fn, cst.FunctionDef):
            fn = next((a for a in self.index.ancestors(param) if isinstance(a, cst.FunctionDef)), None)
        if fn is None:
            return None
        params = [p for p in all_params(fn.params)]
        pos = next((i for i, p in enumerate(params) if p is param), None)
        if pos is None:
            return None
        if params and params[0].name.value == "self":
            pos -= 1
        for call in self.index.nodes(cst.Call):
            if self.functions.resolve_callable(call.func) is not fn:
                continue
            arg = get_arg(call, param.name.value, pos)
            if arg is not None:
                found = self._plain_dataset(arg.value, depth + 1)
                if found is not None:
                    return found
        return None

    def _distributed_binding(self, name: cst.Name) -> bool:
        """Another binding of the same name in its scope iterates a distributed dataset (NVIDIA's BERT
        `run_squad.py`: `iter(strategy.experimental_distribute_datasets_from_function(fn))` when there is a strategy,
        `iter(fn())` when there is none)."""
        for b in self.index.scope_of(name).bindings.get(name.value, ()):
            v = b.value
            if isinstance(v, cst.Call) and self.sem.call_name(v) == "builtins.iter" and v.args:
                inner = v.args[0].value
                if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) \
                        and inner.func.attr.value in DISTRIBUTING:
                    return True
        return False

    def _value(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind == "assign" and b.value is not None:
                return b.value
        return expr

    def _dataset_text(self, expr: cst.BaseExpression) -> Optional[str]:
        return self.code_for(expr) if self.datasets.is_dataset(expr) else None
