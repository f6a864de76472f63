"""`tflint run SCRIPT [ARGS...]`: the script runs unchanged in a child process, its output passes through, and the
report (text on stderr, JSON on stdout) names each retrace's cause and call site.

The scripts live in fixtures/runtime/run/. Tests that run TensorFlow are marked slow and runtime; the others run
scripts that do not import TensorFlow (argument passing, exit statuses, --seconds, --timeout) and are fast.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIX = "fixtures/runtime/run"
HAS_TF = importlib.util.find_spec("tensorflow") is not None


def run(*argv: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    return subprocess.run([sys.executable, "-m", "tflint", "run", *argv], cwd=ROOT, capture_output=True, text=True,
                          env=full_env, timeout=timeout)


def run_json(*argv: str, **kw) -> tuple[subprocess.CompletedProcess, dict]:
    proc = run("--json", *argv, **kw)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"stdout is not JSON:\n{proc.stdout}\nstderr:\n{proc.stderr}") from None
    return proc, data


def line_of(file: str, text: str) -> int:
    for i, line in enumerate((ROOT / FIX / file).read_text().splitlines(), start=1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {file}")


# --- without TensorFlow: the script's view of the world, exit statuses, stops ---------------------------------

def test_arguments_reach_the_script_as_python_would_give_them():
    proc = run(f"{FIX}/args.py", "x", "--y=1", "--steps", "3", env={"PYTHONPATH": "/nowhere/marker"})
    assert proc.returncode == 0, proc.stderr
    # options after SCRIPT belong to the script, not to tflint
    assert "argv: ['x', '--y=1', '--steps', '3'] main: True file: args.py" in proc.stdout
    # sys.path[0] is the script's folder; the script sees the user's PYTHONPATH, not tflint's
    assert "path0: True PYTHONPATH: /nowhere/marker" in proc.stdout
    assert "to stderr" in proc.stderr
    assert "The script did not import TensorFlow" in proc.stderr
    # the script's own output comes first, then the report, after a separator
    assert proc.stderr.index("to stderr") < proc.stderr.index("──── tflint run")


def test_a_non_zero_exit_of_the_script_is_reported_and_exits_2():
    proc = run(f"{FIX}/args.py", "--exit", "3")
    assert proc.returncode == 2
    assert "The script exited with status 3" in proc.stderr


def test_what_the_script_leaves_for_the_exit_is_finished_as_python_would(tmp_path):
    """The child leaves with os._exit after the report (the interpreter's teardown of TensorFlow took 0.65-3 s):
    non-daemon threads, atexit handlers, files still open at exit, the script's output and exit status
    are as they are when Python runs the script itself."""
    def outputs(folder):
        return {p.name: p.read_text() for p in sorted(folder.iterdir())}

    plain_dir, run_dir = tmp_path / "plain", tmp_path / "run"
    plain_dir.mkdir(), run_dir.mkdir()
    plain = subprocess.run([sys.executable, f"{FIX}/exit_effects.py", str(plain_dir)], cwd=ROOT, capture_output=True,
                           text=True)
    proc = run(f"{FIX}/exit_effects.py", str(run_dir))
    expected = {"global.txt": "global\n", "kept.txt": "kept\n", "thread.txt": "thread\n"}
    assert plain.returncode == 3 and outputs(plain_dir) == expected  # the fixture leaves what it says it does
    assert outputs(run_dir) == expected
    assert proc.stdout == plain.stdout == "done\natexit ran\n"
    assert proc.returncode == 2 and "The script exited with status 3" in proc.stderr


def run_on_a_terminal(*argv: str) -> str:
    """`tflint run ARGV` with stdout and stderr on a pseudo-terminal, the progress line shown at once: all that the
    terminal received, its line ends as written by the script ("\\r\\n" turned back into "\\n")."""
    pty = pytest.importorskip("pty")
    env = {**os.environ, "TFLINT_PROGRESS_DELAY": "0", "NO_COLOR": "1"}
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tflint", "run", *argv], cwd=ROOT, env=env, stdout=slave,
                            stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    got = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        got += data
    os.close(master)
    proc.wait(timeout=120)
    return got.decode("utf-8", "replace").replace("\r\n", "\n")


def test_a_terminal_shows_a_progress_line_that_gives_way_to_the_scripts_output_and_the_report():
    text = run_on_a_terminal(f"{FIX}/ticker.py")
    assert "\rtflint run: 0 s, 0 tf.function calls; Ctrl-C stops the script and reports" in text
    lines = text.split("\n")
    # every line the script wrote, and the report, starts at the terminal's first column: the progress line was
    # erased (spaces over it, back to the first column) before each of them
    for i in range(5):
        for word in ("out", "err"):
            [line] = [ln for ln in lines if f"{word} {i}" in ln]
            assert line.endswith(f"{word} {i}") and line[: -len(f"{word} {i}")].rsplit("\r", 1)[-1] == "", line
    [header] = [ln for ln in lines if "──── tflint run" in ln]
    assert header.split("──── tflint run")[0].rsplit("\r", 1)[-1] == ""
    assert "tflint run: " not in text.split("──── tflint run")[1]  # nothing drawn after the script ended


def test_no_progress_line_in_machine_output_nor_off_a_terminal():
    assert "\rtflint run:" not in run_on_a_terminal("--json", f"{FIX}/ticker.py")
    assert "\rtflint run:" not in run_on_a_terminal("--output-format", "github", f"{FIX}/ticker.py")
    proc = run(f"{FIX}/ticker.py", env={"TFLINT_PROGRESS_DELAY": "0"})
    assert proc.returncode == 0 and "tflint run: " not in proc.stderr and "err 4" in proc.stderr
    assert proc.stdout == "".join(f"out {i}\n" for i in range(5))


def test_json_goes_to_stdout_alone_and_the_scripts_stdout_to_stderr():
    proc, data = run_json(f"{FIX}/args.py", "a")
    assert proc.returncode == 0
    assert "argv: ['a']" in proc.stderr
    assert data["findings"] == [] and data["report"]["outcome"] == {"status": "finished", "exit_code": 0}
    assert data["report"]["tensorflow"] is None


def test_seconds_stops_the_script_and_reports():
    proc, data = run_json("--seconds", "1", f"{FIX}/sleeper.py")
    assert proc.returncode == 0, proc.stderr
    assert data["report"]["outcome"]["status"] == "stopped"
    assert "--seconds 1" in data["report"]["outcome"]["reason"]
    assert "started" in proc.stderr and "woke up" not in proc.stderr


def test_timeout_kills_the_script_and_says_so():
    proc = run("--timeout", "2", f"{FIX}/sleeper.py")
    assert proc.returncode == 2
    assert "ran past --timeout" in proc.stderr and "--seconds" in proc.stderr


def test_missing_script_is_a_usage_error():
    proc = run(f"{FIX}/no_such_script.py")
    assert proc.returncode == 2
    assert "no such file" in proc.stderr



@pytest.mark.parametrize("table, error", [
    ('[tool.tflint]\nignore = ["TFL999"]\n', "unknown rule code or name 'TFL999' in `ignore`"),
    ('[tool.tflint]\nnot-a-key = 1\n', "unknown key `not-a-key`"),
    ('[tool.tflint\n', "invalid TOML"),
])
def test_a_bad_configuration_stops_the_run_before_the_script_starts(tmp_path, table, error):
    # the project that validates the configuration is built while the child starts: the script waits for it
    (tmp_path / "pyproject.toml").write_text(table)
    script = tmp_path / "writes.py"
    script.write_text("open('ran.txt', 'w').write('x')\nprint('ran')\n")
    proc = subprocess.run([sys.executable, "-m", "tflint", "run", str(script)], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 2
    assert error in proc.stderr
    assert "ran" not in proc.stdout and not (tmp_path / "ran.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml", "writes.py"]


def test_a_valid_configuration_lets_the_script_run_and_nothing_is_left_behind(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tflint]\nignore = ["TFL101"]\n')
    script = tmp_path / "plain.py"
    script.write_text("print('ran')\n")
    before = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("tflint-run-*"))
    proc = subprocess.run([sys.executable, "-m", "tflint", "run", str(script)], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.py", "pyproject.toml"]
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("tflint-run-*")) <= before  # the control folder went


def test_a_notebook_export_that_kept_a_magic_fails_as_under_python_and_says_why():
    script = f"{FIX}/notebook_magic.py"
    plain = subprocess.run([sys.executable, script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    proc = run(script)
    assert plain.returncode == 1 and proc.returncode == 2
    assert proc.stdout == plain.stdout == "cell 1\n"
    assert "NameError: name 'get_ipython' is not defined" in proc.stderr
    assert "`jupyter nbconvert --to script` exports an IPython magic" in proc.stderr

# --- with TensorFlow ------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_python_int_retrace_loop_names_the_argument_values_and_call_site():
    proc, data = run_json(f"{FIX}/retrace_loop.py")
    assert proc.returncode == 1, proc.stderr
    assert "total=480" in proc.stderr  # the script's stdout, moved to stderr under --json
    # the loop also reads its loss back every step (TFL810, tested with host_sync.py)
    assert sorted(f["code"] for f in data["findings"]) == ["TFL801", "TFL810"]
    [f] = [f for f in data["findings"] if f["code"] == "TFL801"]
    assert f["code"] == "TFL801" and f["name"] == "retracing"
    assert f["filename"].endswith("retrace_loop.py")
    assert f["location"]["row"] == line_of("retrace_loop.py", "def train_step")
    call_line = line_of("retrace_loop.py", "float(train_step(x, step))")
    assert "`step` is a Python value that changed (0, 1, 2, 3, 4, …)" in f["message"]
    assert f"retrace_loop.py:{call_line}" in f["message"]
    assert f"confirms TFL202 at {FIX}/retrace_loop.py:{call_line}" in f["message"]
    [fn] = data["report"]["functions"]
    assert fn["name"] == "train_step" and fn["calls"] == 6 and fn["traces"] == 6
    assert [r["call"] for r in fn["retraces"]] == [2, 3, 4, 5, 6]
    assert fn["retraces"][0]["changes"] == [{"argument": "step", "kind": "python-value", "before": "0", "after": "1"}]
    assert fn["retraces"][0]["site"][1] == call_line


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_text_report_of_the_retrace_loop():
    proc = run(f"{FIX}/retrace_loop.py")
    assert proc.returncode == 1
    assert proc.stdout == "total=480\n"  # the script's stdout is untouched
    report = proc.stderr[proc.stderr.index("──── tflint run"):]
    assert "`train_step`: 6 call(s), 6 trace(s)" in report
    assert "calls 2-6 traced again: `step` 0 -> 1 -> 2 -> 3 -> 4 -> 5 (python-value)" in report
    assert "TFL801" in report and "TFL810" in report and "Found 2 runtime findings" in report


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_clean_script_exits_0_with_its_arguments():
    proc, data = run_json(f"{FIX}/clean.py", "a", "b")
    assert proc.returncode == 0, proc.stderr
    assert "total=480 argv=['a', 'b']" in proc.stderr
    assert data["findings"] == []
    [fn] = data["report"]["functions"]
    assert fn["calls"] == 6 and fn["traces"] == 1 and fn["retraces"] == []


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_crashing_script_exits_2_with_the_users_traceback_only():
    proc = run(f"{FIX}/crash.py")
    assert proc.returncode == 2
    err = proc.stderr
    tb = err[err.index("Traceback (most recent call last):"):err.index("──── tflint run")]
    assert "ValueError: corrupt batch 3" in tb
    assert f'crash.py", line {line_of("crash.py", "raise ValueError")}, in load_batch' in tb
    assert "tflint" not in tb.replace(str(ROOT), "") and "runpy" not in tb
    assert "The script crashed after" in err and "ValueError: corrupt batch 3 at" in err
    # what ran before the crash is still reported
    assert "`step`: 3 call(s), 1 trace(s)" in err


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_steps_stops_after_n_calls_of_the_step():
    proc, data = run_json("--steps", "7", f"{FIX}/many_steps.py")
    assert proc.returncode == 0, proc.stderr
    assert data["report"]["outcome"]["status"] == "stopped"
    assert "--steps 7: 7 calls of `train_step`" in data["report"]["outcome"]["reason"]
    [fn] = data["report"]["functions"]
    assert fn["calls"] == 7 and fn["traces"] == 1
    assert "finished all steps" not in proc.stderr


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_keras_fit_is_seen_as_its_train_function():
    proc, data = run_json(f"{FIX}/keras_fit.py")
    assert proc.returncode == 0, proc.stderr
    assert "fit done" in proc.stderr
    [fn] = data["report"]["functions"]
    # Keras 3's fit calls its train function (a tf.function) once per batch: 256/32 batches x 2 epochs
    assert fn["keras"] and fn["name"] == "Keras train function (fit step)"
    assert fn["calls"] == 16
    assert fn["line"] == line_of("keras_fit.py", "model.fit(")
    assert data["findings"] == []  # Keras traces its step once (or twice in the first call): not a retrace
    # fit on NumPy arrays: Keras makes the dataset itself; the report says so and gives no input-wait verdict
    [fit] = data["report"]["fits"]
    assert fit["input"] == "arrays" and fit["steps"] == 16 and not fit["input_bound"]
    assert fit["memory_step_ms"] is None and "there is no input pipeline of yours to wait for" in fit["note"]
    # the train function ran 16 steps after 2 s of tracing: not worth a Grappler run after the run
    assert data["report"]["graphs"] == [] and data["report"]["timings"]["graphs_s"] == 0


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_loop_waiting_on_a_python_generator_is_input_bound():
    proc, data = run_json(f"{FIX}/input_bound.py")
    assert proc.returncode == 1, proc.stderr
    [f] = data["findings"]
    assert f["code"] == "TFL809" and f["name"] == "input-bound"
    assert f["location"]["row"] == line_of("input_bound.py", "ds = ds.batch(2)")
    assert f"the loop at {FIX}/input_bound.py:{line_of('input_bound.py', 'for batch in ds')}" in f["message"]
    assert "The likely limit is `from_generator()`" in f["message"]
    assert f"confirms TFL104 at {FIX}/input_bound.py:{line_of('input_bound.py', 'from_generator(')}" in f["message"]
    [it] = data["report"]["iterators"]
    assert it["input_bound"] and it["elements"] == 18  # 20 batches, the first two are warm-up


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_loop_whose_step_outlasts_its_input_is_not_input_bound():
    proc, data = run_json(f"{FIX}/compute_bound.py")
    assert proc.returncode == 0, proc.stderr
    assert data["findings"] == []
    [it] = data["report"]["iterators"]
    assert not it["input_bound"] and it["elements"] == 18 and it["tf_function_calls"] == 18


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_distributed_loop_waiting_on_a_python_generator_is_input_bound():
    # `for batch in strategy.experimental_distribute_dataset(ds)`: 40 ms of Python per batch against a tiny step
    proc, data = run_json(f"{FIX}/distributed_input_bound.py")
    assert proc.returncode == 1, proc.stderr
    assert "total=6240" in proc.stderr
    [f] = data["findings"]
    assert f["code"] == "TFL809"
    assert f["location"]["row"] == line_of("distributed_input_bound.py", "ds = ds.batch(2)")
    loop_line = line_of("distributed_input_bound.py", "for batch in dist")
    assert (f"the loop at {FIX}/distributed_input_bound.py:{loop_line} waited for this distributed dataset"
            in f["message"])
    # a Python source holds the GIL while the distributed iterator's own Python runs: all of next() is the wait
    assert "distributed iterator's own work counted as waiting" in f["message"]
    assert "The likely limit is `from_generator()`" in f["message"]
    [it] = data["report"]["iterators"]
    assert it["input_bound"] and it["distributed"] and it["elements"] == 18
    assert it["iterator_ms_per_element"] is not None
    assert [s["label"] for s in it["stages"]] == ["from_generator()", "batch(2)"]


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_distributed_loop_whose_step_outlasts_its_input_is_not_input_bound():
    proc, data = run_json(f"{FIX}/distributed_compute_bound.py")
    assert proc.returncode == 0, proc.stderr
    assert data["findings"] == [] and "total=320" in proc.stderr
    [it] = data["report"]["iterators"]
    assert it["distributed"] and not it["input_bound"] and it["elements"] == 18 and it["tf_function_calls"] == 18
    assert it["line"] == line_of("distributed_compute_bound.py", "ds = tf.data")


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_per_example_parse_before_batch_is_named_as_such():
    """The stage a TFL809 names: a map that parses tf.Example records one at a time before `batch` (TFL107), also
    when it runs in parallel; parsing after `batch` is not."""
    code = (
        "import tensorflow as tf\n"
        "from tflint.runtime import data\n"
        "spec = {'x': tf.io.FixedLenFeature([2], tf.float32)}\n"
        "one = lambda r: tf.io.parse_single_example(r, spec)['x']\n"
        "many = lambda r: tf.io.parse_example(r, spec)['x']\n"
        "src = tf.data.TFRecordDataset([])\n"
        "seq = data.chain(src.map(one).batch(4))\n"
        "par = data.chain(src.map(one, num_parallel_calls=tf.data.AUTOTUNE).batch(4).prefetch(1))\n"
        "vec = data.chain(src.batch(4).map(many, num_parallel_calls=tf.data.AUTOTUNE))\n"
        "assert seq[1].parse_ops == ['ParseExampleV2'], seq[1].parse_ops\n"
        "assert data.parses_per_element(seq[1], seq) and data.parses_per_element(par[1], par)\n"
        "assert not data.parses_per_element(vec[2], vec) and vec[2].parse_ops\n"
        "assert data.likely_limit(seq) is seq[1] and data.likely_limit(par) is par[1]\n"
        "assert data.likely_limit(vec) is vec[0]\n"  # then the file source
        "r = data.recommendation(seq[1], seq)\n"
        "assert 'tf.io.parse_example' in r and 'TFL107' in r and 'TFL101' in r, r\n"
        "r = data.recommendation(par[1], par)\n"
        "assert 'TFL107' in r and 'TFL101' not in r and 'TFL102' not in r, r\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)})
    assert proc.stdout.strip() == "ok", proc.stderr


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_model_fit_on_a_slow_python_map_is_input_bound_at_the_fit_line():
    # a 20 ms py_function per element, 8 per batch, against a step of about a millisecond: no machine flips it
    proc, data = run_json(f"{FIX}/fit_input_bound.py")
    assert proc.returncode == 1, proc.stderr
    assert "fit done: 1 epoch(s)" in proc.stderr  # the script's own output, once, under --json on stderr
    assert proc.stderr.count("fit done") == 1
    [f] = data["findings"]
    assert f["code"] == "TFL809" and f["name"] == "input-bound"
    assert f["location"]["row"] == line_of("fit_input_bound.py", "model.fit(")
    assert "`model.fit` waited for its input" in f["message"]
    assert "batches already in memory" in f["message"]
    map_line = line_of("fit_input_bound.py", "ds = ds.map(")
    assert f"`map(lambda)` at {FIX}/fit_input_bound.py:{map_line}" in f["message"]
    assert "(confirms " in f["message"] and f"TFL105 at {FIX}/fit_input_bound.py:{map_line}" in f["message"]
    [fit] = data["report"]["fits"]
    assert fit["input_bound"] and fit["line"] == f["location"]["row"]
    assert fit["dataset_line"] == line_of("fit_input_bound.py", "ds = ds.batch(8)")
    assert fit["steps"] == 16 and fit["steady_steps"] == 14  # 128/8 batches; each epoch's first two apart
    assert fit["step_ms"] > fit["memory_step_ms"] and fit["pipeline_ms_per_batch"] is not None
    assert fit["slowest_stage"]["line"] == map_line
    assert [s["label"] for s in fit["stages"]] == ["from_tensor_slices()", "map(lambda)", "batch(8)"]


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_model_fit_on_a_slow_python_generator_is_input_bound_and_names_the_generator():
    # 40 ms of Python per batch against a step of about a millisecond; the generator is timed during the run
    proc, data = run_json(f"{FIX}/fit_generator.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("fit done: 1 epoch(s)") == 1
    [f] = data["findings"]
    assert f["code"] == "TFL809" and f["location"]["row"] == line_of("fit_generator.py", "model.fit(")
    gen_line = line_of("fit_generator.py", "def batches(")
    assert f"the Python generator `batches` (defined at {FIX}/fit_generator.py:{gen_line})" in f["message"]
    assert "the generator alone needs" in f["message"] and "(TFL104)" in f["message"]
    [fit] = data["report"]["fits"]
    assert fit["input_bound"] and fit["generator"] == {"kind": "generator", "name": "batches",
                                                       "file": str(ROOT / FIX / "fit_generator.py"), "line": gen_line}
    assert fit["steps"] == 20 and fit["steady_steps"] == 18 and fit["stages"] == []
    assert fit["memory_step_ms"] is not None and fit["pipeline_ms_per_batch"] is not None
    # the same batches, produced with no work: the step does not wait
    proc, data = run_json(f"{FIX}/fit_generator.py", "--fast")
    assert proc.returncode == 0, proc.stderr
    [fit] = data["report"]["fits"]
    assert data["findings"] == [] and not fit["input_bound"] and fit["generator"]["name"] == "batches"


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_model_fit_on_a_from_generator_pipeline_names_its_source_from_times_taken_during_the_run():
    # the generator is timed as tf.data pulls it during the fit: no pulling of the pipeline's stages after the run
    proc, data = run_json(f"{FIX}/fit_generator_source.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("fit done: 1 epoch(s)") == 1
    [f] = data["findings"]
    assert f["code"] == "TFL809" and f["location"]["row"] == line_of("fit_generator_source.py", "model.fit(")
    source = line_of("fit_generator_source.py", "ds = tf.data.Dataset.from_generator(")
    assert f"Its source `from_generator()` at {FIX}/fit_generator_source.py:{source}, timed during the run" in (
        f["message"])
    assert "the Python generator at its source took (timed in the run)" in f["message"]
    [fit] = data["report"]["fits"]
    assert fit["input_bound"] and fit["pipeline_timed"] == "source in the run"
    slowest = fit["slowest_stage"]
    assert slowest["timed"] == "in the run" and slowest["line"] == source and slowest["elements"] >= 100
    assert slowest["added_us"] >= 9_000  # 10 ms of sleep per element, timed in the generator
    assert fit["pipeline_ms_per_batch"] == pytest.approx(8 * slowest["added_us"] / 1e3, rel=0.01)


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_dataset_iterated_inside_a_tf_function_is_said_to_be_not_timed():
    proc, data = run_json(f"{FIX}/in_graph_iterator.py")
    assert proc.returncode in (0, 1), proc.stderr
    assert "total=496.0" in proc.stderr
    got = {g["function"]: g for g in data["report"]["iterators_in_graph"]}
    assert set(got) == {"step", "total"}
    assert got["step"]["line"] == line_of("in_graph_iterator.py", "def step(")
    assert got["step"]["fetch_line"] == line_of("in_graph_iterator.py", "return tf.reduce_sum(next(iterator))")
    assert got["total"]["line"] == line_of("in_graph_iterator.py", "def total(")
    assert all("no input-wait verdict" in g["note"] for g in got.values())
    assert not [f for f in data["findings"] if f["code"] == "TFL809"]
    text = run(f"{FIX}/in_graph_iterator.py").stderr
    assert "`step` " in text and "fetches its tf.data elements inside the graph" in text
    assert "0 element(s)" not in text  # the iterator handed to `step` was never pulled from Python


def test_keras_2_step_functions_are_named_as_keras_3s():
    from tflint.runtime.observe import _keras_step_name

    def make(module: str, qualname: str):
        def fn():
            pass
        fn.__module__, fn.__qualname__ = module, qualname
        return fn

    site = (str(ROOT / FIX / "tf_keras_fit.py"), line_of("tf_keras_fit.py", "model.fit("))
    k2 = make("tf_keras.src.engine.training", "Model.make_train_function.<locals>.train_function")
    k3 = make("keras.src.backend.tensorflow.trainer", "TensorFlowTrainer.make_train_function.<locals>.one_step_on_data")
    assert _keras_step_name(k2, site) == _keras_step_name(k3, site) == "Keras train function (fit step)"
    assert _keras_step_name(make("mylib", "Model.make_train_function.<locals>.f"), site) is None


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
@pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None,
                    reason="tf_keras (Keras 2 as a package) is not installed: `pip install tf-keras` to run this test")
def test_a_tf_keras_fit_is_observed_as_a_keras_3_fit():
    proc, data = run_json(f"{FIX}/tf_keras_fit.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("fit done: 1 epoch(s)") == 1
    [fn] = data["report"]["functions"]
    assert fn["keras"] and fn["name"] == "Keras train function (fit step)" and fn["calls"] == 20
    [f] = data["findings"]
    assert f["code"] == "TFL809" and f["location"]["row"] == line_of("tf_keras_fit.py", "model.fit(")
    [fit] = data["report"]["fits"]
    assert fit["input_bound"] and fit["steps"] == 20 and fit["memory_step_ms"] is not None
    assert fit["slowest_stage"]["line"] == line_of("tf_keras_fit.py", "ds = tf.data.Dataset.from_generator(")


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_model_fit_on_a_slow_py_dataset_is_input_bound_and_names_its_getitem():
    proc, data = run_json(f"{FIX}/fit_py_dataset.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("fit done: 1 epoch(s)") == 1
    [f] = data["findings"]
    assert f["code"] == "TFL809" and f["location"]["row"] == line_of("fit_py_dataset.py", "model.fit(")
    getitem = line_of("fit_py_dataset.py", "def __getitem__")
    assert f"the PyDataset `Batches.__getitem__` (defined at {FIX}/fit_py_dataset.py:{getitem})" in f["message"]
    assert "run on one thread" in f["message"] and "`workers=4`" in f["message"]
    [fit] = data["report"]["fits"]
    assert fit["input_bound"] and fit["generator"]["kind"] == "py_dataset" and fit["generator"]["workers"] == 1
    assert fit["steps"] == 20 and fit["steady_steps"] == 18 and fit["memory_step_ms"] is not None
    proc, data = run_json(f"{FIX}/fit_py_dataset.py", "--fast")
    assert proc.returncode == 0, proc.stderr
    [fit] = data["report"]["fits"]
    assert data["findings"] == [] and not fit["input_bound"]


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_model_fit_on_data_in_memory_is_not_input_bound():
    proc, data = run_json(f"{FIX}/fit_compute_bound.py")
    assert proc.returncode == 0, proc.stderr
    assert "fit done: 2 epoch(s)" in proc.stderr
    assert data["findings"] == []
    [fit] = data["report"]["fits"]
    assert not fit["input_bound"] and fit["steps"] == 32 and fit["memory_step_ms"] is not None
    text = run(f"{FIX}/fit_compute_bound.py")
    assert text.returncode == 0 and text.stdout == "fit done: 2 epoch(s)\n"  # the script's stdout, untouched
    assert "model.fit/evaluate/predict input" in text.stderr and "<- input-bound" not in text.stderr


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_reads_of_tensor_values_every_step_are_host_syncs_with_their_count():
    proc, data = run_json(f"{FIX}/host_sync.py")
    assert proc.returncode == 1, proc.stderr
    got = sorted((f["code"], f["location"]["row"]) for f in data["findings"])
    helper, every = line_of("host_sync.py", "history.append(loss.numpy())"), line_of("host_sync.py", "best = min(")
    assert got == [("TFL810", helper), ("TFL810", every)]  # not the log line that runs every 10th step
    loop = line_of("host_sync.py", "for step in range(40)")
    for f in data["findings"]:
        assert f["name"] == "host-sync-in-loop"
        assert f"40 times in the loop at line {loop}, 1.0 per step (40 calls of `train_step`)" in f["message"]
        assert "on a CPU" in f["message"]
    [numpy_f] = [f for f in data["findings"] if f["location"]["row"] == helper]
    [every_f] = [f for f in data["findings"] if f["location"]["row"] == every]
    assert f"confirms TFL305 at {FIX}/host_sync.py:{every}" in every_f["message"]  # the static rule, same read
    assert "confirms" not in numpy_f["message"]  # a read in a helper: TFL305 follows no helper
    src = (ROOT / FIX / "host_sync.py").read_text().splitlines()[helper - 1]
    assert "`.numpy()`" in numpy_f["message"] and numpy_f["location"]["column"] == src.index("numpy(") + 1
    syncs = {s["line"]: s for s in data["report"]["host_syncs"]}
    log = line_of("host_sync.py", 'print(f"step {step}')
    assert syncs[log]["count"] == 4 and syncs[log]["per_step"] == 0.1 and not syncs[log]["finding"]
    assert syncs[every]["count"] == 40 and syncs[every]["seconds"] >= 0 and syncs[every]["loop_line"] == loop
    # the script's own output is what plain Python prints
    plain = subprocess.run([sys.executable, f"{FIX}/host_sync.py"], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=600)
    text = run(f"{FIX}/host_sync.py")
    assert text.returncode == 1 and text.stdout == plain.stdout and "final" in plain.stdout


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_configured_threshold_reaches_the_child_that_judges(tmp_path):
    # the options are sent to the child while the script runs (the registry is built meanwhile)
    (tmp_path / "pyproject.toml").write_text('[tool.tflint.rules.host-sync-in-loop]\nmin-count = 1000\n')
    script = tmp_path / "host_sync.py"
    script.write_text((ROOT / FIX / "host_sync.py").read_text())
    proc = subprocess.run([sys.executable, "-m", "tflint", "run", "--json", str(script)], cwd=tmp_path,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=600)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert data["findings"] == [] and not data["report"]["observer_errors"]
    every = line_of("host_sync.py", "best = min(")
    assert any(s["line"] == every and s["count"] == 40 for s in data["report"]["host_syncs"])  # seen, not judged


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_the_tensorflow_hooks_tflint_run_relies_on_exist():
    """A TensorFlow upgrade that moves one of these must fail here, loudly, not make `run` silently blind."""
    code = (
        "import tensorflow as tf\n"
        "from tensorflow.python.data.ops import dataset_ops, iterator_ops\n"
        "f = tf.function(lambda x: x)\n"
        "assert '__call__' in vars(type(f)), type(f)\n"
        "assert hasattr(f, 'experimental_get_tracing_count') and hasattr(f, 'get_concrete_function')\n"
        "assert hasattr(f, 'python_function')\n"
        "assert '__iter__' in vars(dataset_ops.DatasetV2) and '__init__' in vars(dataset_ops.DatasetV2)\n"
        "it = iter(tf.data.Dataset.range(2))\n"
        "assert type(it) is iterator_ops.OwnedIterator and '__next__' in vars(iterator_ops.OwnedIterator)\n"
        # host syncs: the value-reading methods of the eager tensor class, defined in Python
        "from tensorflow.python.framework import ops\n"
        "assert all(n in vars(ops._EagerTensorBase) for n in ('numpy', '__float__', '__int__', '__index__', "
        "'__bool__', '__format__', '__str__', '__repr__', '__array__'))\n"
        "assert type(tf.constant(1.0)).__mro__[1] is ops._EagerTensorBase\n"
        # model.fit: Keras 3's TensorFlow trainer, its callbacks, and the train function it keeps on the model
        "import keras\n"
        "from keras.src.backend.tensorflow.trainer import TensorFlowTrainer\n"
        "assert 'fit' in vars(TensorFlowTrainer) and issubclass(keras.Model, TensorFlowTrainer)\n"
        "import inspect\n"
        "assert list(inspect.signature(TensorFlowTrainer.fit).parameters)[1:7] == "
        "['x', 'y', 'batch_size', 'epochs', 'verbose', 'callbacks']\n"
        "m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])\n"
        "m.compile(optimizer='sgd', loss='mse')\n"
        "m.fit(tf.data.Dataset.from_tensors((tf.ones([1, 2]), tf.ones([1, 1]))), verbose=0)\n"
        "assert callable(m.train_function) and m.steps_per_execution == 1 and m.distribute_strategy\n"
        # fit on a Python generator: the spec Keras gives its batches (the step in memory must not trace again)
        "from keras.src.trainers.data_adapters import data_adapter_utils, py_dataset_adapter\n"
        "assert callable(data_adapter_utils.get_tensor_spec)\n"
        # fit on a PyDataset: the adapter's iterator over its batches, which tf.data pulls
        "assert '_get_iterator' in vars(py_dataset_adapter.PyDatasetAdapter)\n"
        "assert py_dataset_adapter.PyDataset is keras.utils.PyDataset\n"
        "assert all(hasattr(v, 'assign') for v in m.variables + m.optimizer.variables)\n"
        # tf.distribute datasets iterated from Python: their __iter__/__next__ and the per-device fetches inside
        "from tensorflow.python.distribute import input_lib\n"
        "assert '__iter__' in vars(input_lib.DistributedDataset)\n"
        "assert '__iter__' in vars(input_lib.DistributedDatasetsFromFunction)\n"
        "assert '__next__' in vars(input_lib.DistributedIteratorBase)\n"
        "assert all(n in vars(iterator_ops.OwnedIterator) for n in ('get_next_as_optional', '_next_internal'))\n"
        "s = tf.distribute.MirroredStrategy()\n"
        "ds = tf.data.Dataset.range(4).batch(2)\n"
        "dds = s.experimental_distribute_dataset(ds)\n"
        "assert dds._original_dataset is ds and isinstance(iter(dds), input_lib.DistributedIteratorBase)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.stdout.strip() == "ok", proc.stderr


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_tf_function_created_in_a_loop_is_one_finding_that_confirms_tfl203():
    proc, data = run_json(f"{FIX}/function_in_loop.py")
    assert proc.returncode == 1, proc.stderr
    [f] = data["findings"]
    assert f["code"] == "TFL801" and f["location"]["row"] == line_of("function_in_loop.py", "def scale")
    assert "wrapped in a new tf.function 6 times" in f["message"]
    assert f"confirms TFL203 at {FIX}/function_in_loop.py:{line_of('function_in_loop.py', 'tf.function(scale)')}" in f["message"]
    assert len(data["report"]["functions"]) == 6


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_reaches_the_script_and_the_report_covers_the_run_so_far():
    import signal
    import time

    # a shell's background job (`pytest ... &` without job control) starts with SIGINT ignored, and an ignored signal
    # stays ignored across exec: restore the default so that tflint gets the Ctrl-C a terminal would send it
    proc = subprocess.Popen([sys.executable, "-m", "tflint", "run", "--json", f"{FIX}/sleeper.py"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stderr.readline()  # the script's stdout, on stderr under --json
        assert line.strip() == "started", line
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends to tflint
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out)["report"]["outcome"]["status"] == "interrupted"
    assert "woke up" not in err


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_single_retrace_for_the_last_batch_is_reported_but_not_a_finding():
    proc, data = run_json(f"{FIX}/last_batch.py")
    assert proc.returncode == 0, proc.stderr
    assert data["findings"] == []
    [fn] = data["report"]["functions"]
    assert fn["calls"] == 8 and fn["traces"] == 2
    [retrace] = fn["retraces"]
    assert retrace["call"] == 4
    assert retrace["changes"] == [{"argument": "x", "kind": "shape", "before": "float32[32, 4]",
                                   "after": "float32[4, 4]"}]


def test_machine_output_formats_are_checks_and_alone_on_stdout():
    proc = run("--output-format", "json", f"{FIX}/args.py")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == []  # the findings array of `check --output-format json`
    assert "argv: []" in proc.stderr
    proc = run("--output-format", "concise", f"{FIX}/args.py")
    assert proc.returncode == 0 and "argv: []" in proc.stdout and "No runtime findings" in proc.stderr


def test_help_shows_the_usage():
    proc = subprocess.run([sys.executable, "-m", "tflint", "run", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0
    assert "tflint run [options] SCRIPT [ARGS...]" in proc.stdout and "--steps" in proc.stdout


def test_a_notebook_that_cannot_run_says_why(tmp_path):
    nb = tmp_path / "train.ipynb"
    nb.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    proc = run(str(nb))
    assert proc.returncode == 2 and "no Python code cells to run" in proc.stderr
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x = (", "metadata": {}, "outputs": []}],
                              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    proc = run(str(nb))
    assert proc.returncode == 2 and "cell 1 is not Python" in proc.stderr


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_notebook_runs_its_code_cells_in_order_and_is_reported_at_cell_and_row():
    nb = f"{FIX}/notebook.ipynb"
    proc, data = run_json(nb)
    assert proc.returncode == 1, proc.stderr
    assert "total=120.0" in proc.stderr  # the last cell ran after the others (its `%time` statement too)
    got = sorted((f["code"], f["filename"], f["cell"], f["location"]["row"]) for f in data["findings"])
    assert got == [("TFL801", nb, 3, 2), ("TFL810", nb, 4, 5)]  # `def step(`, `.numpy()` in the loop
    [retrace] = [f for f in data["findings"] if f["code"] == "TFL801"]
    assert f"called at {nb}:cell 4:5" in retrace["message"] and "tflint-run-notebook" not in json.dumps(data)
    assert data["report"]["notebook"]["skipped"] == [
        {"cell": 2, "line": 1, "text": "%matplotlib inline"}, {"cell": 4, "line": 1, "text": "!echo this runs in Jupyter only"}]
    [fn] = data["report"]["functions"]
    assert (fn["file"], fn["cell"], fn["line"]) == (nb, 3, 2)
    text = run(nb).stderr
    assert f"{nb}:cell 3:2:1: TFL801" in text and f"{nb}:cell 4:5:30: TFL810" in text
    assert "Skipped 2 line(s) that Jupyter runs but Python cannot" in text and "cell 2:1 `%matplotlib inline`" in text


# --- the verdict of a fit, from its measurements (no TensorFlow) ---------------------------------------------------

class _FakeFit:
    def __init__(self, step_s: float) -> None:
        self.steady = [step_s] * 20
        self.model = type("Model", (), {"steps_per_execution": 1})()


@pytest.mark.parametrize("step, memory, pipeline, bound", [
    (0.030, 0.001, 0.028, True),  # the pipeline alone explains the whole wait
    # measured seconds apart under a load that moved: the pipeline alone timed at less than half the wait, but it
    # is still 12x the step on batches in memory, so even overlapped the step would wait: input-bound
    (0.058, 0.001, 0.012, True),
    # slower under fit than in memory, and the pipeline alone is fast: another cause (its threads, other load)
    (0.012, 0.004, 0.002, False),
    # the pipeline alone is slower than the in-memory step, but not twice: overlapped, the wait would be under half
    (0.020, 0.004, 0.006, False),
])
def test_a_fit_is_input_bound_when_the_pipeline_alone_explains_the_wait(step, memory, pipeline, bound):
    from tflint.runtime.fit import _verdict

    out = _verdict(_FakeFit(step), {"memory_step_s": memory, "pipeline_s": pipeline},
                   {"input_min_wait_share": 0.5, "input_min_wait_ms": 1.0})
    assert out["input_bound"] is bound
    assert (out["note"] is None) is bound


# --- the bundled examples (examples/run/): the parts that do not depend on the machine's speed --------------------
# (whether a loop is input-bound is a timing: bench/run_repeat.py runs every example five times)

def example_line(file: str, text: str) -> int:
    for i, line in enumerate((ROOT / "examples" / "run" / file).read_text().splitlines(), start=1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {file}")


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_the_custom_loop_example_names_its_retrace_and_its_host_sync_and_the_fixed_one_neither():
    proc, data = run_json("examples/run/custom_loop_retrace.py")
    assert proc.returncode == 1, proc.stderr
    assert "epoch 2: mean loss" in proc.stderr
    found = {f["code"]: f for f in data["findings"]}
    assert sorted(found) == ["TFL801", "TFL810"]
    assert found["TFL801"]["location"]["row"] == example_line("custom_loop_retrace.py", "def train_step(")
    assert "`step` is a Python value that changed (0, 1, 2, 3, 4, …)" in found["TFL801"]["message"]
    assert found["TFL810"]["location"]["row"] == example_line("custom_loop_retrace.py", "loss.numpy()")
    assert "32 times in the loop at line " + str(example_line("custom_loop_retrace.py", "for x, y in train")) in (
        found["TFL810"]["message"])
    proc, data = run_json("examples/run/custom_loop_retrace_fixed.py")
    assert proc.returncode in (0, 1), proc.stderr
    assert not [f for f in data["findings"] if f["code"] in ("TFL801", "TFL810")]
    [fn] = data["report"]["functions"]
    assert fn["calls"] == 32 and fn["traces"] == 1


def test_the_hot_functions_are_the_few_that_took_most_of_the_time():
    from tflint.runtime.hotgraphs import hot_functions

    fns = [{"seconds_in_calls": s} for s in (0.1, 5.0, 0.4, 3.0, 1.5)]
    # the hottest first, until 80% of the time is covered, at most three, none under 10% or 0.25 s in all
    assert hot_functions(fns) == [(1, 5.0 / 10), (3, 3.0 / 10)]
    assert hot_functions([{"seconds_in_calls": 1.0}] * 8) == [(0, 1 / 8), (1, 1 / 8), (2, 1 / 8)]
    assert hot_functions([{"seconds_in_calls": 1.0}] * 11) == []  # each under 10%: none stands out
    assert hot_functions([{"seconds_in_calls": 0.2}]) == []  # all of the time, but too little to matter
    assert hot_functions([{"seconds_in_calls": 0.0}]) == []
    # the time the graph ran, not the time tracing it: a short Keras fit's train function (2.3 s of its 2.4 s in
    # the first call's tracing) is not worth a Grappler run; a function that ran 1 s after 2 s of tracing is
    assert hot_functions([{"seconds_in_calls": 2.36, "tracing_s": 2.32}]) == []
    assert hot_functions([{"seconds_in_calls": 3.0, "tracing_s": 2.0}, {"seconds_in_calls": 2.5, "tracing_s": 0.0}]
                         ) == [(1, 2.5 / 3.5), (0, 1.0 / 3.5)]


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_the_graph_that_ran_most_is_shown_before_and_after_grappler_with_its_findings():
    proc, data = run_json(f"{FIX}/hot_graph.py")
    assert proc.returncode == 1, proc.stderr
    assert "total=" in proc.stderr  # the script's output (on stderr under --json)
    [g] = data["report"]["graphs"]
    assert g["function"] == "step" and g["share"] > 0.5
    assert g["line"] == line_of("hot_graph.py", "def step")
    assert g["before"]["nodes"] > g["after"]["nodes"]
    [whole] = g["optimizers"]  # the meta-optimizer's change as a whole (per optimizer: `tflint inspect`)
    assert whole["optimizer"] == "Grappler" and whole["nodes_before"] > whole["nodes_after"]
    assert "Assert" in g["before"]["ops"]
    # the user's tf.Assert is theirs to remove; the one inside compute_average_loss is not (counted apart)
    got = [(f["code"], f["location"]["row"]) for f in data["findings"]]
    assert got == [("TFL808", line_of("hot_graph.py", "tf.Assert("))]
    assert g["library_findings"] >= 1
    assert data["report"]["timings"]["graphs_s"] > 0
    text = run(f"{FIX}/hot_graph.py").stderr
    assert "graphs that ran most (Grappler before -> after" in text
    assert f"`step` (" in text and "after Grappler" in text


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_notebook_exported_as_a_script_is_observed_at_its_own_lines():
    # `jupyter nbconvert --to script`'s shape: `# In[n]:` markers, markdown as comments, a bare expression that a
    # notebook would display
    script = f"{FIX}/notebook_export.py"
    plain = subprocess.run([sys.executable, script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    proc, data = run_json(script)
    assert proc.returncode == 1, proc.stderr
    assert plain.stdout.strip() and plain.stdout in proc.stderr  # its output as without tflint (on stderr: --json)
    got = sorted((f["code"], f["location"]["row"]) for f in data["findings"])
    assert got == [("TFL801", line_of("notebook_export.py", "def step(")),
                   ("TFL810", line_of("notebook_export.py", "losses.append(step(x, n).numpy())"))]
    [retrace] = [f for f in data["findings"] if f["code"] == "TFL801"]
    assert "`n` is a Python value that changed" in retrace["message"]


@pytest.mark.slow
@pytest.mark.runtime
@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_evaluate_and_predict_on_a_slow_python_map_are_input_bound_at_their_lines():
    # the same measurement as for fit: the step under Keras's loop against the same step function (the test or
    # predict function) on batches already in memory; the fit on arrays before them is not judged
    proc, data = run_json(f"{FIX}/evaluate_input_bound.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("evaluated: ") == 1 and "predicted 96 rows" in proc.stderr
    rows = {"evaluate": line_of("evaluate_input_bound.py", "model.evaluate("),
            "predict": line_of("evaluate_input_bound.py", "model.predict(")}
    assert sorted((f["code"], f["location"]["row"]) for f in data["findings"]) == sorted(
        ("TFL809", row) for row in rows.values())
    for f in data["findings"]:
        method = "evaluate" if f["location"]["row"] == rows["evaluate"] else "predict"
        assert f"`model.{method}` waited for its input" in f["message"]
        assert f"the same {'test' if method == 'evaluate' else 'predict'} step on batches already in memory" in f["message"]
    fits = {f["method"]: f for f in data["report"]["fits"]}
    assert set(fits) == {"fit", "evaluate", "predict"}
    # fit(features, labels): arrays, whose dataset Keras makes itself: said so, timed, and not judged
    arrays = fits.pop("fit")
    assert arrays["input"] == "arrays" and not arrays["input_bound"] and arrays["memory_step_ms"] is None
    assert arrays["note"].startswith("on arrays in memory: Keras builds the tf.data dataset itself")
    assert arrays["step_ms"] is not None and arrays["steps"] > 0
    for method, fit in fits.items():
        assert fit["line"] == rows[method] and fit["input_bound"]
        assert fit["steps"] == 12 and fit["steady_steps"] == 10  # 96/8 batches, the first two apart
        assert fit["step_ms"] > fit["memory_step_ms"]
