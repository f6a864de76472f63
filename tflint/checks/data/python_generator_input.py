"""TFL104 python-generator-input: `Dataset.from_generator(...)`, or Keras `fit`/`evaluate`/`predict` fed by a
Python generator."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...findings import Applicability
from ...semantics import get_arg
from ..base import Check
from ..common import simulated_latency, switched_off
from .chain import cached_downstream

FROM_GENERATOR = ("tensorflow.data.Dataset.from_generator", "tensorflow.compat.v1.data.Dataset.from_generator")
CONSUMERS = {"fit": ("x", 0), "evaluate": ("x", 0), "predict": ("x", 0)}
# readers of formats TensorFlow has no op for: a generator built on them is the way in, not a slip to fix
# (judged not worth acting on: video through OpenCV, HDF5 and NIfTI volumes, DICOM, audio through librosa)
NO_TF_DECODER = (
    "cv2.VideoCapture", "h5py.", "nibabel.", "pydicom.", "SimpleITK.", "librosa.", "soundfile.", "scipy.io.",
    "tables.", "zarr.", "netCDF4.", "xarray.", "pyarrow.", "lmdb.", "rasterio.", "osgeo.", "trimesh.", "open3d.",
    "av.", "decord.", "imageio.get_reader", "imageio.v2.get_reader", "imageio.v3.imiter", "skvideo.",
)


class PythonGeneratorInput(Check):
    code = "TFL104"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        q = self.sem.call_name(node)
        if q in FROM_GENERATOR:
            self._from_generator(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in CONSUMERS:
            arg = get_arg(node, *CONSUMERS[func.attr.value])
            if arg is None or not self._is_keras_model(func.value):
                return
            gen = self._generator_call(arg.value)
            if gen is None or switched_off(self.sem, node):
                return
            target = self.functions.resolve_callable(gen.func)
            if target is not None and self._reads_undecodable(target):
                return  # the generator reads a format TensorFlow cannot decode (video, HDF5, NIfTI, ...)
            self.report(
                arg.value,
                f"`{func.attr.value}` is fed by the Python generator `{self.code_for(gen.func)}`: every batch is "
                "produced by Python code, under the GIL and in step with training; build a tf.data pipeline "
                "(`from_tensor_slices` for in-memory arrays, file readers + `map` for files)",
            )

    # -- from_generator ---------------------------------------------------------------------------------
    def _from_generator(self, node: cst.Call) -> None:
        if cached_downstream(self.sem, node) is not None:
            return  # `.cache()` further down: the generator runs in the first epoch only
        if switched_off(self.sem, node):
            return  # under `if eager:` with `eager = False`: the shipped script never builds this pipeline
        message = ("`Dataset.from_generator` runs a Python generator for every element, under the GIL: it cannot "
                   "be parallelized, serialized or distributed, and often dominates the input time")
        remedy = ("; build the source from tensors or files instead (`from_tensor_slices` for in-memory arrays, "
                  "TFRecords written once for the rest)")
        gen_arg = get_arg(node, "generator", 0)
        fn = self.functions.resolve_callable(gen_arg.value) if gen_arg is not None else None
        if gen_arg is not None and self._parameter(gen_arg.value):
            return  # `def dataset_from_generator(generator): ...`: a library wrapping its caller's generator
        if simulated_latency(self.sem, fn):
            return  # a generator that sleeps to stand for slow reads: a benchmark demo
        if fn is not None and self._reads_undecodable(fn):
            return  # the generator reads a format TensorFlow cannot decode (video, HDF5, NIfTI, ...)
        self._per_element = None
        slices = self._array_walk(fn) if fn is not None and get_arg(node, "args", 3) is None else None
        if slices is None:
            self.report(node, message + remedy, start_node=self._start(node))
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            self.report(node, message + remedy, start_node=self._start(node))
            return
        # keep the call's own layout (and any comment after its opening parenthesis)
        replacement = node.with_changes(func=func.with_changes(attr=cst.Name("from_tensor_slices")),
                                        args=[cst.Arg(cst.parse_expression(slices))])
        if self._per_element is not None:
            # the generator walks arrays but computes each element in Python: shown, never applied, because that
            # computation has to become TensorFlow ops before it can run inside `map`
            targets, expr = self._per_element
            try:
                mapped = cst.parse_expression(f"lambda {targets}: {expr}")
            except Exception:
                self.report(node, message + remedy, start_node=self._start(node))
                return
            replacement = cst.Call(func=cst.Attribute(value=replacement, attr=cst.Name("map")), args=[cst.Arg(mapped)])
            self.report(node, message + "; this generator walks in-memory arrays and computes each element in "
                        "Python: slice the arrays and express that computation as a `map` of TensorFlow ops",
                        start_node=self._start(node), replacement=replacement,
                        fix_message=f"Use `from_tensor_slices({slices}).map(...)` (rewrite the lambda with TF ops)",
                        applicability=Applicability.DISPLAY)
            return
        declared = any(get_arg(node, kw) is not None for kw in ("output_signature", "output_types", "output_shapes"))
        note = (" (dtypes and shapes then come from the arrays, not from the declared signature: float64 NumPy "
                "arrays stay float64)") if declared else ""
        self.report(node, message + "; this generator only walks in-memory arrays: use `from_tensor_slices`",
                    start_node=self._start(node), replacement=replacement,
                    fix_message=f"Use `from_tensor_slices({slices})`{note}", applicability=Applicability.UNSAFE)

    def _parameter(self, expr: cst.BaseExpression) -> bool:
        """The generator (or the factory called to make it) is a parameter of the enclosing function: what it does is
        its caller's business, unknown here."""
        if isinstance(expr, cst.Call):
            expr = expr.func  # `from_generator(make_gen(...))`: the factory
        if not isinstance(expr, cst.Name):
            return False
        b = self.index.lookup(expr.value, expr)
        return b is not None and b.kind == "param"

    def _reads_undecodable(self, fn, depth: int = 2) -> bool:
        for call in self.functions.calls_in(fn):
            q = self.sem.call_name(call) or ""
            if q.startswith(NO_TF_DECODER):
                return True
            if depth > 0:
                target = self.functions.resolve_callable(call.func)
                if isinstance(target, cst.FunctionDef) and target is not fn and self._reads_undecodable(target, depth - 1):
                    return True
        return False

    def _start(self, node: cst.Call):
        return node.func.attr if isinstance(node.func, cst.Attribute) else None

    def _array_walk(self, fn) -> Optional[str]:
        """For a generator that only yields the items of in-memory sequences, the `from_tensor_slices` argument:
        `for x, y in zip(xs, ys): yield x, y` -> `(xs, ys)`; `for i in range(len(xs)): yield xs[i], ys[i]`
        -> `(xs, ys)`; `for x in xs: yield x` -> `xs`. None for anything else."""
        if not isinstance(fn, cst.FunctionDef) or not isinstance(fn.body, cst.IndentedBlock):
            return None
        params = fn.params
        if params.params or params.posonly_params or params.kwonly_params or params.star_kwarg is not None \
                or isinstance(params.star_arg, cst.Param):
            return None
        body = [s for s in fn.body.body if not _is_docstring(s)]
        if len(body) != 1 or not isinstance(body[0], cst.For) or body[0].orelse is not None:
            return None
        loop = body[0]
        inner = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
        if len(inner) != 1 or not isinstance(inner[0], cst.SimpleStatementLine) or len(inner[0].body) != 1:
            return None
        stmt = inner[0].body[0]
        if not (isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Yield)) or stmt.value.value is None:
            return None
        yielded = stmt.value.value
        if isinstance(yielded, cst.From):
            return None
        code = self.ctx.module.code_for_node
        it = loop.iter
        # for x, y in zip(xs, ys): yield x, y
        if isinstance(it, cst.Call) and self.sem.call_name(it) == "builtins.zip" and it.args:
            seqs = [a.value for a in it.args]
            if any(a.star or a.keyword for a in it.args) or not all(self._free_sequence(s, fn) for s in seqs):
                return None
            targets = _names(loop.target)
            if targets is None or len(targets) != len(seqs):
                return None
            slices = "(" + ", ".join(code(s) for s in seqs) + ("," if len(seqs) == 1 else "") + ")"
            if _names(yielded) != targets:
                self._per_element = (", ".join(targets), _element_code(code, yielded))
            return slices
        # for i in range(len(xs)): yield xs[i], ys[i]
        if (isinstance(it, cst.Call) and self.sem.call_name(it) == "builtins.range" and len(it.args) == 1
                and isinstance(it.args[0].value, cst.Call) and self.sem.call_name(it.args[0].value) == "builtins.len"
                and isinstance(loop.target, cst.Name)):
            i = loop.target.value
            parts = yielded.elements if isinstance(yielded, cst.Tuple) else None
            items = [e.value for e in parts] if parts is not None else [yielded]
            seqs = []
            for item in items:
                if not (isinstance(item, cst.Subscript) and len(item.slice) == 1
                        and isinstance(item.slice[0].slice, cst.Index)
                        and isinstance(item.slice[0].slice.value, cst.Name) and item.slice[0].slice.value.value == i
                        and self._free_sequence(item.value, fn)):
                    return None
                seqs.append(code(item.value))
            if parts is None:
                return seqs[0]
            return "(" + ", ".join(seqs) + ("," if len(seqs) == 1 else "") + ")"
        # for x in xs: yield x
        if isinstance(loop.target, cst.Name) and self._free_sequence(it, fn):
            if not (isinstance(yielded, cst.Name) and yielded.value == loop.target.value):
                self._per_element = (loop.target.value, _element_code(code, yielded))
            return code(it)
        return None

    def _free_sequence(self, expr: cst.BaseExpression, fn) -> bool:
        """A name bound outside the generator (module or enclosing function) to an array-like value, or an
        attribute like `self.x`; never a call (it could read files lazily)."""
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is None or b.kind not in ("assign", "annassign", "param", "unpack"):
                return False
            return not self.functions.is_inside(b.node, fn)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            return expr.value.value == "self"
        return False

    # -- fit(generator) -----------------------------------------------------------------------------------
    def _generator_call(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[cst.Call]:
        if depth > 3:
            return None
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is not None and b.kind == "assign" and isinstance(b.value, cst.Call):
                return self._generator_call(b.value, depth + 1)
            return None
        if isinstance(expr, cst.Call):
            fn = self.functions.resolve_callable(expr.func)
            if isinstance(fn, cst.FunctionDef) and self._is_generator(fn):
                return expr
        return None

    def _is_generator(self, fn: cst.FunctionDef) -> bool:
        for y in self.functions.body_nodes(fn, cst.Yield):
            if self.functions.owner(y) is fn:
                return True
        return False

    def _is_keras_model(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            if b is None or b.kind not in ("assign", "annassign") or b.value is None:
                return False
            return self._is_keras_model(b.value, depth + 1)
        if isinstance(expr, cst.Call):
            q = self.sem.call_name(expr)
            if q and q.startswith("keras.") and q.rsplit(".", 1)[-1][:1].isupper():
                return True  # keras.Sequential(...), keras.Model(...), keras.applications.ResNet50(...)
            if q in ("keras.models.load_model", "keras.saving.load_model"):
                return True
            if isinstance(expr.func, cst.Name):
                b = self.index.lookup(expr.func.value, expr.func)
                if b is not None and b.kind == "class" and isinstance(b.node, cst.ClassDef):
                    return self.functions.is_keras_class(b.node)
            fn = self.functions.resolve_callable(expr.func)
            if isinstance(fn, cst.FunctionDef):
                rets = [r.value for r in self.functions.body_nodes(fn, cst.Return)
                        if r.value is not None and self.functions.owner(r) is fn]
                return bool(rets) and all(self._is_keras_model(r, depth + 1) for r in rets)
        return False


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _names(t: cst.BaseExpression) -> Optional[tuple[str, ...]]:
    if isinstance(t, cst.Name):
        return (t.value,)
    if isinstance(t, cst.Tuple) and all(isinstance(e.value, cst.Name) and not isinstance(e, cst.StarredElement)
                                        for e in t.elements):
        return tuple(e.value.value for e in t.elements)
    return None


def _element_code(code, yielded: cst.BaseExpression) -> str:
    """The yielded expression as a lambda body (a bare tuple needs its parentheses there)."""
    text = code(yielded)
    if isinstance(yielded, cst.Tuple) and not yielded.lpar:
        return f"({text})"
    return text
