"""Analysis across the modules of a project (tflint.modules, tflint.semantics.crossref/summary): a dataset made in
one module and used in another, a parameter that other modules pass datasets, a helper other modules call from graph
code; unknown (a module not checked, a site that passes something else) stays silent; the cache re-checks a file
whose answers changed although its bytes did not."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from test_cli import no_traceback, run_tflint
from tflint.api import check_paths, default_settings
from tflint.modules import ProjectFacts

ROOT = Path(__file__).resolve().parent.parent
SPLIT = ROOT / "fixtures" / "projects" / "split_layout"


@pytest.fixture
def project(tmp_path) -> Path:
    dest = tmp_path / "split_layout"
    shutil.copytree(SPLIT, dest)
    (dest / "requirements.txt").write_text("tensorflow==2.4.*\n")
    return dest


def _findings(paths) -> set[tuple[str, int, str]]:
    run, _ = check_paths([str(p) for p in paths], default_settings())
    assert not run.errors
    return {(Path(f.filename).name, f.location.row, f.code) for f in run.findings}


def test_a_dataset_made_in_another_module_is_followed(project):
    found = _findings([project])
    assert ("train.py", 14, "TFL118") in found  # `ds.shuffle(1000)` discarded, `ds` from pkg.make_dataset()


def test_a_parameter_other_modules_pass_datasets_is_a_dataset(project):
    found = _findings([project])
    assert ("data.py", 15, "TFL101") in found  # augment(ds) called from train.py with a dataset


def test_a_parameter_another_module_passes_something_else_stays_silent(project):
    found = _findings([project])
    assert not any(name == "data.py" and row == 19 for name, row, _ in found)  # scale(pd.Series(...))


def test_a_helper_called_from_graph_code_in_another_module_runs_as_a_graph(project):
    found = _findings([project])
    assert ("ops.py", 5, "TFL204") in found  # to_host: called from the tf.function `step` in train.py
    assert not any(name == "ops.py" and row == 9 for name, row, _ in found)  # eager_helper: called eagerly


def test_alone_each_file_knows_nothing_of_the_others(project):
    assert ("train.py", 14, "TFL118") not in _findings([project / "train.py"])
    assert ("data.py", 15, "TFL101") not in _findings([project / "pkg" / "data.py"])
    assert ("ops.py", 5, "TFL204") not in _findings([project / "pkg" / "ops.py"])


def test_a_re_export_through_an_init_without_tensorflow_is_needed(project):
    # without pkg/__init__.py among the files, `from pkg import make_dataset` resolves to nothing: silent
    found = _findings([project / "train.py", project / "pkg" / "data.py"])
    assert ("train.py", 14, "TFL118") not in found


def test_a_relative_import_is_resolved(project):
    (project / "pkg" / "use.py").write_text(
        "import tensorflow as tf\nfrom .data import make_dataset\n\nds = make_dataset(['a'])\nds.repeat()\n"
    )
    assert ("use.py", 5, "TFL118") in _findings([project])


def test_the_cache_checks_again_a_file_whose_answers_changed(project, tmp_path):
    env = {"TFLINT_CACHE_DIR": str(tmp_path / "cache")}
    first = run_tflint("check", project, "--output-format", "json", env=env)
    no_traceback(first)
    rows = {(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(first.stdout)}
    assert ("train.py", 14, "TFL118") in rows
    warm = run_tflint("check", project, "--output-format", "json", env=env)
    assert json.loads(warm.stdout) == json.loads(first.stdout)
    # data.py stops returning a dataset; train.py's bytes do not change, its finding must go
    data = project / "pkg" / "data.py"
    data.write_text(data.read_text().replace("return ds.batch(32)", "return list(ds)"))
    after = run_tflint("check", project, "--output-format", "json", env=env)
    rows = {(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(after.stdout)}
    assert ("train.py", 14, "TFL118") not in rows


def test_fix_uses_the_facts_of_other_modules(project):
    p = run_tflint("check", project, "--fix", "--select", "TFL101")
    no_traceback(p)
    assert "augment(ds):\n    return ds.map(lambda x: tf.strings.as_string(x * 2), num_parallel_calls=" in (project / "pkg" / "data.py").read_text()
    again = run_tflint("check", project, "--select", "TFL101")
    assert again.returncode == 0, again.stdout


def test_resolution_prefers_the_importers_own_folder_and_gives_up_when_absent(tmp_path):
    a, b = tmp_path / "a" / "data.py", tmp_path / "b" / "data.py"
    facts = ProjectFacts.build({
        str(a): {"defs": ["make"], "functions": {"make": {"dataset": {"kind": "records", "methods": ["batch"]}}}},
        str(b): {"defs": ["make"], "functions": {}},
        str(tmp_path / "a" / "train.py"): {"defs": []},
        str(tmp_path / "c" / "train.py"): {"defs": []},
    })
    assert facts.resolve(str(tmp_path / "a" / "train.py"), "data.make") == (str(a), "make")
    assert facts.answer(str(tmp_path / "a" / "train.py"), "d:data.make")["methods"] == ["batch"]
    assert facts.answer(str(tmp_path / "b" / "train.py"), "d:data.make") is None  # b's make returns no dataset
    assert facts.resolve(str(tmp_path / "c" / "train.py"), "data.make") is None  # no data.py above c/


def test_a_cycle_of_re_exports_resolves_to_nothing(tmp_path):
    x, y = tmp_path / "x" / "__init__.py", tmp_path / "y" / "__init__.py"
    facts = ProjectFacts.build({
        str(x): {"defs": [], "imports": {"f": "y.f"}},
        str(y): {"defs": [], "imports": {"f": "x.f"}},
        str(tmp_path / "main.py"): {"defs": []},
    })
    assert facts.resolve(str(tmp_path / "main.py"), "x.f") is None


def test_a_keras_model_class_of_another_module_is_a_model(project):
    found = _findings([project])
    assert ("serve.py", 9, "TFL301") in found  # `Net` subclasses keras.Model in pkg/net.py
    assert not any(name == "serve.py" and row == 10 for name, row, _ in found)  # `Block` is a layer
    assert ("serve.py", 9, "TFL301") not in _findings([project / "serve.py"])


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


_PRODUCER = """import tensorflow as tf


def load_dataset(files):
    ds = tf.data.TFRecordDataset(files).map(tf.io.decode_jpeg, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.shuffle(100).batch(32)
"""
_LOOP = """import tensorflow as tf
from data import load_dataset


def main(model, optimizer):
    train_data = load_dataset(["a"]){steps}
    for epoch in range(3):
        for step, x in enumerate(train_data):
            with tf.GradientTape() as tape:
                loss = model(x)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


@pytest.mark.parametrize("steps, reported", [
    ("", True),  # trained on as returned: the producer's last step is where the prefetch goes
    (".prefetch(2)", False),  # the consumer prefetches it itself
    (".take(5)", False),  # a step added by the consumer: the producer's end is not the pipeline's end
])
def test_a_dataset_another_module_trains_on_is_consumed(tmp_path, steps, reported):
    root = _write(tmp_path, {"requirements.txt": "tensorflow==2.4.*\n", "data.py": _PRODUCER,
                             "train.py": _LOOP.format(steps=steps)})
    found = _findings([root])
    assert (("data.py", 6, "TFL102") in found) is reported
    run, _ = check_paths([str(root / "data.py")], default_settings())
    assert not any(f.code == "TFL102" for f in run.findings)  # alone, data.py knows nothing of its consumers


_TUPLE_PRODUCER = """import tensorflow as tf


def get_dataset(files):
    images = tf.data.Dataset.from_tensor_slices(files).map(tf.io.read_file)
    return images, len(files)


def generate_datasets():
    train_ds, n_train = get_dataset(["a", "b"])
    valid_ds, n_valid = get_dataset(["c"])
    train_ds = train_ds.shuffle(n_train).batch(8)
    valid_ds = valid_ds.batch(8)
    return train_ds, valid_ds, n_train, n_valid
"""
_TUPLE_LOOP = """import tensorflow as tf
from data import generate_datasets


def main(model, optimizer, train_step, valid_step):
    train_ds, valid_ds, n_train, n_valid = generate_datasets()
    for epoch in range(10):
        for x in train_ds:
            train_step(x)
        for x in valid_ds:
            valid_step(x)
"""


def test_an_item_of_a_returned_tuple_another_module_trains_on(tmp_path):
    """calmisential/TensorFlow2.0_ResNet (round 19): `generate_datasets()` returns `train, valid, test, counts`;
    train.py unpacks it and runs its training step over the first item. The training item is consumed; the
    validation pass over the second (no training step in its loop) is not claimed."""
    root = _write(tmp_path, {"requirements.txt": "tensorflow==2.4.*\n", "data.py": _TUPLE_PRODUCER,
                             "train.py": _TUPLE_LOOP})
    found = _findings([root])
    assert ("data.py", 12, "TFL102") in found
    assert ("data.py", 13, "TFL102") not in found
    run, _ = check_paths([str(root / "data.py")], default_settings())
    assert not any(f.code == "TFL102" for f in run.findings)


def test_training_in_another_module_is_named_in_the_message(tmp_path):
    root = _write(tmp_path, {"requirements.txt": "tensorflow==2.4.*\n", "data.py": _PRODUCER,
                             "train.py": _LOOP.format(steps="")})
    run, _ = check_paths([str(root)], default_settings())
    (f,) = [f for f in run.findings if f.code == "TFL102"]
    assert "training in train.py" in f.message


def test_tensorflow_reached_through_a_project_module_is_resolved(tmp_path):
    """A compatibility shim that star-imports Keras on both branches of a version switch (TensorFlow Probability's
    `internal/tf_keras.py`), and a backend module that binds `keras` (bert4keras' `backend.py`): a file that reaches
    Keras through them gets the same findings as one that imports Keras itself. Alone, or through a module whose
    names are not all Keras, it stays silent."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("tensorflow==2.12.*\n")  # Keras 2.12: `lr=` is ignored
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "shim.py").write_text("try:\n    from tf_keras import *\nexcept ImportError:\n"
                                 "    from tensorflow.compat.v2.keras import *\n")
    (pkg / "backend.py").write_text("import tensorflow as tf\nkeras = tf.keras\n")
    (pkg / "mixed.py").write_text("import numpy as np\nif np.__version__ < '2':\n    from numpy import *\n"
                                  "else:\n    from tensorflow.keras import *\nkeras = np\n")
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\nfrom pkg import shim\nfrom pkg.backend import keras\nfrom pkg import mixed\n\n"
        "a = shim.optimizers.Adam(lr=0.01)\nb = keras.optimizers.Adam(lr=0.02)\nc = mixed.optimizers.Adam(lr=0.03)\n"
        "d = mixed.keras.optimizers.Adam(lr=0.04)\n")
    found = {(name, row, code) for name, row, code in _findings([tmp_path]) if code == "TFL302"}
    assert found == {("train.py", 6, "TFL302"), ("train.py", 7, "TFL302")}
    assert not any(code == "TFL302" for _, _, code in _findings([tmp_path / "train.py"]))


def test_a_model_built_by_another_module_is_a_model(tmp_path):
    """bubbliiiing/unet-tf2: `unet.py` has no TensorFlow in its text; it builds `self.model = unet(...)` with the
    builder of `nets/unet.py` (written with `from tensorflow.keras.models import *`) and predicts per frame. In the
    project's pass it is analysed after all, and the model is known; alone, it is not."""
    (tmp_path / ".git").mkdir()
    nets = tmp_path / "nets"
    nets.mkdir()
    (nets / "__init__.py").write_text("")
    (nets / "unet.py").write_text(
        "from tensorflow.keras.layers import *\nfrom tensorflow.keras.models import *\n\n\n"
        "def Unet(input_shape=(64, 64, 3), num_classes=2):\n    inputs = Input(input_shape)\n"
        "    out = Conv2D(num_classes, 1)(inputs)\n    model = Model(inputs=inputs, outputs=out)\n    return model\n\n\n"
        "def helper(x):\n    return x\n")
    (tmp_path / "unet.py").write_text(
        "import time\nimport numpy as np\nfrom nets.unet import Unet as unet\nfrom nets.unet import helper\n\n\n"
        "class Segmenter:\n    def __init__(self):\n        self.model = unet()\n        self.other = helper(1)\n\n"
        "    def fps(self, image, n):\n        t1 = time.time()\n        for _ in range(n):\n"
        "            pr = self.model.predict(image)[0]\n"
        "            qr = self.other.predict(image)\n        return pr, qr, n / (time.time() - t1)\n")
    found = {(name, row, code) for name, row, code in _findings([tmp_path]) if code == "TFL301"}
    assert found == {("unet.py", 15, "TFL301")}
    assert not any(code == "TFL301" for _, _, code in _findings([tmp_path / "unet.py"]))


_ROUTINES = '''import tensorflow as tf


def train(strategy: tf.distribute.Strategy, train_step, dataset, epochs=10):
    for _ in range(epochs):
        train_loop(train_step, dataset, strategy)


def train_loop(train_step, dataset, strategy):
    step = wrap_step_into_strategy(train_step, strategy)
    for batch in dataset:
        step(batch)


def wrap_step_into_strategy(step, strategy: tf.distribute.Strategy):
    def one_device(batch):
        return strategy.run(step, args=batch)

    return one_device
'''


@pytest.mark.parametrize("decorate,reported", [("", True), ("@tf.function\n    ", False)])
def test_a_step_another_module_passes_to_a_strategy_run_wrapper(tmp_path, decorate, reported):
    """ScalaConsultants/Aspect-Based-Sentiment-Analysis (#23's real example for TFL506): `routines.train(strategy,
    train_step, ...)` wraps the step it is given in a closure that calls `strategy.run(step, args=batch)` and calls
    that closure once per batch; `classifier.py` passes a plain tape step, so every replica's step runs eagerly. A
    caller that passes a `tf.function` makes it a graph step: silent. Alone, `routines.py` cannot know the step."""
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "absa"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "routines.py").write_text(_ROUTINES)
    (pkg / "classifier.py").write_text(
        "import tensorflow as tf\nfrom . import routines\n\n\n"
        "def train_classifier(model, optimizer, dataset, strategy=tf.distribute.OneDeviceStrategy('CPU')):\n"
        "    with strategy.scope():\n"
        f"        {decorate}def train_step(x, y):\n"
        "            with tf.GradientTape() as tape:\n"
        "                loss = tf.reduce_mean(tf.square(model(x) - y))\n"
        "            grads = tape.gradient(loss, model.trainable_variables)\n"
        "            optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
        "            return loss\n\n"
        "    routines.train(strategy=strategy, train_step=train_step, dataset=dataset)\n".replace(
            "        @tf.function\n    def", "        @tf.function\n        def"))
    found = {(name, row) for name, row, code in _findings([tmp_path]) if code == "TFL506"}
    assert found == ({("routines.py", 17)} if reported else set())
    assert not any(code == "TFL506" for _, _, code in _findings([pkg / "routines.py"]))


def test_a_layer_in_a_helper_another_module_calls_from_graph_code_is_not_claimed(tmp_path):
    """tensorflow/tensorrt: `preprocessing.swin_transformer_preprocess` builds a `Normalization` layer and is called
    from a dataset map function in `dataloading.py`; tf.data traces that function once. Whether another module's
    graph code is a tf.data function or a tf.function is not known in the helper's module: a layer there is not
    reported; a `tf.Variable` is, as either kind of trace refuses or repeats it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "preprocessing.py").write_text(
        "import tensorflow as tf\n\n\n"
        "def normalize(image):\n"
        "    norm = tf.keras.layers.Normalization(mean=[0.5], variance=[0.25])\n"
        "    return norm(image)\n\n\n"
        "def counted(image):\n"
        "    count = tf.Variable(0)\n"
        "    return image, count\n")
    (tmp_path / "dataloading.py").write_text(
        "import tensorflow as tf\nimport preprocessing\n\n\n"
        "def parse(record):\n"
        "    image = tf.io.decode_jpeg(record)\n"
        "    return preprocessing.counted(preprocessing.normalize(image))\n\n\n"
        "ds = tf.data.TFRecordDataset(['a.tfrecord']).map(parse, num_parallel_calls=4)\n")
    found = {(name, row) for name, row, code in _findings([tmp_path]) if code == "TFL206"}
    assert found == {("preprocessing.py", 10)}


_IDENTITY_WRAP = '''\
import tensorflow as tf


def wrap(dataset):
    """Add attributes a strategy needs and hand the same dataset back."""
    if not hasattr(dataset, "make_one_shot_iterator"):
        dataset.make_one_shot_iterator = lambda: iter(dataset)
    return dataset


def tag(value):
    return value
'''

_IDENTITY_TRAINER = '''\
import tensorflow as tf

from loaders import tag, wrap


class Trainer:
    def __call__(self, dataset):
        """Train.

        Args:
            dataset (:py:obj:`tf.data.Dataset`): the training dataset.
        """
        dataset = wrap(dataset.unbatch().batch(32, drop_remainder=True))
        for example in self._strategy.experimental_distribute_dataset(dataset):
            self._train_step(example)

    def other(self, frame):
        rows = tag(frame.unbatch().batch(32))
        for row in self._strategy.experimental_distribute_dataset(rows):
            self._train_step(row)
'''


def test_a_function_that_returns_its_argument_keeps_the_dataset(tmp_path):
    """zurutech/ashpy (round 24): the trainers rebatch the user's dataset (a parameter its docstring declares a
    `tf.data.Dataset`) and pass it through `wrap`, which returns its argument; the pipeline is the same object, and
    its missing prefetch is reported where the chain ends. The same identity over a value of unknown origin (a
    parameter nothing declares) proves nothing."""
    root = _write(tmp_path, {"requirements.txt": "tensorflow==2.1.0\n", "loaders.py": _IDENTITY_WRAP,
                             "trainer.py": _IDENTITY_TRAINER})
    found = _findings([root])
    assert ("trainer.py", 13, "TFL102") in found
    assert not any(row == 19 for _, row, _ in found)
    run, _ = check_paths([str(root / "trainer.py")], default_settings())
    assert not any(f.code == "TFL102" for f in run.findings)  # alone, `wrap` is another module's unknown function
