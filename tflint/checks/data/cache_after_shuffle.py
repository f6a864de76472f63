"""TFL112 cache-after-shuffle: `.shuffle(...).cache()` replays the first epoch's order forever."""
from __future__ import annotations

import libcst as cst

from ...semantics import get_arg
from ..base import Check
from .chain import dataset_call, endless_repeat, evaluation_pipeline, is_false_literal, upstream_until


class CacheAfterShuffle(Check):
    code = "TFL112"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("cache",))
        if p is None or evaluation_pipeline(self.sem, node, p):
            return  # an evaluation pass: the order of its elements does not matter
        steps = upstream_until(p, ("cache",))
        if any(st.method == "take" and st.call is not None and st.call.args and _small(st.call.args[0].value)
               for st in steps):
            return  # `shuffle().take(1).cache().repeat()`: a fake-data mode that replays a fixed few elements on purpose
        if len(steps) == len(p.steps) and self._shuffling_source(p):
            source = p.source.call.func.attr.value if isinstance(p.source.call.func, cst.Attribute) else "the source"
            batched = self._batched_source(p)
            if not self._applied_after(node, ("shuffle",)):
                self.report(
                    node,
                    f"`cache()` after `{source}` (shuffle=True by default): the cache stores the first epoch's batches "
                    "and every later epoch replays them in that order; pass `shuffle=False` and shuffle after the "
                    "cache, or cache first",
                    start_node=node.func.attr,
                )
            elif batched and not self._applied_after(node, ("unbatch", "rebatch")):
                self.report(
                    node,
                    f"`cache()` after `{source}` (shuffle=True by default): the cache stores the first epoch's batches, "
                    "and the `shuffle` after it only reorders those whole batches: every epoch trains on the same "
                    "batch compositions; pass `shuffle=False` to the source and shuffle examples before batching",
                    start_node=node.func.attr,
                )
            return
        for s in steps:
            if s.method == "repeat" and s.call is not None and endless_repeat(s.call):
                return  # the cache never completes (TFL119 says so): it replays nothing
            if s.method == "shuffle" and s.call is not None:
                if is_false_literal(get_arg(s.call, "reshuffle_each_iteration", 2)):
                    return  # one fixed order was asked for: caching it changes nothing
                if self._applied_after(node, ("shuffle",)):
                    return  # a shuffle after the cache re-randomizes every epoch
                self.report(
                    node,
                    "`cache()` after `shuffle()`: the cache stores the first epoch's order and every later epoch "
                    "replays it; cache first, then shuffle",
                    start_node=node.func.attr,
                )
                return

    def _shuffling_source(self, p) -> bool:
        """The source is a Keras `*_dataset_from_directory` utility that shuffles (its default) each epoch."""
        call = p.source.call
        q = self.sem.call_name(call) if call is not None else None
        if not q or not q.startswith("keras.") or not q.endswith("_dataset_from_directory"):
            return False
        arg = get_arg(call, "shuffle")
        return arg is None or not is_false_literal(arg)

    def _batched_source(self, p) -> bool:
        """The Keras utility batches (its default `batch_size=32`; `batch_size=None` yields single examples)."""
        arg = get_arg(p.source.call, "batch_size")
        from ...semantics import literal_value

        return arg is None or literal_value(arg.value) is not None

    def _applied_after(self, cache: cst.Call, methods: tuple[str, ...]) -> bool:
        """One of `methods` is applied to a pipeline that holds `cache` (`...cache().shuffle(n)`)."""
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in methods:
                p = self.datasets.pipeline(func.value)
                if p is not None and any(s.call is cache for s in p.steps):
                    return True
        return False


def _small(expr) -> bool:
    from ...semantics import literal_value

    v = literal_value(expr)
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100

