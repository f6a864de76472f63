"""Which expressions hold tensors, and which hold plain Python values, inside graph functions.

A static, evidence-only analysis: `is_tensor(expr)` is True only when the value provably comes from TensorFlow
(a TF op's result, a model or layer call, a tensor method, arithmetic or comparison involving one, a tensor
parameter of a tf.function); `is_python_number(expr)` is True only for values provably Python numbers (literals,
`len(...)`, static shapes, loop variables of Python `range`/`enumerate`). Anything else is unknown and both
answer False, so rules built on them stay silent without evidence.

Parameters of a graph function are tensors when nothing says otherwise: not `self`/`cls`, not `*args`/`**kwargs`,
not annotated as a Python type, no default value, not a conventional Python flag name (`training`, ...), and (for a
decorated or wrapped tf.function) no call site in the file passes a Python value there. An `input_signature`
makes every positional parameter a tensor. Parameters of a same-file helper called from a graph function are
tensors when every call site in a graph function passes a tensor there.

Use `tensors_of(sem)`: one analysis per file, cached on the Semantics object.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from .index import all_params
from .names import NOT_LITERAL, get_arg, literal_value

# TensorFlow namespaces whose functions return tensors (or structures of them).
_TENSOR_MODULES = (
    "tensorflow.math.", "tensorflow.linalg.", "tensorflow.nn.", "tensorflow.image.", "tensorflow.random.",
    "tensorflow.strings.", "tensorflow.signal.", "tensorflow.sparse.", "tensorflow.ragged.", "tensorflow.bitwise.",
    "tensorflow.audio.", "tensorflow.experimental.numpy.", "tensorflow.raw_ops.", "keras.ops.",
    "tensorflow.compat.v1.math.", "tensorflow.compat.v1.nn.",
)
# `keras.backend` (tf.keras 2's `K`) mixes tensor ops with Python helpers (`is_tpu_strategy`, `floatx`, ...): only
# these are tensor ops.
_KERAS_BACKEND_OPS = frozenset({
    "sum", "mean", "max", "min", "prod", "square", "sqrt", "exp", "log", "abs", "dot", "batch_dot", "cast",
    "clip", "concatenate", "reshape", "stack", "expand_dims", "squeeze", "transpose", "softmax", "relu", "sigmoid",
    "tanh", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "equal",
    "not_equal", "greater", "greater_equal", "less", "less_equal", "maximum", "minimum", "pow", "argmax",
    "argmin", "gather", "zeros_like", "ones_like", "random_normal", "random_uniform", "l2_normalize", "all", "any",
    "cumsum", "flatten", "batch_flatten", "tile", "repeat", "switch", "shape", "round", "sign", "std", "var",
})
# Predicates and getters whose names say they answer in Python (`executing_eagerly_outside_functions`,
# `is_tensor`, `get_seed`): not tensor ops, except these elementwise predicates.
_PYTHON_ANSWER_PREFIXES = ("executing_eagerly", "is_", "inside_", "in_", "get_", "has_", "enable_", "disable_",
                           "set_", "list_", "experimental_")
_TENSOR_PREDICATES = frozenset({"is_nan", "is_inf", "is_finite", "is_non_decreasing", "is_strictly_increasing",
                                "is_variable_initialized"})
_TENSOR_IO = frozenset({
    "tensorflow.io.parse_example", "tensorflow.io.parse_single_example", "tensorflow.io.decode_raw",
    "tensorflow.io.decode_image", "tensorflow.io.decode_jpeg", "tensorflow.io.decode_png", "tensorflow.io.read_file",
    "tensorflow.io.parse_tensor", "tensorflow.io.serialize_tensor", "tensorflow.io.decode_csv",
    "tensorflow.io.parse_sequence_example", "tensorflow.io.decode_base64", "tensorflow.io.decode_compressed",
})
# Top-level `tf.X` names that do not return tensors.
_NOT_TENSOR_TOP = frozenset({
    "function", "executing_eagerly", "is_tensor", "TensorShape", "as_dtype", "get_static_value", "device",
    "name_scope", "control_dependencies", "GradientTape", "Module", "TensorSpec", "DType", "init_scope",
    "print", "py_function", "numpy_function", "autograph", "get_logger", "group", "no_op", "is_symbolic_tensor",
    "RaggedTensorSpec", "SparseTensorSpec", "IndexedSlicesSpec", "OptionalSpec", "type_spec_from_value",
    "custom_gradient", "recompute_grad", "register_tensor_conversion_function", "CriticalSection",
    "VariableSynchronization", "VariableAggregation", "Graph", "Operation", "dtypes", "constant_initializer",
    "zeros_initializer", "ones_initializer", "random_normal_initializer", "random_uniform_initializer",
    "TypeSpec", "UnconnectedGradients", "AggregationMethod", "load_op_library", "load_library", "ensure_shape_fn",
})
# Tensor methods/attributes whose result is not a tensor.
NON_TENSOR_ATTRS = frozenset({
    "shape", "dtype", "ndim", "name", "device", "graph", "op", "numpy", "get_shape", "as_list", "is_integer",
    "is_floating", "is_bool", "trainable", "is_tensor_like", "rank", "value_index", "consumers", "__len__",
})
# Parameter names that by convention carry Python flags or configuration.
PYTHON_PARAM_NAMES = frozenset({
    "training", "is_training", "train", "mode", "verbose", "debug", "reuse", "name", "scope", "config",
    "params", "hparams", "flags", "strategy",
})
_PYTHON_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "list", "dict", "tuple", "set", "None",
                           "Optional", "List", "Dict", "Tuple", "Sequence", "Mapping", "Callable", "Any"})
_KERAS_TENSOR_METHODS = frozenset({"compiled_loss", "compute_loss", "loss", "call", "loss_fn"})
_VARIABLE_MAKERS = frozenset({"tensorflow.Variable", "tensorflow.compat.v1.get_variable", "tensorflow.constant",
                              "keras.Variable"})


def tensors_of(sem) -> "Tensors":
    t = getattr(sem, "_tflint_tensors", None)
    if t is None:
        t = Tensors(sem)
        sem._tflint_tensors = t
    return t


def is_tf_op(q: Optional[str]) -> bool:
    """True for a qualified name of a TensorFlow/Keras function that returns tensors."""
    if not q:
        return False
    last = q.rsplit(".", 1)[-1]
    if last.startswith(_PYTHON_ANSWER_PREFIXES) and last not in _TENSOR_PREDICATES:
        return False
    if q.startswith("keras.backend."):
        return q.count(".") == 2 and last in _KERAS_BACKEND_OPS
    if q.startswith(_TENSOR_MODULES) or q in _TENSOR_IO:
        return True
    if q.startswith("tensorflow.") and q.count(".") == 1:
        return q.split(".", 1)[1] not in _NOT_TENSOR_TOP
    if q.startswith("tensorflow.compat.v1.") and q.count(".") == 3:
        return q.rsplit(".", 1)[1] not in _NOT_TENSOR_TOP and q.rsplit(".", 1)[1][:1].islower()
    return False


def python_type_annotation(ann: Optional[cst.Annotation]) -> Optional[bool]:
    """True: annotated as a Python value; False: annotated as a tensor; None: no annotation or unknown."""
    if ann is None:
        return None
    text_nodes = [ann.annotation]
    node = ann.annotation
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.BinaryOperation):  # int | None
        text_nodes = [node.left, node.right]
        node = node.left
    names = []
    for n in text_nodes + [node]:
        if isinstance(n, cst.Name):
            names.append(n.value)
        elif isinstance(n, cst.Attribute):
            names.append(n.attr.value)
        elif isinstance(n, cst.SimpleString):
            names.append(n.value.strip("'\""))
    if any(x in ("Tensor", "Variable", "TensorLike") for x in names):
        return False
    if any(x in _PYTHON_TYPES for x in names):
        return True
    return None


class Tensors:
    def __init__(self, sem) -> None:
        self.sem = sem
        self.index = sem.index
        self.names = sem.names
        self.functions = sem.functions
        self._cache: dict[int, bool] = {}
        self._active: set[int] = set()
        self._call_sites: Optional[dict[int, list[tuple[cst.Call, cst.CSTNode]]]] = None
        self._self_attrs: dict[int, dict[str, list[cst.BaseExpression]]] = {}
        self._params: dict[int, bool] = {}
        self._signed: Optional[set[int]] = None

    # -- tensors ---------------------------------------------------------------------------------------------
    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        key = id(expr)
        if key in self._cache:
            return self._cache[key]
        if key in self._active or len(self._active) > 60:
            return False
        self._active.add(key)
        try:
            result = self._is_tensor(expr)
        finally:
            self._active.discard(key)
        self._cache[key] = result
        return result

    def _is_tensor(self, e: cst.BaseExpression) -> bool:
        if isinstance(e, cst.Call):
            return self._call_is_tensor(e)
        if isinstance(e, cst.Name):
            return self._name_is_tensor(e)
        if isinstance(e, cst.Attribute):
            if e.attr.value in NON_TENSOR_ATTRS:
                return False
            if e.attr.value == "T":
                return self.is_tensor(e.value)
            return self._self_attr_is_tensor(e)
        if isinstance(e, cst.Subscript):
            return self.is_tensor(e.value)
        if isinstance(e, cst.BinaryOperation):
            return self.is_tensor(e.left) or self.is_tensor(e.right)
        if isinstance(e, cst.UnaryOperation):
            return self.is_tensor(e.expression)
        if isinstance(e, cst.BooleanOperation):
            return self.is_tensor(e.left) or self.is_tensor(e.right)
        if isinstance(e, cst.Comparison):
            if all(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in e.comparisons):
                return False
            return self.is_tensor(e.left) or any(self.is_tensor(c.comparator) for c in e.comparisons)
        if isinstance(e, cst.IfExp):
            return self.is_tensor(e.body) and self.is_tensor(e.orelse)
        return False

    def _call_is_tensor(self, call: cst.Call) -> bool:
        q = self.names.call_name(call)
        if q:
            if is_tf_op(q):
                return True
            if q == "builtins.next" and call.args:
                it = call.args[0].value
                if isinstance(it, cst.Name):
                    b = self.index.lookup(it.value, it)
                    it = b.value if b is not None and b.kind in ("assign", "annassign") and b.value is not None else it
                if isinstance(it, cst.Call) and self.names.call_name(it) == "builtins.iter" and it.args:
                    return self._is_dataset(it.args[0].value)
                return False
            if q.startswith("keras.") and q.rsplit(".", 1)[-1][:1].isupper():
                return False  # constructing a layer/model/optimizer
            return False
        func = call.func
        # a call of a TF op result? `tf.function(f)(x)`, `layer(...)(x)`
        if isinstance(func, cst.Call):
            fq = self.names.call_name(func)
            if fq in ("tensorflow.function",) or self._is_keras_object_call(func):
                return True
            return False
        if isinstance(func, cst.Attribute):
            recv = func.value
            if isinstance(recv, cst.Name) and recv.value == "self":
                cls = self.index.enclosing_class(call)
                if cls is not None and self.functions.is_keras_class(cls) and func.attr.value in _KERAS_TENSOR_METHODS:
                    return True
                if cls is not None and self._self_attr_is_model(cls, func.attr.value):
                    return True
            if func.attr.value in NON_TENSOR_ATTRS:
                return False
            if self.is_tensor(recv):
                return True  # a tensor method: x.assign_add(), v.read_value(), ...
        if isinstance(func, cst.Name):
            if func.value == "self":
                cls = self.index.enclosing_class(call)
                return cls is not None and self.functions.is_keras_class(cls)
            b = self.index.lookup(func.value, func)
            if b is not None and b.kind in ("assign", "annassign") and isinstance(b.value, cst.Call):
                if self._is_keras_object_call(b.value):
                    return True  # model = keras.Sequential(...); model(x)
                if self.names.call_name(b.value) in ("tensorflow.function",):
                    return self._returns_tensor(self.functions.resolve_callable(b.value))
        target = self.functions.resolve_callable(func)
        if target is not None:
            return self._returns_tensor(target)
        return False

    def _is_keras_object_call(self, call: cst.Call) -> bool:
        q = self.names.call_name(call)
        if not q:
            return False
        last = q.rsplit(".", 1)[-1]
        return (q.startswith(("keras.layers.", "keras.models.", "keras.Sequential", "keras.Model",
                              "keras.applications.", "keras.losses.", "keras.saving.load_model",
                              "keras.models.load_model")) and (last[:1].isupper() or "load_model" in last))

    def _self_attr_is_model(self, cls: cst.ClassDef, attr: str) -> bool:
        values = self.self_attribute_values(cls).get(attr, [])
        return bool(values) and all(isinstance(v, cst.Call) and self._is_keras_object_call(v) for v in values)

    def _self_attr_is_tensor(self, e: cst.Attribute) -> bool:
        if not (isinstance(e.value, cst.Name) and e.value.value == "self"):
            return False
        cls = self.index.enclosing_class(e)
        if cls is None:
            return False
        values = self.self_attribute_values(cls).get(e.attr.value, [])
        if not values:
            return False
        for v in values:
            if not isinstance(v, cst.Call):
                return False
            q = self.names.call_name(v)
            if q in _VARIABLE_MAKERS:
                continue
            if isinstance(v.func, cst.Attribute) and v.func.attr.value == "add_weight":
                continue
            return False
        return True

    def self_attribute_values(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        """`self.<attr> = value` assignments in the methods of `cls`."""
        cached = self._self_attrs.get(id(cls))
        if cached is not None:
            return cached
        out: dict[str, list[cst.BaseExpression]] = {}
        for assign in self.functions.body_nodes(cls, cst.Assign):
            for t in assign.targets:
                tt = t.target
                if isinstance(tt, cst.Attribute) and isinstance(tt.value, cst.Name) and tt.value.value == "self":
                    if self.index.enclosing_class(assign) is cls:
                        out.setdefault(tt.attr.value, []).append(assign.value)
        self._self_attrs[id(cls)] = out
        return out

    def _is_dataset(self, expr: cst.BaseExpression) -> bool:
        try:
            return self.sem.datasets.is_dataset(expr)
        except RecursionError:
            return False

    def _returns_tensor(self, fn) -> bool:
        if fn is None:
            return False
        if isinstance(fn, cst.Lambda):
            return self.is_tensor(fn.body)
        rets = [r for r in self.functions.body_nodes(fn, cst.Return) if self.functions.owner(r) is fn]
        return any(r.value is not None and self.is_tensor(r.value) for r in rets)

    def _name_is_tensor(self, name: cst.Name) -> bool:
        b = self.index.lookup(name.value, name)
        if b is None:
            return False
        if b.kind == "param":
            fn = b.scope
            return isinstance(b.node, cst.Param) and fn is not None and self.param_is_tensor(fn, b.node)
        if b.kind in ("assign", "annassign"):
            return b.value is not None and self.is_tensor(b.value)
        if b.kind == "augassign":
            stmt = b.node
            if isinstance(stmt, cst.AugAssign):
                if self.is_tensor(stmt.value):
                    return True
                if isinstance(stmt.target, cst.Name):
                    return self.is_tensor(stmt.target)  # the binding before this statement
            return False
        if b.kind == "unpack":
            v = b.value
            if v is None:
                return False
            if isinstance(v, (cst.Tuple, cst.List)) and b.index is not None:
                els = v.elements
                if b.index < len(els) and not isinstance(els[b.index], cst.StarredElement):
                    return self.is_tensor(els[b.index].value)
                return False
            if isinstance(b.node, cst.For):
                # for x, y in dataset: elements of a tf.data Dataset are tensors; other iterables vary too much
                return self._is_dataset(v)
            return self.is_tensor(v)
        if b.kind == "for":
            it = b.value
            if it is None:
                return False
            if isinstance(it, cst.Call) and self.names.call_name(it) == "builtins.range":
                return False
            return self.is_tensor(it) or self._is_dataset(it)
        return False

    # -- parameters ----------------------------------------------------------------------------------------
    def param_is_tensor(self, fn, param: cst.Param) -> bool:
        key = id(param)
        if key not in self._params:
            self._params[key] = False  # a recursive question about the same parameter: no evidence
            self._params[key] = self._param_is_tensor(fn, param)
        return self._params[key]

    def _param_is_tensor(self, fn, param: cst.Param) -> bool:
        reason = self.functions.tf_function_reason(fn)
        if reason is None:
            return False
        params = all_params(fn.params)
        if param is fn.params.star_arg or param is fn.params.star_kwarg:
            return False
        if isinstance(fn, cst.FunctionDef) and params and params[0] is param and param.name.value in ("self", "cls"):
            return False
        ann = python_type_annotation(param.annotation)
        if ann is False:
            return True
        if ann is True:
            return False
        if param.name.value in PYTHON_PARAM_NAMES or param.name.value.startswith(("is_", "use_", "num_", "n_")):
            return False
        if param.default is not None:
            return self.is_tensor(param.default)
        if reason == "strategy-run":
            args = self._strategy_run_args(fn, param)
            return all(self.is_tensor(a) for a in args) if args is not None else True
        if reason in ("keras-step", "graph-fn", "dataset-fn"):
            return True
        if reason in ("decorated", "wrapped"):
            if self.has_input_signature(fn):
                return param in list(fn.params.params) + list(fn.params.posonly_params)
            args = self._args_for(fn, param)
            if not args:
                return True  # called from elsewhere: an unannotated, undefaulted argument is taken as a tensor
            # with call sites in the file, follow them: no Python value, and at least one tensor
            return not any(self.is_python_value(a) for a in args) and any(self.is_tensor(a) for a in args)
        # called from a graph function: every graph call site must pass a tensor
        args = [a for a, caller in self._args_for(fn, param, with_caller=True)
                if self.functions.tf_function_of(caller) is not None]
        return bool(args) and all(self.is_tensor(a) for a in args)

    def _strategy_run_args(self, fn, param: cst.Param) -> Optional[list[cst.BaseExpression]]:
        """The values `strategy.run(fn, args=(...))` passes to `param`, or None when not visible."""
        positional = list(fn.params.posonly_params) + list(fn.params.params)
        if param not in positional:
            return None
        pos = positional.index(param)
        out = []
        for call in self.index.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in ("run", "experimental_run_v2")):
                continue
            first = get_arg(call, "fn", 0)
            if first is None or self.functions.resolve_callable(first.value) is not fn:
                continue
            args = get_arg(call, "args", 1)
            if args is None or not isinstance(args.value, (cst.Tuple, cst.List)):
                return None
            els = args.value.elements
            if pos >= len(els) or isinstance(els[pos], cst.StarredElement):
                return None
            out.append(els[pos].value)
        return out or None

    def has_input_signature(self, fn) -> bool:
        if self._signed is None:
            signed: set[int] = set()
            for call in self.index.nodes(cst.Call):
                if self.names.call_name(call) == "tensorflow.function" and get_arg(call, "input_signature", 1):
                    first = get_arg(call, "func", 0)
                    target = self.functions.resolve_callable(first.value) if first is not None else None
                    if target is not None:
                        signed.add(id(target))
            self._signed = signed
        if id(fn) in self._signed:
            return True
        if isinstance(fn, cst.FunctionDef):
            dec = self.functions.tf_function_decorator(fn)
            if dec is not None and isinstance(dec.decorator, cst.Call) and get_arg(dec.decorator, "input_signature", 1):
                return True
        return False

    def call_sites(self, fn) -> list[tuple[cst.Call, cst.CSTNode]]:
        """Same-file calls that resolve to `fn` (through names bound to `tf.function(fn)` too)."""
        if self._call_sites is None:
            sites: dict[int, list[tuple[cst.Call, cst.CSTNode]]] = {}
            for call in self.index.nodes(cst.Call):
                target = self.functions.resolve_callable(call.func)
                if target is not None:
                    sites.setdefault(id(target), []).append((call, call))
            self._call_sites = sites
        return self._call_sites.get(id(fn), [])

    def _args_for(self, fn, param: cst.Param, with_caller: bool = False):
        """The argument expressions passed to `param` at each same-file call site of `fn`."""
        out = []
        for call, node in self.call_sites(fn):
            value = self.functions.argument_at(fn, param, call)
            if value is not None:
                out.append((value, node) if with_caller else value)
        return out

    # -- Python values -------------------------------------------------------------------------------------
    def is_python_value(self, expr: cst.BaseExpression) -> bool:
        """Provably a Python number/bool/string (not a tensor)."""
        if literal_value(expr) is not NOT_LITERAL:
            return True
        return self.is_python_number(expr)

    def is_python_number(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        if _depth > 8:
            return False
        v = literal_value(expr)
        if v is not NOT_LITERAL:
            return isinstance(v, (int, float)) and not isinstance(v, bool)
        if isinstance(expr, cst.Call):
            q = self.names.call_name(expr)
            if q == "builtins.len":
                return True
            if q in ("builtins.int", "builtins.float") and expr.args:
                return not self.is_tensor(expr.args[0].value)
            if q in ("builtins.max", "builtins.min", "builtins.abs", "builtins.round", "builtins.pow") and expr.args:
                return all(not a.star and self.is_python_number(a.value, _depth + 1) for a in expr.args)
            return False
        if isinstance(expr, cst.BinaryOperation):
            return (self.is_python_number(expr.left, _depth + 1) and self.is_python_number(expr.right, _depth + 1))
        if isinstance(expr, cst.UnaryOperation):
            return self.is_python_number(expr.expression, _depth + 1)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape":
            return False  # a static dimension may be None; not a number we can vouch for
        if isinstance(expr, cst.Name):
            return self.python_loop_index(expr) is not None or self._bound_to_python_number(expr, _depth)
        return False

    def _bound_to_python_number(self, name: cst.Name, depth: int) -> bool:
        b = self.index.lookup(name.value, name)
        if b is None:
            return False
        if b.kind in ("assign", "annassign") and b.value is not None:
            return self.is_python_number(b.value, depth + 1)
        if b.kind == "augassign" and isinstance(b.node, cst.AugAssign) and isinstance(b.node.target, cst.Name):
            return self.is_python_number(b.node.value, depth + 1) and self.is_python_number(b.node.target, depth + 1)
        return False

    def python_loop_index(self, name: cst.Name) -> Optional[cst.For]:
        """The `for` statement when `name` is the loop variable of a Python `range(...)` loop or the index of
        an `enumerate(...)` loop."""
        b = self.index.lookup(name.value, name)
        if b is None or not isinstance(b.node, cst.For):
            return None
        it = b.node.iter
        if not isinstance(it, cst.Call):
            return None
        q = self.names.call_name(it)
        if q == "builtins.range" and b.kind == "for":
            if any(self.is_tensor(a.value) for a in it.args):
                return None
            return b.node
        if q == "builtins.enumerate" and b.kind == "unpack" and b.index == 0:
            return b.node
        return None
