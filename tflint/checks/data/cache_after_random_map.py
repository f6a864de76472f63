"""TFL111 cache-after-random-map: `.map(augment).cache()` freezes the augmentation after epoch 1."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from .chain import dataset_call, evaluation_pipeline, mapped_fn, random_call, upstream_until

MAPPING = ("map", "flat_map", "interleave", "filter", "map_with_legacy_function")


class CacheAfterRandomMap(Check):
    code = "TFL111"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, ("cache",))
        if p is None or evaluation_pipeline(self.sem, node, p):
            return
        for s in upstream_until(p, ("cache",)):
            if s.method not in MAPPING:
                continue
            fn = mapped_fn(self.sem, s)
            rnd = random_call(self.sem, fn)
            if rnd is None:
                continue
            what = self.code_for(rnd.func)
            self.report(
                node,
                f"`cache()` after a `{s.method}` that draws random numbers (`{what}`): the cache keeps the first "
                "epoch's random results and every later epoch sees the same augmentation; cache before the "
                "random step",
                start_node=node.func.attr,
            )
            return

