"""TFL405 tensor-core-unfriendly-shape: under `mixed_float16`, literal layer sizes and batch sizes that are not
multiples of 8."""
from __future__ import annotations

import libcst as cst

from ...semantics import get_arg, literal_value
from ..base import Check
from ..keras.models import layer_name
from .policy import FLOAT32_DTYPES, Policies, dtype_name

# layer -> (argument name, position) of the size that becomes a matrix dimension
SIZE_ARGS = {
    "Dense": ("units", 0), "EinsumDense": None, "LSTM": ("units", 0), "GRU": ("units", 0),
    "SimpleRNN": ("units", 0), "Conv1D": ("filters", 0), "Conv2D": ("filters", 0), "Conv3D": ("filters", 0),
    "Conv1DTranspose": ("filters", 0), "Conv2DTranspose": ("filters", 0), "Conv3DTranspose": ("filters", 0),
    "SeparableConv1D": ("filters", 0), "SeparableConv2D": ("filters", 0), "Embedding": ("output_dim", 1),
}


class TensorCoreUnfriendlyShape(Check):
    code = "TFL405"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.policies = Policies.of(self.sem)
        self.multiple = int(self.options.get("multiple", 8))

    def visit_Call(self, node: cst.Call) -> None:
        if not self.policies.any_mixed():
            return
        kind = layer_name(self.sem, node)
        if kind is not None:
            spec = SIZE_ARGS.get(kind)
            if spec is None:
                return
            dtype = get_arg(node, "dtype")
            if dtype is not None and dtype_name(self.sem, dtype.value) in FLOAT32_DTYPES:
                return  # runs in float32: Tensor Cores are not used anyway
            self._size(node, get_arg(node, *spec), f"`{kind}({spec[0]}=...)`")
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in ("fit", "evaluate") and get_arg(node, "x", 0) is not None:
                self._size(node, get_arg(node, "batch_size", 2), "the batch size")
            elif func.attr.value == "batch" and self.datasets.is_dataset(func.value):
                self._size(node, get_arg(node, "batch_size", 0), "the batch size")

    def _size(self, call: cst.Call, arg, what: str) -> None:
        if arg is None:
            return
        value = literal_value(arg.value)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 1 or value % self.multiple == 0:
            return
        if self.policies.at(call) != "mixed_float16":
            return
        self.report(arg.value, f"{what} is {value}, not a multiple of {self.multiple}: under `mixed_float16`, GPU "
                               f"Tensor Cores are used best when matrix dimensions are multiples of {self.multiple} "
                               f"(e.g. {value + (-value) % self.multiple})")
