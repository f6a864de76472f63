"""TFL105 python-function-in-pipeline: `tf.py_function`/`tf.numpy_function` inside a mapped function."""
from __future__ import annotations

import libcst as cst

from ..base import Check
from ..common import PYTHON_FUNCTIONS, calls_in_function, simulated_latency
from .chain import cached_downstream, read_once_pipeline

PYTHON_CALLS = PYTHON_FUNCTIONS | {"tensorflow.py_func", "tensorflow.compat.v1.py_function"}

MAPPING = ("map", "filter", "flat_map", "interleave", "map_with_legacy_function", "filter_with_legacy_function")


class PythonFunctionInPipeline(Check):
    code = "TFL105"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in MAPPING:
            return
        mapped = self.datasets.mapped_function(node)
        if mapped is None:
            return
        fn = self.functions.resolve_callable(mapped)
        if fn is None:
            return
        found = None
        for call, q in calls_in_function(self.sem, fn, depth=1):
            if q in PYTHON_CALLS:
                found = (call, q)
                break
        if found is None or not self.datasets.is_dataset(func.value):
            return
        if simulated_latency(self.sem, fn):
            return  # `py_function(lambda: time.sleep(0.001))`: a benchmark's stand-in for heavy preprocessing
        if cached_downstream(self.sem, node) is not None:
            return  # `.cache()` further down: the Python function runs in the first epoch only
        inner = self.datasets.pipeline(func.value)
        if inner is not None and inner.batched:
            return  # a map over batches: one Python call per batch, its cost spread over the batch's elements
        if read_once_pipeline(self.sem, node, inner):
            return  # a test or validation set (by its names, its split, the evaluation branch): read once per evaluation
        call, q = found
        spelled = self.code_for(call.func)
        self.report(
            node,
            f"`{func.attr.value}` runs Python code through `{spelled}`: every element calls back into the Python "
            "interpreter (under the GIL), which parallelizes poorly, is never auto-parallelized, and makes the "
            "dataset impossible to serialize or distribute; write the function with TensorFlow ops",
            start_node=func.attr,
        )
