"""Which code runs as a graph function (semantics/functions.py) and which values are tensors (semantics/tensors.py)."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tflint.semantics import Semantics
from tflint.semantics.tensors import is_tf_op, tensors_of


def sem_of(src: str) -> Semantics:
    return Semantics(cst.parse_module(textwrap.dedent(src)))


def reasons(sem: Semantics) -> dict[str, str]:
    """name of each graph function (def name, or `lambda@<row-order>`) -> reason"""
    out = {}
    tf_fns = sem.functions.tf_functions()
    for fn in sem.index.functions:
        if id(fn) in tf_fns:
            out[fn.name.value] = tf_fns[id(fn)]
    for i, lam in enumerate(sem.index.nodes(cst.Lambda)):
        if id(lam) in tf_fns:
            out[f"lambda{i}"] = tf_fns[id(lam)]
    return out


def expr_at(sem: Semantics, text: str) -> cst.BaseExpression:
    """The first `if`/`while` test, or assigned value, whose source is `text`."""
    module = sem.module
    for typ in (cst.If, cst.While):
        for n in sem.index.nodes(typ):
            if module.code_for_node(n.test) == text:
                return n.test
    for n in sem.index.nodes(cst.Assign):
        if module.code_for_node(n.value) == text:
            return n.value
    for n in sem.index.nodes(cst.Call):
        if module.code_for_node(n) == text:
            return n
    raise AssertionError(f"no expression {text!r}")


def test_graph_function_reasons():
    sem = sem_of("""
        import functools
        import tensorflow as tf
        from tensorflow import keras

        @tf.function
        def decorated(x):
            return helper(x)

        @tf.function(jit_compile=True)
        def decorated_args(x):
            return x

        def helper(x):
            return nested_helper(x)

        def nested_helper(x):
            return x

        def plain(x):
            return x

        def wrapped(x):
            return x

        def wrapped_with_args(x):
            return x

        step = tf.function(wrapped)
        jit = tf.function(jit_compile=True)(wrapped_with_args)

        class M(keras.Model):
            def train_step(self, data):
                return self.helper_method(data)

            def helper_method(self, data):
                return data

            def not_a_step(self, data):
                return data

        class NotKeras:
            def train_step(self, data):
                return data

        @tf.function
        def distributed(batch):
            return strategy.run(replica_step, args=(batch,))

        def replica_step(batch):
            return batch

        @tf.function
        def control_flow(x):
            tf.cond(x > 0, true_branch, lambda: x)
            return tf.while_loop(cond_fn, body_fn, [x])

        def true_branch():
            return 1

        def cond_fn(i):
            return i < 10

        def body_fn(i):
            return i + 1

        def eager_cond(x):
            return tf.cond(x > 0, never_graph, never_graph)

        def never_graph():
            return 1

        def parse(record):
            return record

        ds = tf.data.TFRecordDataset(["a"]).map(parse)
        not_ds = [1, 2].map(plain)
    """)
    got = reasons(sem)
    assert got["decorated"] == "decorated"
    assert got["decorated_args"] == "decorated"
    assert got["helper"] == "called"
    assert got["nested_helper"] == "called"
    assert got["wrapped"] == "wrapped"
    assert got["wrapped_with_args"] == "wrapped"
    assert got["train_step"] == "keras-step"
    assert got["helper_method"] == "called"
    assert got["replica_step"] == "strategy-run"
    assert got["true_branch"] == "graph-fn"
    assert got["cond_fn"] == "graph-fn" and got["body_fn"] == "graph-fn"
    assert got["parse"] == "dataset-fn"
    for name in ("plain", "not_a_step", "never_graph", "eager_cond"):
        assert name not in got, name
    # NotKeras.train_step is not a graph function: only one train_step is
    steps = [fn for fn in sem.index.functions if fn.name.value == "train_step"]
    assert [sem.functions.is_tf_function(fn) for fn in steps] == [True, False]


def test_tf_function_of_stops_at_python_functions():
    sem = sem_of("""
        import tensorflow as tf

        @tf.function
        def f(x):
            def py(v):
                return v.numpy()

            def inner(v):
                return v * 2

            y = tf.py_function(py, [x], tf.float32)
            return inner(y)
    """)
    calls = {sem.module.code_for_node(c): c for c in sem.index.nodes(cst.Call)}
    assert sem.functions.tf_function_of(calls["v.numpy()"]) is None
    outer = sem.functions.tf_function_of(calls["inner(y)"])
    assert outer is not None and outer.name.value == "f"
    assert sem.functions.in_tf_function(calls["inner(y)"])
    # `v * 2` is in `inner`, called from `f`: a graph function itself
    inner = [fn for fn in sem.index.functions if fn.name.value == "inner"][0]
    assert sem.functions.tf_function_reason(inner) == "called"


TENSOR_SRC = """
import numpy as np
import tensorflow as tf
from tensorflow import keras

CONST = 3


@tf.function
def f(x, training=False, n: int = 3, *args, scale=2.0, t: tf.Tensor = None):
    a = tf.reduce_sum(x)
    b = a > 0
    c = x.shape[0]
    d = len(x)
    e = x[0] * 2
    g = a if x.shape[0] else 0
    h = x is None
    k = np.float32(1.0)
    m = tf.executing_eagerly()
    p = x.numpy()
    q = -a
    r = a + CONST
    s = tf.shape(x)[0]
    u = keras.ops.sum(x)
    for i in range(10):
        pass
    for row in x:
        v = row
    return a


class Model(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.w = tf.Variable(1.0)
        self.v = None

    def train_step(self, data):
        x, y = data
        pred = self(x, training=True)
        out = self.dense(x)
        loss = self.compute_loss(x, y, pred)
        weight = self.w * 2
        flag = self.v
        return loss
"""


@pytest.mark.parametrize("text,expected", [
    ("tf.reduce_sum(x)", True),
    ("a > 0", True),
    ("x.shape[0]", False),
    ("len(x)", False),
    ("x[0] * 2", True),
    ("x is None", False),
    ("np.float32(1.0)", False),
    ("tf.executing_eagerly()", False),
    ("x.numpy()", False),
    ("-a", True),
    ("a + CONST", True),
    ("tf.shape(x)[0]", True),
    ("keras.ops.sum(x)", True),
    ("self(x, training=True)", True),
    ("self.dense(x)", True),
    ("self.compute_loss(x, y, pred)", True),
    ("self.w * 2", True),
    ("self.v", False),
])
def test_is_tensor(text, expected):
    sem = sem_of(TENSOR_SRC)
    assert tensors_of(sem).is_tensor(expr_at(sem, text)) is expected


def test_parameters():
    sem = sem_of(TENSOR_SRC)
    t = tensors_of(sem)
    f = [fn for fn in sem.index.functions if fn.name.value == "f"][0]
    params = {p.name.value: p for p in [*f.params.params, *f.params.kwonly_params]}
    assert t.param_is_tensor(f, params["x"])
    assert not t.param_is_tensor(f, params["training"])  # Python flag name with a bool default
    assert not t.param_is_tensor(f, params["n"])  # annotated int
    assert not t.param_is_tensor(f, params["scale"])  # Python default
    assert t.param_is_tensor(f, params["t"])  # annotated tf.Tensor
    assert not t.param_is_tensor(f, f.params.star_arg)
    step = [fn for fn in sem.index.functions if fn.name.value == "train_step"][0]
    assert not t.param_is_tensor(step, step.params.params[0])  # self
    assert t.param_is_tensor(step, step.params.params[1])  # data


def test_parameters_follow_call_sites_and_signatures():
    sem = sem_of("""
        import tensorflow as tf

        @tf.function
        def called_with_python(x, k):
            return x * k

        called_with_python(tf.ones([2]), 3)

        @tf.function(input_signature=[tf.TensorSpec([None]), tf.TensorSpec([])])
        def signed(x, k):
            return x

        signed(tf.ones([2]), 3)

        @tf.function
        def outer(x):
            return helper(tf.reduce_sum(x), 2)

        def helper(v, w):
            return v * w
    """)
    t = tensors_of(sem)
    fns = {fn.name.value: fn for fn in sem.index.functions}
    p = fns["called_with_python"].params.params
    assert t.param_is_tensor(fns["called_with_python"], p[0])
    assert not t.param_is_tensor(fns["called_with_python"], p[1])
    s = fns["signed"].params.params
    assert t.param_is_tensor(fns["signed"], s[1])
    h = fns["helper"].params.params
    assert t.param_is_tensor(fns["helper"], h[0])
    assert not t.param_is_tensor(fns["helper"], h[1])


def test_python_numbers_and_loop_indices():
    sem = sem_of("""
        import tensorflow as tf

        for epoch in range(10):
            a = epoch
        for i, item in enumerate([1, 2]):
            b = i
            c = item
        for s in tf.range(3):
            d = s
        n = 0
        n += 1
    """)
    t = tensors_of(sem)
    names = {}
    for a in sem.index.nodes(cst.Assign):
        if isinstance(a.value, cst.Name):
            names[a.targets[0].target.value] = a.value
    assert t.python_loop_index(names["a"]) is not None
    assert t.python_loop_index(names["b"]) is not None
    assert t.python_loop_index(names["c"]) is None  # enumerate's item, not its index
    assert t.python_loop_index(names["d"]) is None
    assert t.is_tensor(names["d"])
    assert t.is_python_number(names["a"])
    n = [x for x in sem.index.nodes(cst.Name) if x.value == "n"][-1]
    assert t.is_python_number(n)


@pytest.mark.parametrize("q,expected", [
    ("tensorflow.reduce_sum", True), ("tensorflow.math.log", True), ("tensorflow.function", False),
    ("tensorflow.executing_eagerly", False), ("tensorflow.TensorShape", False), ("keras.ops.mean", True),
    ("tensorflow.config.list_physical_devices", False), ("tensorflow.io.gfile.exists", False),
    ("tensorflow.io.parse_example", True), (None, False),
    ("tensorflow.compat.v1.executing_eagerly_outside_functions", False), ("keras.backend.is_tpu_strategy", False),
    ("keras.backend.floatx", False), ("keras.backend.mean", True), ("tensorflow.math.is_nan", True),
    ("tensorflow.debugging.is_numeric_tensor", False), ("tensorflow.compat.v1.is_nan", True),
])
def test_is_tf_op(q, expected):
    assert is_tf_op(q) is expected


def test_parameters_with_unknown_call_sites_and_strategy_args():
    sem = sem_of("""
        import tensorflow as tf

        ds = tf.data.Dataset.range(3).batch(2)

        @tf.function
        def step(x, limit):
            return strategy.run(replica, args=(x, limit))

        def replica(x, limit):
            return x

        for batch in ds:
            step(batch, config.limit)

        @tf.function
        def from_dataset(x, y):
            return x

        for x, y in ds:
            from_dataset(x, y)
    """)
    t = tensors_of(sem)
    fns = {fn.name.value: fn for fn in sem.index.functions}
    sp = fns["step"].params.params
    assert t.param_is_tensor(fns["step"], sp[0])  # a dataset element
    assert not t.param_is_tensor(fns["step"], sp[1])  # only an unknown value reaches it
    rp = fns["replica"].params.params
    assert sem.functions.tf_function_reason(fns["replica"]) == "strategy-run"
    assert t.param_is_tensor(fns["replica"], rp[0])
    assert not t.param_is_tensor(fns["replica"], rp[1])
    fp = fns["from_dataset"].params.params
    assert t.param_is_tensor(fns["from_dataset"], fp[0]) and t.param_is_tensor(fns["from_dataset"], fp[1])
