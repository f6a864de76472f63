"""The pre-commit hooks, run by the real `pre-commit` tool against a scratch repository: `pre-commit try-repo`, and the
README's own `.pre-commit-config.yaml` snippet as a user follows it (autoupdate, install, a blocked commit); and the
README's `pip install "tflint @ git+..."` line.

The tflint checkout is copied (its tracked files, as they are in the working tree) into a temporary git repository
with one commit, so that try-repo sees a clean state. pre-commit then builds its own virtualenv and installs tflint
into it, as it does for users: that takes a while, hence `slow`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
URL = "https://github.com/tflint-tf/tflint"  # the repository the README names
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))

BAD = '''import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: tf.strings.as_string(x), num_parallel_calls=tf.data.AUTOTUNE)
noisy = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(tf.cast(x, tf.float32) + tf.random.uniform([])))
safe = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x * 2))
'''
CLEAN = '''import tensorflow as tf

ds = tf.data.Dataset.range(10).map(lambda x: tf.strings.as_string(x), num_parallel_calls=tf.data.AUTOTUNE)
'''
# Loaded by every Python process started with this folder on PYTHONPATH: leaves a mark when a process pool starts.
POOL_SPY = '''
import os, concurrent.futures.process as _p
open(os.environ["TFLINT_POOL_MARK"] + ".loaded", "a").close()
_orig = _p.ProcessPoolExecutor.__init__
def _init(self, *a, **k):
    with open(os.environ["TFLINT_POOL_MARK"], "a") as fh:
        fh.write("pool\\n")
    _orig(self, *a, **k)
_p.ProcessPoolExecutor.__init__ = _init
'''


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def tflint_repo(tmp_path_factory) -> Path:
    """A copy of this checkout (tracked files) committed into a fresh git repository."""
    if not Path(PRE_COMMIT).exists():
        pytest.skip("pre-commit is not installed")
    dest = tmp_path_factory.mktemp("tflint-repo")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    files.append(b".pre-commit-hooks.yaml")
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        src = ROOT / rel
        if not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "snapshot")
    return dest


@pytest.fixture
def project(tmp_path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    _git(p, "init", "-q")
    (p / "pyproject.toml").write_text('[tool.tflint]\nselect = ["TFL101"]\nunsafe-fixes = true\n')
    # a project on TF 2.4, where a stateless map is a finding (2.5+ parallelizes it by itself)
    (p / "requirements.txt").write_text("tensorflow==2.4.*\n")
    return p


def _try_repo(tflint_repo: Path, project: Path, hook: str, files: list[str], env_extra: dict | None = None):
    env = {**os.environ, "PRE_COMMIT_HOME": str(tflint_repo.parent / "pre-commit-home")}
    env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(tflint_repo), hook, "--verbose", "--files", *files],
        cwd=project, capture_output=True, text=True, env=env, timeout=1200,
    )


def test_hook_definitions():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"tflint", "tflint-fix"}
    for h in hooks.values():
        args = h["entry"].split()
        assert args[:2] == ["tflint", "check"]
        assert args[args.index("--jobs") + 1] == "1"  # no process pool inside a pre-commit chunk
        assert "--force-exclude" in args  # as Ruff's hook: a staged file under `exclude` stays unchecked
        assert h["language"] == "python"
        assert {"python", "jupyter"} <= set(h["types_or"])
    assert "--fix" not in hooks["tflint"]["entry"]
    assert "--fix" in hooks["tflint-fix"]["entry"] and "--no-unsafe-fixes" in hooks["tflint-fix"]["entry"]


@pytest.mark.slow
def test_check_hook_reports_and_passes(tflint_repo, project):
    (project / "bad.py").write_text(BAD)
    (project / "clean.py").write_text(CLEAN)
    bad = _try_repo(tflint_repo, project, "tflint", ["bad.py"])
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert "bad.py:4:" in out and "bad.py:5:" in out and "TFL101" in out
    assert (project / "bad.py").read_text() == BAD  # the checking hook never writes
    clean = _try_repo(tflint_repo, project, "tflint", ["clean.py"])
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout


@pytest.mark.slow
def test_fix_hook_applies_safe_fixes_only(tflint_repo, project):
    (project / "bad.py").write_text(BAD)
    res = _try_repo(tflint_repo, project, "tflint-fix", ["bad.py"])
    out = res.stdout + res.stderr
    assert res.returncode == 1, out  # files were modified (and the unsafe finding remains)
    fixed = (project / "bad.py").read_text()
    lines = fixed.splitlines()
    # the safe fix is applied; the unsafe one is not, although the project's config sets unsafe-fixes = true
    assert lines[4] == "safe = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x * 2), num_parallel_calls=tf.data.AUTOTUNE)"
    assert lines[3] == "noisy = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(tf.cast(x, tf.float32) + tf.random.uniform([])))"
    assert "bad.py:4:" in out and "TFL101" in out  # what is left is reported


@pytest.mark.slow
def test_no_process_pool_under_pre_commit(tflint_repo, project, tmp_path):
    """20 files (above api.PARALLEL_THRESHOLD) in one pre-commit chunk: the hook starts no process pool, while
    the same files checked with `--jobs 2` do (the spy works). Without `--jobs 1` in the hook this test fails."""
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "sitecustomize.py").write_text(POOL_SPY)
    mark = tmp_path / "pool-mark"
    names = []
    for i in range(20):
        name = f"m{i:02d}.py"
        (project / name).write_text(BAD)
        names.append(name)
    # one chunk of all 20 files (pre-commit otherwise splits them per CPU, which could hide a pool on a small box)
    env = {"PYTHONPATH": str(spy), "TFLINT_POOL_MARK": str(mark), "PRE_COMMIT_NO_CONCURRENCY": "1"}
    res = _try_repo(tflint_repo, project, "tflint", names, env_extra=env)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert all(f"{n}:4:" in out for n in names), out
    assert Path(str(mark) + ".loaded").exists(), "the spy was not loaded by the hook's Python"
    assert not mark.exists(), "a process pool was started under pre-commit"
    # control: the spy sees a pool when tflint is asked for one
    ctl = subprocess.run(
        [sys.executable, "-m", "tflint", "check", "--jobs", "2", "--no-cache", *names],
        cwd=project, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": f"{spy}{os.pathsep}{ROOT}", "TFLINT_POOL_MARK": str(mark)},
    )
    assert ctl.returncode == 1, ctl.stdout + ctl.stderr
    assert mark.exists()


def _readme_block(first_line: str) -> str:
    """The README's code block that starts with `first_line`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"no README block starting with {first_line!r}")


def test_the_readme_pre_commit_snippet_names_this_repository_and_no_missing_tag():
    config = yaml.safe_load(_readme_block("# .pre-commit-config.yaml"))
    (repo,) = config["repos"]
    assert repo["repo"] == URL
    assert [h["id"] for h in repo["hooks"]] == ["tflint-fix", "tflint"]
    tags = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    # the revision exists: a tag the repository carries, or a branch that `pre-commit autoupdate` pins to a commit
    assert repo["rev"] in tags or (repo["rev"] == "main" and "pre-commit autoupdate" in _readme_block(
        "# .pre-commit-config.yaml"))


@pytest.mark.slow
def test_the_readme_pre_commit_snippet_blocks_a_commit(tflint_repo, project):
    """The README's snippet, with only its URL pointed at the scratch copy: `pre-commit autoupdate` pins a commit
    that exists, `pre-commit install` installs the hooks, and a commit that adds a finding is blocked."""
    snippet = _readme_block("# .pre-commit-config.yaml").replace(URL, str(tflint_repo))
    (project / ".pre-commit-config.yaml").write_text(snippet)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tflint_repo.parent / "pre-commit-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    env.pop("PYTHONPATH", None)

    def run(*args, check=True):
        p = subprocess.run(list(args), cwd=project, capture_output=True, text=True, env=env, timeout=1200)
        if check:
            assert p.returncode == 0, p.stdout + p.stderr
        return p

    run(PRE_COMMIT, "autoupdate")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tflint_repo, capture_output=True, text=True).stdout.strip()
    assert yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"][0]["rev"] == head
    run(PRE_COMMIT, "install")
    run("git", "add", ".pre-commit-config.yaml", "pyproject.toml", "requirements.txt")
    run("git", "commit", "-q", "-m", "config")
    (project / "bad.py").write_text(BAD)
    run("git", "add", "bad.py")
    blocked = run("git", "commit", "-m", "add a finding", check=False)
    out = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, out
    assert "TFL101" in out and "bad.py:4:" in out
    assert "add a finding" not in run("git", "log", "--oneline").stdout
    (project / "clean.py").write_text(CLEAN)
    run("git", "reset", "-q")
    run("git", "add", "clean.py")
    run("git", "commit", "-q", "-m", "clean")


@pytest.mark.slow
def test_the_readme_git_url_install_works(tflint_repo, tmp_path):
    """`pip install "tflint @ git+URL"` as the README writes it (the URL pointed at the scratch copy), into a fresh
    virtual environment; the installed `tflint` finds its rules and checks a file."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith(f'pip install "tflint @ git+{URL}"'))
    spec = line.split('"')[1].replace(URL, tflint_repo.as_uri())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=600)
    # a current pip (the one `venv` bundles may be old enough to refuse a git+file URL, which a user's https one is not)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
                   check=True, capture_output=True, timeout=1200)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", spec],
                         capture_output=True, text=True, timeout=1200)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    (tmp_path / "bad.py").write_text(BAD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([str(venv / "bin" / "tflint"), "check", "--select", "TFL101", "--target-version", "2.4",
                        "--no-cache", "bad.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 1 and "bad.py:4:" in p.stdout, p.stdout + p.stderr
