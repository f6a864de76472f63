"""The semantic layer every rule stands on: names through imports and aliases, dataset tracing (and silence where
the origin is unknown), tf.function scopes."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tflint.semantics import Semantics


def sem_of(src: str, dataset_functions=()) -> Semantics:
    return Semantics(cst.parse_module(textwrap.dedent(src)), dataset_functions)


def expr(sem: Semantics, text: str, nth: int = 0) -> cst.BaseExpression:
    """The nth expression node (Name, Attribute or Call) whose source is exactly `text`."""
    found = []
    for typ in (cst.Call, cst.Attribute, cst.Name, cst.Subscript):
        for n in sem.index.nodes(typ):
            if sem.module.code_for_node(n) == text:
                found.append((sem.index.order_of(n) if hasattr(sem.index, "order_of") else 0, n))
    assert found, f"no expression {text!r}"
    found.sort(key=lambda t: t[0])
    return found[nth][1]


def last_value(sem: Semantics, name: str) -> cst.BaseExpression:
    """The Name `name` as used in the last `use(name)` call of the module."""
    calls = [c for c in sem.index.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use"]
    for c in reversed(calls):
        if isinstance(c.args[0].value, cst.Name) and c.args[0].value.value == name:
            return c.args[0].value
    raise AssertionError(f"no use({name})")


# -- names ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "src, text, qualified",
    [
        ("import tensorflow as tf\n", "tf.data.Dataset.range", "tensorflow.data.Dataset.range"),
        ("import tensorflow\n", "tensorflow.data.AUTOTUNE", "tensorflow.data.AUTOTUNE"),
        ("from tensorflow import data as tfd\n", "tfd.Dataset.range", "tensorflow.data.Dataset.range"),
        ("from tensorflow.data import Dataset\n", "Dataset.from_tensor_slices", "tensorflow.data.Dataset.from_tensor_slices"),
        ("from tensorflow.keras import layers\n", "layers.Dense", "keras.layers.Dense"),
        ("import tensorflow as tf\n", "tf.keras.layers.Dense", "keras.layers.Dense"),
        ("import keras\n", "keras.layers.Dense", "keras.layers.Dense"),
        ("import tf_keras as keras\n", "keras.Model", "keras.Model"),
        ("from keras import ops\n", "ops.sum", "keras.ops.sum"),
        ("import tensorflow as tf\n", "tf.compat.v1.Session", "tensorflow.compat.v1.Session"),
        ("import tensorflow.compat.v1 as tf1\n", "tf1.placeholder", "tensorflow.compat.v1.placeholder"),
        ("import tensorflow as tf\n", "tf.compat.v2.data.Dataset", "tensorflow.data.Dataset"),
        ("import tensorflow.compat.v2 as tf\n", "tf.function", "tensorflow.function"),
        ("import tensorflow as tf\nAUTOTUNE = tf.data.AUTOTUNE\n", "AUTOTUNE", "tensorflow.data.AUTOTUNE"),
        ("import tensorflow as tf\nAUTO = tf.data.experimental.AUTOTUNE\n", "AUTO", "tensorflow.data.experimental.AUTOTUNE"),
        ("import tensorflow_datasets as tfds\n", "tfds.load", "tensorflow_datasets.load"),
        # star imports of TensorFlow modules: one, or the `models`/`layers` module a name belongs to
        ("from tensorflow.keras.models import *\n", "Model", "keras.models.Model"),
        ("from tensorflow.keras.layers import *\nfrom tensorflow.keras.models import *\n", "Model", "keras.models.Model"),
        ("from tensorflow.keras.layers import *\nfrom tensorflow.keras.models import *\n", "Conv2D", "keras.layers.Conv2D"),
        ("from tensorflow.keras.layers import *\nfrom tensorflow.keras.models import *\n", "concat", None),
        ("from numpy import *\n", "array", None),
        ("from tensorflow.keras.models import *\nfrom nets.vgg import *\n", "Model", None),  # either star
    ],
)
def test_qualified_names(src, text, qualified):
    sem = sem_of(src + f"use({text})\n")
    node = sem.module.body[-1].body[0].value.args[0].value
    assert sem.names.qualified_name(node) == qualified


def test_function_local_import():
    sem = sem_of("def f():\n    import tensorflow as tf\n    return tf.data\nuse(tf.data)\n")
    inner, outer = expr(sem, "tf.data", 0), expr(sem, "tf.data", 1)
    assert sem.names.qualified_name(inner) == "tensorflow.data"
    assert sem.names.qualified_name(outer) is None  # not imported at module level


@pytest.mark.parametrize(
    "src",
    [
        "tf = object()\n",  # not an import
        "import tensorflow as tf\ntf = MyShim()\n",  # rebound after import
        "import numpy as tf\n",
        "from mylib import tf\n",
        "import tensorflow as tf\ndef g(tf):\n    return tf.data.Dataset\n",  # a parameter shadows the module
    ],
)
def test_unresolved_names_are_not_tensorflow(src):
    if "def g" in src:
        sem = sem_of(src)
        node = expr(sem, "tf.data.Dataset")
    else:
        sem = sem_of(src + "use(tf.data.Dataset)\n")
        node = sem.module.body[-1].body[0].value.args[0].value
    q = sem.names.qualified_name(node)
    assert q is None or not q.startswith("tensorflow"), q


def test_alias_for_spelling():
    sem = sem_of("from tensorflow import data as tfd\nimport tensorflow as tf\nx = 1\n")
    assert sem.names.alias_for("tensorflow.data.AUTOTUNE") in ("tfd.AUTOTUNE", "tf.data.AUTOTUNE")
    sem = sem_of("import numpy as np\nx = 1\n")
    assert sem.names.alias_for("tensorflow.data.AUTOTUNE") is None


# -- datasets ---------------------------------------------------------------------------------------------
DATASET_CASES = {
    "chain": "import tensorflow as tf\nds = tf.data.Dataset.range(9).shuffle(3).batch(2)\nuse(ds)\n",
    "reassigned": "import tensorflow as tf\nds = tf.data.TFRecordDataset(['a'])\nds = ds.map(f)\nds = ds.batch(2)\nuse(ds)\n",
    "tfds": "import tensorflow_datasets as tfds\nds = tfds.load('mnist', split='train')\nuse(ds)\n",
    "tfds-info": "import tensorflow_datasets as tfds\nds, info = tfds.load('mnist', split='train', with_info=True)\nuse(ds)\n",
    "tfds-info-dict": "import tensorflow_datasets as tfds\nsplits, info = tfds.load('mnist', with_info=True)\nds = splits['train']\nuse(ds)\n",
    "tfds-tuple-split": "import tensorflow_datasets as tfds\ntrain, test = tfds.load('mnist', split=['train', 'test'])\nuse(train)\n",
    "tfds-builder-dict": ("import tensorflow_datasets as tfds\nb = tfds.builder('celeb_a')\n"
                          "splits = b.as_dataset(shuffle_files=False)\nds = splits['train']\nuse(ds)\n"),
    "tfds-builder-positional": "import tensorflow_datasets as tfds\nds = tfds.builder('mnist').as_dataset('test')\nuse(ds)\n",
    "list_files": "import tensorflow as tf\nds = tf.data.Dataset.list_files('*.rec')\nuse(ds)\n",
    "from_tensor_slices": "from tensorflow import data as tfd\nds = tfd.Dataset.from_tensor_slices([1, 2])\nuse(ds)\n",
    "zip": "import tensorflow as tf\na = tf.data.Dataset.range(3)\nds = tf.data.Dataset.zip((a, a))\nuse(ds)\n",
    "interleave": "import tensorflow as tf\nf = tf.data.Dataset.list_files('*')\nds = f.interleave(tf.data.TFRecordDataset)\nuse(ds)\n",
    "helper": "import tensorflow as tf\ndef make():\n    return tf.data.Dataset.range(3).map(g)\nds = make()\nuse(ds)\n",
    "annotated-param": "import tensorflow as tf\ndef f(ds: tf.data.Dataset):\n    use(ds)\n",
    "keras-util": "import keras\nds = keras.utils.image_dataset_from_directory('d')\nuse(ds)\n",
    "compat-v1": "import tensorflow as tf\nds = tf.compat.v1.data.TFRecordDataset(['a'])\nuse(ds)\n",
    "config-function": "import mypkg\nds = mypkg.load_data('x')\nuse(ds)\n",
    "from-import": "from tensorflow.data import TFRecordDataset\nds = TFRecordDataset(['a'])\nuse(ds)\n",
}


@pytest.mark.parametrize("case", sorted(DATASET_CASES))
def test_is_dataset(case):
    sem = sem_of(DATASET_CASES[case], dataset_functions=["mypkg.load_data"] if case == "config-function" else ())
    assert sem.datasets.is_dataset(last_value(sem, "ds" if "ds" in DATASET_CASES[case].split("use(")[-1] else "train"))


def test_pipeline_steps():
    sem = sem_of("import tensorflow as tf\nds = tf.data.TFRecordDataset(['a'])\nds = ds.map(f)\nds = ds.batch(2).prefetch(1)\nuse(ds)\n")
    p = sem.datasets.pipeline(last_value(sem, "ds"))
    assert p is not None
    assert p.methods()[-3:] == ["map", "batch", "prefetch"]
    assert p.source.kind == "records"


NOT_DATASET_CASES = {
    "pandas": "import pandas as pd\nds = pd.read_csv('x').map(str)\nuse(ds)\n",
    "pandas-series": "import pandas as pd\nds = pd.Series([1]).map(lambda v: v)\nuse(ds)\n",
    "hf-datasets": "from datasets import load_dataset\nds = load_dataset('imdb')\nds = ds.map(f).shuffle(seed=1)\nuse(ds)\n",
    "hf-module": "import datasets\nds = datasets.load_dataset('imdb').map(f)\nuse(ds)\n",
    "torch": "import torch\nds = torch.utils.data.DataLoader([1, 2], batch_size=2)\nuse(ds)\n",
    "unknown-param": "def f(ds):\n    ds = ds.map(g).batch(2)\n    use(ds)\n",
    "other-annotation": "import pandas as pd\ndef f(ds: pd.DataFrame):\n    use(ds)\n",
    "builtin-map": "ds = map(str, [1, 2])\nuse(ds)\n",
    "user-class": "class Data:\n    def map(self, f):\n        return self\nds = Data().map(f).batch(3)\nuse(ds)\n",
    "unknown-call": "import mylib\nds = mylib.make().map(f)\nuse(ds)\n",
    "reassigned-away": "import tensorflow as tf\nds = tf.data.Dataset.range(3)\nds = list(ds)\nuse(ds)\n",
    "tfds-info-dict-info": "import tensorflow_datasets as tfds\nsplits, info = tfds.load('mnist', with_info=True)\nds = info['x']\nuse(ds)\n",
    "tf-other": "import tensorflow as tf\nds = tf.constant([1, 2])\nuse(ds)\n",
    "tfds-builder-info": "import tensorflow_datasets as tfds\nb = tfds.builder('mnist')\nds = b.info['x']\nuse(ds)\n",
}


@pytest.mark.parametrize("case", sorted(NOT_DATASET_CASES))
def test_silent_on_unknown_origin(case):
    sem = sem_of(NOT_DATASET_CASES[case])
    v = last_value(sem, "ds")
    assert not sem.datasets.is_dataset(v)
    assert sem.datasets.pipeline(v) is None


def test_rule_silent_on_lookalikes_end_to_end():
    from tflint.api import check_source, default_settings

    for case, src in NOT_DATASET_CASES.items():
        fs = check_source(src, "a.py", default_settings(select=["TFL1"]))
        assert fs == [], (case, fs)


# -- tf.function scopes -----------------------------------------------------------------------------------
FUNCTION_SRC = """
import tensorflow as tf
from tensorflow import function as tfn

@tf.function
def decorated(x):
    return probe_a(x)

@tf.function(jit_compile=True)
def decorated_args(x):
    return probe_b(x)

@tfn
def decorated_alias(x):
    return probe_c(x)

def wrapped(x):
    return probe_d(x)

compiled = tf.function(wrapped)

def helper(x):
    return probe_e(x)

@tf.function
def caller(x):
    return helper(x)

def plain(x):
    return probe_f(x)

class Model(tf.keras.Model):
    def call(self, x):
        return probe_g(x)

def outer():
    @tf.function
    def inner(x):
        return probe_h(x)
    return inner
"""


@pytest.mark.parametrize(
    "probe, inside",
    [("probe_a", True), ("probe_b", True), ("probe_c", True), ("probe_d", True), ("probe_e", True),
     ("probe_f", False), ("probe_h", True)],
)
def test_in_tf_function(probe, inside):
    sem = sem_of(FUNCTION_SRC)
    call = expr(sem, f"{probe}(x)")
    assert sem.functions.in_tf_function(call) is inside


def test_module_level_is_not_tf_function():
    sem = sem_of("import tensorflow as tf\nx = probe(1)\n")
    assert not sem.functions.in_tf_function(expr(sem, "probe(1)"))


def test_resolve_callable_through_partial_and_tf_function():
    sem = sem_of(
        "import functools\nimport tensorflow as tf\ndef f(x, k):\n    return x\n"
        "use(functools.partial(f, k=2))\nuse(tf.function(f))\nuse(lambda x: x)\nuse(unknown)\n"
    )
    uses = [c.args[0].value for c in sem.index.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use"]
    fn = sem.functions.resolve_callable(uses[0])
    assert isinstance(fn, cst.FunctionDef) and fn.name.value == "f"
    fn = sem.functions.resolve_callable(uses[1])
    assert isinstance(fn, cst.FunctionDef) and fn.name.value == "f"
    assert isinstance(sem.functions.resolve_callable(uses[2]), cst.Lambda)
    assert sem.functions.resolve_callable(uses[3]) is None


def test_mapped_function():
    sem = sem_of("import tensorflow as tf\ndef parse(x):\n    return x\nds = tf.data.Dataset.range(3).map(parse)\n")
    call = expr(sem, "tf.data.Dataset.range(3).map(parse)")
    fn = sem.datasets.mapped_function(call)
    assert fn is not None


def test_a_function_that_returns_its_parameter_hands_back_the_callers_pipeline():
    """`wrap(ds)` that returns `ds` (after setting an attribute) gives the call site's own pipeline back, steps and
    all; a method's parameter that every call site passes a dataset is a dataset (round 24: ashpy, compare_gan)."""
    sem = sem_of("""
        import tensorflow as tf

        def wrap(dataset):
            dataset.extra = 1
            return dataset

        class Data:
            def _relabel(self, ds, pattern):
                if not pattern:
                    return ds
                return tf.data.Dataset.zip((ds, tf.data.TFRecordDataset(pattern)))

            def load(self, files):
                ds = self._relabel(tf.data.TextLineDataset(files), None)
                use(ds)

        train = wrap(tf.data.TFRecordDataset("a").map(f).batch(8))
        use(train)
        other = wrap([1, 2, 3])
        use(other)
    """)
    p = sem.datasets.pipeline(last_value(sem, "train"))
    assert p is not None and p.methods() == ["source", "map", "batch"] and p.source.kind == "records"
    assert sem.datasets.pipeline(last_value(sem, "other")) is None
    assert sem.datasets.pipeline(last_value(sem, "ds")) is not None
