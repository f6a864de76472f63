"""TFL113 cache-then-take: `.cache().take(k)` fills a cache that is thrown away each time."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg, literal_value
from ..base import Check, NodeEdit
from ..common import iterated_values, order_not_required, working_loop
from .chain import dataset_call, mapped_fn, random_call, swap_adjacent, swap_through_variable

# sources whose elements come in a random order (`list_files` shuffles the names by default, in every epoch)
RANDOM_SOURCES = ("Dataset.list_files", "Dataset.random", "experimental.RandomDataset",
                  "Dataset.sample_from_datasets", "experimental.sample_from_datasets")


class CacheThenTake(Check):
    code = "TFL113"

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("take",))
        if p is None or p.last.method != "cache" or p.last.call is None:
            return
        cache = p.last.call
        count = literal_value(node.args[0].value) if node.args else None
        if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= 1:
            return  # `cache().take(1)`: a look at one batch (`list(make().take(1))[0]`); re-reading it costs nothing
        loop = next((a for a in self.index.ancestors(node) if isinstance(a, cst.For)), None)
        if isinstance(loop, cst.For) and any(v is node for v in iterated_values(self.sem, loop.iter)) \
                and not working_loop(self.sem, loop):
            # `for x in ds.take(1): print(x)`, `for i, (x, y) in enumerate(ds.take(25)): plt.imshow(x)`: a one-off
            # look at the data, not a pipeline run every epoch
            return
        message = ("`cache().take(k)`: the iterator stops before the cache is complete, so the partial cache is "
                   "discarded and every epoch reads and transforms the data again; use `take(k).cache()`")
        # Upstream randomness: `cache().take(k)` draws a new sample each epoch, `take(k).cache()` freezes one.
        # (a file that sets `deterministic = False` lets parallel steps reorder elements each epoch)
        random_upstream = _random_source(self.sem, p.source) or order_not_required(self.ctx.text) or any(
            s.method == "shuffle" or (s.method in ("map", "flat_map", "interleave", "filter")
                                      and random_call(self.sem, mapped_fn(self.sem, s)) is not None)
            or _nondeterministic(s)
            for s in p.steps[:-1]
        )
        app = Applicability.UNSAFE if random_upstream else Applicability.SAFE
        swapped = swap_adjacent(self.sem, cache, node)
        start = node.func.attr
        if swapped is not None:
            target, replacement = swapped
            self.report(node, message, start_node=start, target=target, replacement=replacement,
                        fix_message="Swap to `take(...).cache(...)`", applicability=app)
            return
        # through a variable: `ds = ds.cache()` ... `ds = ds.take(k)` -> `ds = ds.take(k)` ... `ds = ds.cache()`
        across = swap_through_variable(self.sem, cache, node)
        if across is not None:
            self.report(node, message, start_node=start, edits=[NodeEdit(t, "replace", node=n) for t, n in across],
                        fix_message="Swap to `take(...)` then `cache(...)`", applicability=app)
            return
        self.report(node, message, start_node=start)


def _random_source(sem, source) -> bool:
    call = source.call
    q = (sem.call_name(call) or "") if call is not None else ""
    if not q.endswith(RANDOM_SOURCES):
        return False
    if q.endswith("list_files"):
        shuffle = get_arg(call, "shuffle", 1)
        return shuffle is None or literal_value(shuffle.value) is not False
    return True


def _nondeterministic(step) -> bool:
    """A step that may produce its elements in another order every epoch (`deterministic=False`)."""
    arg = get_arg(step.call, "deterministic") if step.call is not None else None
    return arg is not None and literal_value(arg.value) not in (True, None)  # None: the options' default
