"""[tool.tflint] from the nearest pyproject.toml, --config FILE, per-file-ignores, target-version, and errors that
name the unknown key, code, name or option (exit 2). Configuration can never run code."""
from __future__ import annotations

import json

import pytest

from test_cli import TF_MAP, codes_of, no_traceback, run_tflint
from tflint.config import Config, ConfigError, find_pyproject
from tflint.registry import default_registry

SRC = TF_MAP + "for x in ds:\n    train_step(x)\n"


def test_nearest_pyproject_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL102"]\n')
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\n')
    (sub / "a.py").write_text(SRC)
    p = run_tflint("check", "--output-format", "json", "pkg/a.py", cwd=tmp_path)
    assert codes_of(p) == ["TFL101"]
    # a pyproject.toml without [tool.tflint] is skipped on the way up
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\n')
    p = run_tflint("check", "--output-format", "json", "pkg/a.py", cwd=tmp_path)
    assert codes_of(p) == ["TFL102"]
    assert find_pyproject(sub) == tmp_path / "pyproject.toml"


def test_config_file_option(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL102"]\n')
    (tmp_path / "tflint.toml").write_text('select = ["TFL101"]\n')
    (tmp_path / "a.py").write_text(SRC)
    p = run_tflint("check", "--config", "tflint.toml", "--output-format", "json", "a.py", cwd=tmp_path)
    assert codes_of(p) == ["TFL101"]
    p = run_tflint("check", "--config", "missing.toml", "a.py", cwd=tmp_path)
    assert p.returncode == 2 and "missing.toml" in p.stderr


def test_ignore_and_extend_select_from_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tflint]\nselect = ["TFL1"]\nignore = ["dataset-without-prefetch"]\nextend-select = ["TFL002"]\n'
    )
    (tmp_path / "a.py").write_text(SRC + "y = 1  # noqa: TFL103\n")
    p = run_tflint("check", "--output-format", "json", "a.py", cwd=tmp_path)
    assert sorted(codes_of(p)) == ["TFL002", "TFL101"]


def test_per_file_ignores(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tflint]\nselect = ["TFL101", "TFL102"]\n'
        '[tool.tflint.per-file-ignores]\n"tests/*" = ["TFL1"]\n"scripts/run.py" = ["map-without-parallel-calls"]\n'
        '"legacy_*.py" = ["TFL102"]\n'
    )
    for rel in ["tests/t.py", "scripts/run.py", "deep/legacy_a.py", "main.py"]:
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(SRC)
    p = run_tflint("check", "--output-format", "json", ".", cwd=tmp_path)
    no_traceback(p)
    got = sorted((f["filename"], f["code"]) for f in json.loads(p.stdout))
    assert got == [
        ("deep/legacy_a.py", "TFL101"),
        ("main.py", "TFL101"), ("main.py", "TFL102"),
        ("scripts/run.py", "TFL102"),
    ]


def test_exclude_replaces_defaults_and_extend_exclude_adds(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\nextend-exclude = ["gen/"]\n')
    for rel in ["gen/a.py", "build/b.py", "src/c.py"]:
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(SRC)
    p = run_tflint("check", "--output-format", "json", ".", cwd=tmp_path)
    assert sorted(f["filename"] for f in json.loads(p.stdout)) == ["src/c.py"]  # build/ is a default exclude
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\nexclude = ["gen"]\n')
    p = run_tflint("check", "--output-format", "json", ".", cwd=tmp_path)
    assert sorted(f["filename"] for f in json.loads(p.stdout)) == ["build/b.py", "src/c.py"]


@pytest.mark.parametrize(
    "version, spelling",
    [("2.3", "tf.data.experimental.AUTOTUNE"), ("2.4", "tf.data.AUTOTUNE"), ("2.21", "tf.data.AUTOTUNE")],
)
def test_target_version_changes_autotune_spelling(tmp_path, version, spelling):
    (tmp_path / "pyproject.toml").write_text(f'[tool.tflint]\nselect = ["TFL101"]\ntarget-version = "{version}"\n')
    # a stateful map: a finding on every target (tf.data never parallelizes it by itself); its fix is unsafe
    (tmp_path / "a.py").write_text(TF_MAP.replace("tf.strings.as_string(x)", "tf.image.random_brightness(tf.cast(x, tf.float32), 0.5)"))
    p = run_tflint("check", "--unsafe-fixes", "--output-format", "json", "a.py", cwd=tmp_path)
    (f,) = json.loads(p.stdout)
    assert f["fix"]["edits"][0]["content"] == f", num_parallel_calls={spelling}"


def test_target_version_flag_overrides_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\ntarget-version = "2.21"\n')
    (tmp_path / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "--target-version", "2.2", "--output-format", "json", "a.py", cwd=tmp_path)
    assert "experimental.AUTOTUNE" in json.loads(p.stdout)[0]["fix"]["edits"][0]["content"]


def test_unsafe_fixes_and_unfixable_from_config(tmp_path):
    src = "import tensorflow as tf\nimport random\nds = tf.data.Dataset.range(3).map(lambda x: x + random.random())\n"
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\nunsafe-fixes = true\n')
    f = tmp_path / "a.py"
    f.write_text(src)
    run_tflint("check", "--fix", "a.py", cwd=tmp_path)
    assert "num_parallel_calls" in f.read_text()
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\nunfixable = ["TFL101"]\n')
    f.write_text(TF_MAP)
    p = run_tflint("check", "--fix", "a.py", cwd=tmp_path)
    assert f.read_text() == TF_MAP and p.returncode == 1


@pytest.mark.parametrize(
    "toml, needle",
    [
        ("selekt = ['TFL101']", "selekt"),
        ("select = ['TFL999']", "TFL999"),
        ("ignore = ['no-such-rule']", "no-such-rule"),
        ("extend-select = ['TFLX']", "TFLX"),
        ("[tool.tflint.per-file-ignores]\n'a.py' = ['bogus-name']", "bogus-name"),
        ("[tool.tflint.rules.not-a-rule]\nx = 1", "not-a-rule"),
        ("[tool.tflint.rules.map-without-parallel-calls]\nno_such_option = 1", "no_such_option"),
        ("target-version = 'latest'", "target-version"),
        ("select = 'TFL101'", "select"),
        ("unsafe-fixes = 'yes'", "unsafe-fixes"),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_config_exits_2_naming_it(tmp_path, toml, needle):
    (tmp_path / "pyproject.toml").write_text("[tool.tflint]\n" + toml + "\n")
    (tmp_path / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "a.py", cwd=tmp_path)
    no_traceback(p)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stderr
    assert "pyproject.toml" in p.stderr  # says where


def test_config_validate_in_process():
    reg = default_registry()
    cfg = Config.from_table({"select": ["TFL1"], "ignore": ["map-without-parallel-calls"]}, Config().root, None, "x")
    cfg.validate(reg)
    assert "TFL101" not in cfg.selected(reg) and "TFL102" in cfg.selected(reg)
    with pytest.raises(ConfigError, match="unknown key `bogus`"):
        Config.from_table({"bogus": 1}, Config().root, None, "x")


def test_config_cannot_run_code(tmp_path):
    """TOML has no code; a YAML rules-dir with Python tags is refused by the safe loader, not executed."""
    marker = tmp_path / "PWNED"
    rules = tmp_path / "myrules"
    rules.mkdir()
    (rules / "evil.yaml").write_text(
        f"code: TFL9001\nname: evil\nsummary: !!python/object/apply:os.system ['touch {marker}']\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nrules-dirs = ["myrules"]\n')
    (tmp_path / "a.py").write_text(TF_MAP)
    p = run_tflint("check", "a.py", cwd=tmp_path)
    no_traceback(p)
    assert not marker.exists()
    assert p.returncode == 2 and "evil.yaml" in p.stderr


def test_rule_yaml_loaded_with_safe_loader():
    import inspect

    import tflint.registry as registry

    src = inspect.getsource(registry._load_yaml_rule)
    assert "SafeLoader" in src and "UnsafeLoader" not in src and "FullLoader" not in src


# -- values are type-checked (issue 18, item 4) -------------------------------------------------------------
@pytest.mark.parametrize("written, hint", [("2.10", '"2.10"'), ("2.15  # pinned", '"2.15"'), ("2", '"2.0"')])
def test_an_unquoted_target_version_is_an_error_with_the_quoted_form(tmp_path, written, hint):
    # TOML reads `2.10` as the float 2.1: taken as TensorFlow 2.1 it would silently change which rules fire
    (tmp_path / "pyproject.toml").write_text(f"[tool.tflint]\ntarget-version = {written}\n")
    (tmp_path / "a.py").write_text("import tensorflow as tf\nds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))\n")
    p = run_tflint("check", "a.py", cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "target-version" in p.stderr and f"target-version = {hint}" in p.stderr, p.stderr


@pytest.mark.parametrize("toml, key", [
    ('target-version = true', "target-version"),
    ('target-version = "2.x"', "target-version"),
    ('select = "TFL101"', "select"),
    ('unsafe-fixes = "yes"', "unsafe-fixes"),
    ('per-file-ignores = ["a.py"]', "per-file-ignores"),
    ('exclude = [1]', "exclude"),
    ('[tool.tflint.rules.python-loop-unrolled]\nmin-iterations = "100"', "min-iterations"),
    ('[tool.tflint.rules.python-loop-unrolled]\nmin-iterations = 1.5', "min-iterations"),
])
def test_every_key_is_type_checked(tmp_path, toml, key):
    (tmp_path / "pyproject.toml").write_text(f"[tool.tflint]\n{toml}\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    p = run_tflint("check", "a.py", cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert key in p.stderr and "Traceback" not in p.stderr


def test_a_quoted_target_version_and_an_integer_option_are_accepted(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tflint]\ntarget-version = "2.10"\n[tool.tflint.rules.python-loop-unrolled]\nmin-iterations = 50\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    p = run_tflint("check", "a.py", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


# -- the command line's selection beats the configuration's (issue 18, item 3) ----------------------------------
TFL201_SRC = (
    "import tensorflow as tf\n\n@tf.function\ndef f(x):\n    if tf.reduce_sum(x) > 0:\n        return x\n    return -x\n"
)


def test_select_on_the_command_line_re_enables_a_configured_ignore(tmp_path):
    """As Ruff: `--select` replaces the configuration's `select`, `ignore` and `extend-select`; a later `--ignore`
    applies on top of it."""
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nignore = ["TFL201"]\n')
    (tmp_path / "m.py").write_text(TFL201_SRC)
    assert "TFL201" not in codes_of(run_tflint("check", "--no-cache", "--output-format", "json", "m.py", cwd=tmp_path))
    p = run_tflint("check", "--no-cache", "--output-format", "json", "--select", "TFL201", "m.py", cwd=tmp_path)
    assert p.returncode == 1 and codes_of(p) == ["TFL201"], p.stderr
    p = run_tflint("check", "--no-cache", "--output-format", "json", "--select", "TFL2", "--ignore", "TFL201", "m.py",
                   cwd=tmp_path)
    assert "TFL201" not in codes_of(p)


def test_unit_tests_get_only_correctness_findings_unless_configured(tmp_path):
    from test_cli import run_tflint

    src = ("import tensorflow as tf\n"
           "ds = tf.data.Dataset.range(8).map(lambda x: x + tf.random.uniform([], dtype=tf.int64)).cache()\n"
           "ds = ds.map(lambda x: tf.strings.as_string(x * 2)).prefetch(1)\n"
           "for x in ds:\n    train_step(x)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\ntarget-version = "2.4"\n')
    (tmp_path / "tests").mkdir()
    for name in ("tests/data.py", "input_test.py", "train.py"):
        (tmp_path / name).write_text(src)
    p = run_tflint("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    got = {(f["filename"].replace("\\", "/"), f["code"]) for f in json.loads(p.stdout)}
    assert {c for n, c in got if n.endswith("train.py")} == {"TFL101", "TFL111"}
    for name in ("tests/data.py", "input_test.py"):  # a test's speed is not worth a finding; a bug is
        assert {c for n, c in got if n.endswith(name)} == {"TFL111"}
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\ntarget-version = "2.4"\ntest-files = "all"\n')
    p = run_tflint("check", "--no-cache", "--output-format", "json", "input_test.py", cwd=tmp_path)
    assert {f["code"] for f in json.loads(p.stdout)} == {"TFL101", "TFL111"}
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\ntest-files = "some"\n')
    p = run_tflint("check", "--no-cache", "input_test.py", cwd=tmp_path)
    assert p.returncode == 2 and "test-files" in p.stderr


def test_unit_tests_do_not_get_findings_about_what_they_exercise_on_purpose(tmp_path):
    """A test builds a layer inside a `tf.function` called in a loop (TFL206) to check the error it raises: the
    correctness rules of functions, Keras and distribution describe what tests exercise on purpose (none of 32 such
    findings in tests on the real-code ledger was true); in the training script the same code is reported."""
    from test_cli import run_tflint

    src = ("import tensorflow as tf\n\n@tf.function\ndef step(x):\n    dense = tf.keras.layers.Dense(4)\n"
           "    return dense(x)\n\nfor x in [tf.ones([2, 3])] * 3:\n    step(x)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\ntarget-version = "2.21"\n')
    for name in ("layer_test.py", "train.py"):
        (tmp_path / name).write_text(src)
    p = run_tflint("check", "--no-cache", "--output-format", "json", "--select", "TFL206", ".", cwd=tmp_path)
    assert {(f["filename"], f["code"]) for f in json.loads(p.stdout)} == {("train.py", "TFL206")}


def test_test_helper_modules_are_tests():
    """The modules tests share their fixtures through (tensorflow/estimator's `linear_testing_utils.py` and its
    `_v1` twin feed two-row datasets to `steps=1` evaluations) are tests; names that merely contain `test` are not."""
    from tflint.config import is_test_file

    for path in ("canned/linear_testing_utils.py", "canned/v1/linear_testing_utils_v1.py", "keras/testing_utils.py",
                 "test_util.py", "data/test_utils.py", "my_test_helpers.py", "input_test.py", "tests/data.py"):
        assert is_test_file(path), path
    for path in ("utils.py", "testing.py", "contest_utils.py", "latest_utils.py", "attest.py", "train.py"):
        assert not is_test_file(path), path
