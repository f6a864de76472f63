"""TFL107 per-example-parsing: `tf.io.parse_single_example` mapped per element, then batched."""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ...findings import Applicability
from ..base import Check, NodeEdit
from ..common import calls_in_function
from .chain import Polymorphism, cached_downstream, dataset_call, eval_branch, mapped_fn, read_once_pipeline, single_use, swap_adjacent, swap_through_variable

PARSE_SINGLE = frozenset({"tensorflow.io.parse_single_example", "tensorflow.compat.v1.parse_single_example",
                          "tensorflow.compat.v1.io.parse_single_example", "tensorflow.parse_single_example"})
# Per-example decoding that dominates the element's cost (and cannot be batched: images differ in size), so
# batching the parse would save a small share (judged not worth acting on in the TPU reference ImageNet pipelines)
HEAVY_DECODE = frozenset(
    f"tensorflow.{m}.{op}" for m in ("io", "image") for op in (
        "decode_jpeg", "decode_and_crop_jpeg", "decode_image", "decode_png", "decode_bmp", "decode_gif", "decode_webp")
) | {"tensorflow.audio.decode_wav"} | {
    # an image resized per element: images of different sizes, which a batched parse could not stack anyway
    f"tensorflow.image.{op}" for op in ("resize", "resize_images", "resize_with_pad", "resize_with_crop_or_pad",
                                        "resize_image_with_pad", "resize_image_with_crop_or_pad")}
# a feature key naming an encoded image (`'image/encoded'`, `'jpeg_bytes'`): the record carries a compressed image
# that is decoded per element after the parse, here or in another module's preprocessing
ENCODED_KEY = re.compile(r"encoded|jpe?g|png", re.I)
BATCHING = ("batch", "padded_batch")
# steps that may sit between the parsing map and the batch without changing the advice
PASS_THROUGH = ("shuffle", "repeat", "cache", "prefetch", "filter", "take", "skip", "with_options", "map", "shard")


class PerExampleParsing(Check):
    code = "TFL107"
    training_input = True

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self.poly = Polymorphism(self.sem)
        self._seen: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        p = dataset_call(self.sem, node, BATCHING)
        if p is None or eval_branch(self.sem, node) or read_once_pipeline(self.sem, node, p):
            # the evaluation branch of an input function, or a test set read once after training (rounds 20-22, not
            # worth acting on); a validation set, parsed again every epoch, keeps the finding
            return
        later_map = False
        for s in reversed(p.steps):
            if s.method == "cache":
                return  # parsed once, before the cache: batching the parse saves only the first epoch's time
            if s.method not in PASS_THROUGH or s.call is None:
                return
            if s.method != "map":
                continue
            fn = mapped_fn(self.sem, s)
            parse = self._parse_call(fn)
            if parse is None:
                later_map = True
                continue
            if later_map:
                # another per-element map follows the parse before the batch (a tokenizer, an augmentation): it
                # needs single examples, so the parse cannot simply move after the batch, and that map, not the
                # parse, is usually the cost (judged not worth acting on in real code)
                return
            if id(s.call) in self._seen:
                return
            self._seen.add(id(s.call))
            if cached_downstream(self.sem, s.call) is not None:
                return  # parsed once, in the first epoch: the cache after the batch replays the parsed batches
            if eval_branch(self.sem, s.call) or read_once_pipeline(self.sem, s.call):
                return  # the evaluation branch, or a test set: parsed once (rounds 20-22)
            message = ("`tf.io.parse_single_example` mapped per element and then batched: parsing one record at a "
                       "time costs a kernel launch per example; batch the serialized records first and parse them "
                       "with `tf.io.parse_example` (vectorized)")
            edits = self._fix(s.call, node, fn, parse) if s is p.last and node.func.attr.value == "batch" else None
            if edits:
                self.report(s.call, message, start_node=s.call.func.attr, edits=edits,
                            fix_message="Batch first, then parse with `parse_example`",
                            applicability=Applicability.UNSAFE)
            else:
                self.report(s.call, message, start_node=s.call.func.attr)
            return

    def _parse_call(self, fn) -> Optional[cst.Call]:
        if fn is None:
            return None
        calls = calls_in_function(self.sem, fn, depth=2)
        if any((q or "").replace("compat.v1.", "") in HEAVY_DECODE for _, q in calls):
            return None  # the decode dominates: a batched parse saves a small share of the element's cost
        if any(ENCODED_KEY.search(s.raw_value) for s in self.functions.body_nodes(fn, cst.SimpleString)):
            return None  # an encoded image field, decoded per element later: the same, decoded out of sight
        for call, q in calls:
            if q in PARSE_SINGLE:
                return call
        return None

    def _fix(self, m: cst.Call, batch: cst.Call, fn, parse: cst.Call) -> Optional[list[NodeEdit]]:
        """Swap map and batch and switch the function to `parse_example`, only when the function is the parse
        call plus element-wise work, it is used nowhere else, and the parse call is written `<alias>.<name>`."""
        if self.functions.owner(parse) is not fn or not isinstance(parse.func, cst.Attribute):
            return None
        if not self._polymorphic_besides(fn, parse):
            return None
        if isinstance(fn, cst.FunctionDef):
            expr = self.datasets.mapped_function(m)
            if not isinstance(expr, cst.Name) or not single_use(self.sem, expr, fn):
                return None
        attr = parse.func.attr
        if attr.value != "parse_single_example":
            return None
        renamed = "parse_example"
        swapped = swap_adjacent(self.sem, m, batch)
        pairs = [swapped] if swapped is not None else swap_through_variable(self.sem, m, batch)
        if pairs is None:
            return None
        edits = []
        # a lambda inside the rewritten code moves with its step: rename inside the replacements
        inside = any(self.functions.is_inside(parse, target) for target, _ in pairs)
        for target, replacement in pairs:
            if inside:
                replacement = replacement.visit(_Rename(parse, renamed))
            edits.append(NodeEdit(target, "replace", node=replacement))
        if not inside:
            edits.append(NodeEdit(attr, "replace", node=cst.Name(renamed)))
        return edits

    def _polymorphic_besides(self, fn, parse: cst.Call) -> bool:
        """The function is element-wise once the parse call is treated as an element-wise source."""
        poly = Polymorphism(self.sem)
        original = poly._call

        def call(c, local, depth):
            if c is parse:
                first = c.args[0] if c.args and c.args[0].keyword is None else None
                return first is not None and poly.expr(first.value, local, depth)
            return original(c, local, depth)

        poly._call = call  # type: ignore[method-assign]
        return poly.function(fn) if _args_simple(parse) else False


def _args_simple(parse: cst.Call) -> bool:
    return not any(a.star for a in parse.args)


class _Rename(cst.CSTTransformer):
    """Rename `parse_single_example` in the copy of the chain (matched by structure: the original node is not in
    the new tree, so match the attribute name inside a call that has the same argument code)."""

    def __init__(self, parse: cst.Call, new: str) -> None:
        self.args = cst.Module([]).code_for_node(cst.Call(func=cst.Name("f"), args=parse.args))
        self.new = new

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        f = updated.func
        if isinstance(f, cst.Attribute) and f.attr.value == "parse_single_example":
            if cst.Module([]).code_for_node(cst.Call(func=cst.Name("f"), args=updated.args)) == self.args:
                return updated.with_changes(func=f.with_changes(attr=cst.Name(self.new)))
        return updated
