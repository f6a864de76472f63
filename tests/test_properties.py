"""Property-based tests: on generated Python programs (hypothesmith) and generated TensorFlow-shaped programs (a
strategy of our own composing datasets, tf.functions and Keras calls), `check` never raises, every fix keeps the
program parseable and compiling, keeps comments and line endings, and fixes are idempotent.

The default volume keeps the run short; set TFLINT_PROPERTY_EXAMPLES (e.g. 2000) for a bigger run:

    TFLINT_PROPERTY_EXAMPLES=2000 .venv/bin/python -m pytest -q tests/test_properties.py
"""
from __future__ import annotations

import io
import os
import tokenize
import warnings

import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tflint.api import default_settings
from tflint.engine import check_text, fix_text

EXAMPLES = int(os.environ.get("TFLINT_PROPERTY_EXAMPLES", "0"))
settings.register_profile(
    "tflint", deadline=None, derandomize=not EXAMPLES, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
settings.load_profile("tflint")

ALL = default_settings(select=["ALL"], unsafe_fixes=True, prefilter=False)
ALL_PREFILTER = default_settings(select=["ALL"], unsafe_fixes=True)


def _compile(text: str) -> None:
    with warnings.catch_warnings():  # generated code may trip SyntaxWarnings; they are not what is tested
        warnings.simplefilter("ignore")
        compile(text, "gen.py", "exec", dont_inherit=True)


def _comments(text: str) -> list[str]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and "noqa" not in tok.string and "tflint" not in tok.string:
                out.append(tok.string.rstrip())
    except (tokenize.TokenError, SyntaxError):
        pass
    return sorted(out)


def check_properties(text: str, settings_=ALL, must_compile: bool = True) -> int:
    """The invariants; returns the number of fixes applied."""
    res = check_text(text, "gen.py", settings_)
    assert res.errors == [], res.errors[0]
    for f in res.findings:
        assert f.location.row >= 1 and f.location.column >= 1
        assert (f.location.row, f.location.column) <= (f.end_location.row, f.end_location.column) or f.code == "TFL001"
    if any(f.code == "TFL001" for f in res.findings):
        return 0
    fixed = fix_text(text, "gen.py", settings_)
    assert fixed.errors == [], fixed.errors[0]
    assert not any("did not converge" in m for m in fixed.messages), fixed.messages
    if fixed.text != text:
        cst.parse_module(fixed.text)  # still parseable by libcst
        if must_compile:
            _compile(fixed.text)
        again = fix_text(fixed.text, "gen.py", settings_)
        assert again.text == fixed.text, "a second fix pass changed the text again"
        assert again.applied == 0
        # comments survive (suppression comments excepted: TFL002 removes the unused ones)
        before, after = _comments(text), _comments(fixed.text)
        assert all(c in after for c in before), (set(before) - set(after))
        # line endings survive: a CRLF file gets no bare LF
        if "\r\n" in text and "\n" not in text.replace("\r\n", ""):
            assert "\n" not in fixed.text.replace("\r\n", "")
    return fixed.applied


# -- generated Python (hypothesmith) ----------------------------------------------------------------------
try:
    import hypothesmith
except ImportError:  # pragma: no cover
    hypothesmith = None


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith not installed")
@settings(max_examples=EXAMPLES or 6)
@given(st.data())
def test_hypothesmith_grammar_programs(data):
    source = data.draw(hypothesmith.from_grammar())
    try:
        _compile(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        assume(False)
    check_properties("import tensorflow as tf\n" + source)
    check_properties(source, ALL_PREFILTER)


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith not installed")
@settings(max_examples=EXAMPLES or 10)
@given(st.data())
def test_hypothesmith_node_programs(data):
    source = data.draw(hypothesmith.from_node())
    try:
        _compile(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        assume(False)
    check_properties("import tensorflow as tf\n" + source)


@settings(max_examples=EXAMPLES or 40)
@given(st.text(alphabet=st.sampled_from(list("()[]{}:.,=+-*#'\"\\\n\r\t abcdeftx0123456789%!?@;")), max_size=200))
def test_arbitrary_text_never_raises(text):
    res = check_text("import tensorflow as tf\n" + text, "gen.py", ALL)
    assert res.errors == []
    fixed = fix_text("import tensorflow as tf\n" + text, "gen.py", ALL)
    assert fixed.errors == []


# -- generated TensorFlow-shaped programs ------------------------------------------------------------------
IMPORTS = [
    "import tensorflow as tf",
    "import tensorflow as tf\nimport keras",
    "import tensorflow as tf\nfrom tensorflow import keras",
    "import tensorflow as tf\nimport tensorflow_datasets as tfds",
    "import tensorflow as tf\nfrom tensorflow import data as tfd\nAUTOTUNE = tf.data.AUTOTUNE",
]
SOURCES = [
    "tf.data.Dataset.range(100)",
    "tf.data.TFRecordDataset(files)",
    "tf.data.Dataset.from_tensor_slices((features, labels))",
    "tf.data.Dataset.list_files('*.tfrecord').interleave(tf.data.TFRecordDataset)",
    "tf.data.Dataset.from_generator(gen, output_signature=sig)",
    "tf.data.TextLineDataset(['a.txt'])",
    "tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(3)))",
    "tf.compat.v1.data.TFRecordDataset(files)",
    "tf.data.experimental.make_csv_dataset('a.csv', 32)",
]
STEPS = [
    "map(parse)", "map(lambda x: tf.strings.as_string(x * 2))", "map(lambda x: tf.cast(x, tf.float32) / 255.0)",
    "map(parse, num_parallel_calls=tf.data.AUTOTUNE)", "map(lambda x: tf.py_function(f, [x], tf.float32))",
    "map(tf.io.parse_single_example)", "map(lambda x: tf.image.random_flip_left_right(x))",
    "batch(32)", "batch(32, drop_remainder=True)", "shuffle(1000)", "prefetch(1)", "prefetch(tf.data.AUTOTUNE)",
    "cache()", "repeat()", "take(10)", "filter(lambda x: True)", "unbatch()", "shard(2, 0)",
    "interleave(tf.data.TFRecordDataset)", "apply(tf.data.experimental.ignore_errors())",
    "with_options(options)", "flat_map(lambda x: tf.data.Dataset.from_tensors(x))",
    "padded_batch(4)",
]
CONSUMERS = [
    "for x in ds:\n    train_step(x)",
    "model.fit(ds, epochs=1)",
    "it = iter(ds)",
    "model.evaluate(ds)",
    "dist = strategy.experimental_distribute_dataset(ds)",
    "",
]
FN_BODIES = [
    "tf.print(x)", "print(x)", "x = x + 1", "for i in range(10):\n    x += i", "for i in tf.range(10):\n    x += i",
    "if x > 0:\n    x = -x", "y = x.numpy()", "v = tf.Variable(1.0)",
    "y = tf.cast(tf.cast(x, tf.float32), tf.float32)", "y = tf.math.log(1 + x)", "y = tf.exp(x) - 1",
    "acc = tf.zeros([0])\nfor i in range(3):\n    acc = tf.concat([acc, x], 0)", "x = float(x)",
    "tf.config.run_functions_eagerly(True)", "z = tf.reduce_mean(x) + tf.reduce_mean(x)",
    "with tf.GradientTape() as tape:\n    loss = tf.reduce_sum(x)", "x = tf.numpy_function(f, [x], tf.float32)",
]
KERAS = [
    "model = keras.Sequential([keras.layers.Dense(1)])",
    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])",
    "model.compile('adam', 'mse')",
    "for b in ds:\n    model.predict(b)",
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')",
    "opt = tf.keras.optimizers.Adam()",
    "strategy = tf.distribute.MirroredStrategy()",
    "with strategy.scope():\n    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])",
]
COMMENTS = ["", "  # a comment", "  # noqa: TFL101", "  # noqa", "  # tflint: not a directive"]


def _indent(block: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + ln if ln else ln for ln in block.split("\n"))


@st.composite
def tf_programs(draw) -> str:
    parts = [draw(st.sampled_from(IMPORTS)), "", "def parse(x):\n    return tf.strings.as_string(x)", ""]
    n_pipelines = draw(st.integers(1, 3))
    for k in range(n_pipelines):
        src = draw(st.sampled_from(SOURCES))
        steps = draw(st.lists(st.sampled_from(STEPS), max_size=6))
        style = draw(st.sampled_from(["chain", "reassign", "paren", "function"]))
        comment = draw(st.sampled_from(COMMENTS))
        if style == "chain":
            block = f"ds = {src}" + "".join(f".{s}" for s in steps) + comment
        elif style == "reassign":
            block = "\n".join([f"ds = {src}{comment}", *[f"ds = ds.{s}" for s in steps]])
        elif style == "paren":
            block = "ds = (\n    " + src + "".join(f"\n    .{s}" for s in steps) + comment + "\n)"
        else:
            deco = draw(st.sampled_from(["", "@tf.function\n"]))
            body = "\n".join([f"ds = {src}", *[f"ds = ds.{s}" for s in steps], "return ds"])
            block = f"{deco}def make_{k}(files):\n{_indent(body)}\n\n\nds = make_{k}(files)"
        if draw(st.booleans()):
            block = draw(st.sampled_from(["# tflint: ignore[TFL101]\n", "# tflint: ignore[TFL102, TFL103]\n"])) + block
        parts += [block, draw(st.sampled_from(CONSUMERS)), ""]
    for _ in range(draw(st.integers(0, 2))):
        body = "\n".join(draw(st.lists(st.sampled_from(FN_BODIES), min_size=1, max_size=4))) + "\nreturn x"
        deco = draw(st.sampled_from(["@tf.function\n", "@tf.function(jit_compile=True)\n", ""]))
        name = f"step_{len(parts)}"
        parts += [f"{deco}def {name}(x):\n{_indent(body)}", ""]
        if draw(st.booleans()):
            parts += [f"{name}_c = tf.function({name})", f"for i in range(3):\n    {name}(i)", ""]
    parts += draw(st.lists(st.sampled_from(KERAS), max_size=3))
    text = "\n".join(parts) + "\n"
    if draw(st.booleans()):
        text = text.replace("    ", "\t")
    ending = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return text.replace("\n", ending)


@settings(max_examples=EXAMPLES or 40)
@given(tf_programs())
def test_tf_shaped_programs(text):
    _compile(text)  # the generator writes valid Python
    check_properties(text)


@settings(max_examples=EXAMPLES or 8)
@given(tf_programs(), st.sampled_from(["2.3", "2.10", "2.15", "2.21"]))
def test_tf_shaped_programs_other_targets(text, version):
    from tflint.config import Config, parse_version
    from tflint.engine import Settings
    from tflint.registry import default_registry

    cfg = Config()
    cfg.target_version = parse_version(version, "test")
    check_properties(text, Settings.create(default_registry(), cfg, select=["ALL"], unsafe_fixes=True))


def test_strategy_produces_findings_and_fixes():
    """The TF strategy is not vacuous: over a fixed sample, rules fire and fixes apply."""
    from hypothesis import find

    text = find(tf_programs(), lambda t: ".map(parse)" in t and "for x in ds" in t and "\r" not in t)
    res = check_text(text, "gen.py", ALL)
    assert res.findings
    assert check_properties(text) >= 1
