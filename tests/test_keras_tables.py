"""The deprecated/removed-API tables of the Keras, mixed-precision and distribution rules (their `pattern:` data)
checked against the installed TensorFlow and Keras, as tf_upgrade_v2 records its renames: every replacement
must exist, and every old name's status (still present, only under `tf.compat.v1`, or gone) is written down here
so that a TensorFlow upgrade that changes it fails loudly. Skipped cleanly when TensorFlow is not installed."""
from __future__ import annotations

import inspect
import os

import pytest

from tflint.registry import default_registry

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

TABLE_RULES = ("TFL302", "TFL403", "TFL404", "TFL504")
# Which class each rule's `method:` entries live on.
METHOD_OWNERS = {
    "TFL302": "keras.Model",
    "TFL403": "keras.mixed_precision.LossScaleOptimizer",
    "TFL504": "tensorflow.distribute.Strategy",
}
# Status of every old name in the tables on the installed TF 2.21 / Keras 3:
# "removed" (gone), "compat.v1" (only as tf.compat.v1.<same path>), "present" (still there, deprecated).
OLD_STATUS = {
    # TFL302 removed-keras-api
    "keras.Model.fit_generator": "removed",
    "keras.Model.evaluate_generator": "removed",
    "keras.Model.predict_generator": "removed",
    "keras.Model.predict_classes": "removed",
    "keras.layers.experimental.preprocessing.Normalization": "removed",
    "keras.layers.experimental.preprocessing.Rescaling": "removed",
    "keras.layers.experimental.preprocessing.Resizing": "removed",
    "keras.layers.experimental.preprocessing.CenterCrop": "removed",
    "keras.layers.experimental.preprocessing.RandomFlip": "removed",
    "keras.layers.experimental.preprocessing.RandomRotation": "removed",
    "keras.layers.experimental.preprocessing.RandomZoom": "removed",
    "keras.layers.experimental.preprocessing.RandomCrop": "removed",
    "keras.layers.experimental.preprocessing.RandomTranslation": "removed",
    "keras.layers.experimental.preprocessing.RandomContrast": "removed",
    "keras.layers.experimental.preprocessing.TextVectorization": "removed",
    "keras.layers.experimental.preprocessing.StringLookup": "removed",
    "keras.layers.experimental.preprocessing.IntegerLookup": "removed",
    "keras.layers.experimental.preprocessing.CategoryEncoding": "removed",
    "keras.layers.experimental.preprocessing.Discretization": "removed",
    "keras.layers.experimental.preprocessing.Hashing": "removed",
    "keras.optimizers.experimental.Adam": "removed",
    "keras.optimizers.experimental.AdamW": "removed",
    "keras.optimizers.experimental.SGD": "removed",
    "keras.optimizers.experimental.RMSprop": "removed",
    "keras.optimizers.experimental.Adagrad": "removed",
    # the names still import, but instantiating them raises ImportError in Keras 3 (checked below)
    "keras.optimizers.legacy.Adam": "present",
    "keras.optimizers.legacy.SGD": "present",
    "keras.optimizers.legacy.RMSprop": "present",
    "keras.optimizers.legacy.Adagrad": "present",
    "keras.layers.CuDNNLSTM": "removed",
    "keras.layers.CuDNNGRU": "removed",
    "keras.utils.multi_gpu_model": "removed",
    "keras.backend.get_session": "removed",
    "keras.backend.set_session": "removed",
    "keras.preprocessing.image.ImageDataGenerator": "removed",
    "keras.losses.Reduction": "removed",
    "keras.preprocessing.text.Tokenizer": "removed",
    "keras.preprocessing.text.text_to_word_sequence": "removed",
    "keras.preprocessing.text.one_hot": "removed",
    "keras.preprocessing.text.hashing_trick": "removed",
    "keras.preprocessing.text.tokenizer_from_json": "removed",
    "keras.experimental.CosineDecay": "removed",
    "keras.experimental.CosineDecayRestarts": "removed",
    "keras.experimental.LinearModel": "removed",
    "keras.experimental.WideDeepModel": "removed",
    "keras.experimental.SequenceFeatures": "removed",
    "keras.wrappers.scikit_learn.KerasClassifier": "removed",
    "keras.wrappers.scikit_learn.KerasRegressor": "removed",
    # TFL403 removed-loss-scale-api
    "keras.mixed_precision.LossScaleOptimizer.get_scaled_loss": "removed",
    # TFL404 deprecated-mixed-precision-api
    "keras.mixed_precision.experimental.set_policy": "removed",
    "keras.mixed_precision.experimental.Policy": "removed",
    "keras.mixed_precision.experimental.global_policy": "removed",
    "keras.mixed_precision.experimental.LossScaleOptimizer": "removed",
    "tensorflow.train.experimental.enable_mixed_precision_graph_rewrite": "compat.v1",
    "tensorflow.compat.v1.train.experimental.enable_mixed_precision_graph_rewrite": "present",
    "tensorflow.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite": "present",
    "tensorflow.train.experimental.disable_mixed_precision_graph_rewrite": "compat.v1",
    "tensorflow.train.experimental.LossScale": "compat.v1",
    "tensorflow.train.experimental.DynamicLossScale": "compat.v1",
    "tensorflow.train.experimental.FixedLossScale": "compat.v1",
    "tensorflow.mixed_precision.experimental.LossScale": "compat.v1",
    "tensorflow.mixed_precision.experimental.DynamicLossScale": "compat.v1",
    "tensorflow.mixed_precision.experimental.FixedLossScale": "compat.v1",
    # TFL504 deprecated-distribute-api
    "tensorflow.distribute.Strategy.experimental_run_v2": "removed",
    "tensorflow.distribute.Strategy.experimental_distribute_datasets_from_function": "present",
    "tensorflow.distribute.Strategy.experimental_make_numpy_dataset": "compat.v1",
    "tensorflow.distribute.experimental.TPUStrategy": "present",
    "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy": "present",
    "tensorflow.distribute.experimental.CollectiveCommunication": "present",
}


def resolve(qualified: str):
    """The installed object for a canonical qualified name (`keras.X` is Keras 3, which `tf.keras` is), or None."""
    root, _, rest = qualified.partition(".")
    obj = {"keras": keras, "tensorflow": tf}[root]
    for part in rest.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # noqa: BLE001  (AttributeError, or a lazy module that fails to import)
            return None
    return obj


def status(qualified: str) -> str:
    if resolve(qualified) is not None:
        return "present"
    if qualified.startswith("tensorflow.") and not qualified.startswith("tensorflow.compat.v1."):
        if resolve("tensorflow.compat.v1." + qualified[len("tensorflow."):]) is not None:
            return "compat.v1"
    return "removed"


def _names(v):
    return list(v) if isinstance(v, list) else [v]


def table_entries():
    reg = default_registry()
    out = []
    for code in TABLE_RULES:
        meta = reg.get(code)
        assert meta is not None and meta.pattern, f"{code} has no pattern table"
        for i, e in enumerate(meta.pattern):
            out.append(pytest.param(code, e, id=f"{code}[{i}]"))
    return out


@pytest.mark.parametrize("code,entry", table_entries())
def test_table_entry(code, entry):
    if "symbol" in entry:
        for old in _names(entry["symbol"]):
            assert old in OLD_STATUS, f"record the status of {old} in OLD_STATUS (now: {status(old)})"
            assert status(old) == OLD_STATUS[old], f"{old}: recorded {OLD_STATUS[old]}, installed {status(old)}"
        if "replace-with" in entry:
            assert resolve(entry["replace-with"]) is not None, f"replacement {entry['replace-with']} does not exist"
    elif "method" in entry:
        owner = METHOD_OWNERS[code]
        cls = resolve(owner)
        assert cls is not None, owner
        for m in _names(entry["method"]):
            if "keyword" in entry:
                # the method stays; the keyword is what Keras 3 removed
                params = inspect.signature(getattr(cls, m)).parameters
                assert entry["keyword"] not in params, f"{owner}.{m} still takes `{entry['keyword']}`"
                continue
            q = f"{owner}.{m}"
            assert q in OLD_STATUS, f"record the status of {q} in OLD_STATUS (now: {status(q)})"
            assert status(q) == OLD_STATUS[q], f"{q}: recorded {OLD_STATUS[q]}, installed {status(q)}"
        if "rename-method" in entry:
            assert hasattr(cls, entry["rename-method"]), f"{owner}.{entry['rename-method']} does not exist"
    elif "call" in entry:
        for q in _names(entry["call"]):
            fn = resolve(q)
            assert fn is not None, q
            if "rename-keyword" in entry:
                fn(**{entry["rename-keyword"]: 0.1})  # the new keyword is accepted
                with pytest.raises((TypeError, ValueError)):
                    fn(**{entry["keyword"]: 0.1})  # the old one is not, on Keras 3
    else:
        pytest.fail(f"{code}: unexpected entry {entry}")


def test_legacy_optimizers_fail_on_keras3():
    with pytest.raises(ImportError):
        keras.optimizers.legacy.Adam()


def test_scale_loss_replaces_get_scaled_loss():
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())
    assert hasattr(opt, "scale_loss") and not hasattr(opt, "get_unscaled_gradients")


def test_every_recorded_name_is_in_a_table():
    named = set()
    for p in table_entries():
        code, e = p.values
        named.update(_names(e.get("symbol", [])))
        if "method" in e and "keyword" not in e:
            named.update(f"{METHOD_OWNERS[code]}.{m}" for m in _names(e["method"]))
    assert sorted(set(OLD_STATUS) - named) == []
