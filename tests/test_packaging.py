"""The wheel works on its own: built from the checkout, installed into a fresh virtual environment (no system site
packages; dependencies from the package index), `tflint rules --json` and `python -m tflint check` run there, and
rules/ ships inside the wheel as tflint/_rules."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _run(cmd, cwd, timeout=900, env=None):
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    e.update(env or {})
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=e)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    p = _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, ROOT], cwd=out)
    if p.returncode != 0:  # no network for an isolated build env: build with what this environment has
        p = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", out, ROOT], cwd=out)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    (whl,) = out.glob("tflint-*.whl")
    return whl


def test_wheel_contains_rules_and_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("tflint/_rules/") and n.endswith(".yaml")}
    in_checkout = {"tflint/_rules/" + p.relative_to(ROOT / "rules").as_posix() for p in (ROOT / "rules").rglob("*.yaml")}
    assert in_checkout and in_checkout <= shipped
    assert "tflint/cli.py" in names and "tflint/__main__.py" in names
    assert any(n.startswith("tflint/checks/data/") for n in names)
    assert not any(n.startswith(("tests/", "fixtures/")) for n in names)
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "tflint = tflint.cli:entry" in zipfile.ZipFile(wheel).read(meta).decode()


def test_installed_wheel_in_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    p = _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg
    py = venv / "bin" / "python"
    p = _run([py, "-m", "pip", "install", "-q", wheel], cwd=tmp_path, timeout=1800)
    if p.returncode != 0 and ("Could not find" in p.stderr or "NewConnectionError" in p.stderr):
        pytest.skip(f"package index unreachable: {p.stderr[-300:]}")
    assert p.returncode == 0, p.stderr[-3000:]

    work = tmp_path / "work"  # not the checkout: nothing may be imported from it
    work.mkdir()
    p = _run([venv / "bin" / "tflint", "rules", "--json"], cwd=work)
    assert p.returncode == 0, p.stderr
    rules = json.loads(p.stdout)
    codes = {r["code"] for r in rules}
    n_yaml = len(list((ROOT / "rules").rglob("*.yaml")))
    assert {"TFL001", "TFL101", "TFL102"} <= codes and len(rules) >= n_yaml

    p = _run([py, "-c", "import tflint, tflint.registry as r; print(tflint.__file__); print(r.rules_dir())"], cwd=work)
    assert p.returncode == 0, p.stderr
    pkg_file, rules_dir = p.stdout.split()
    assert str(venv) in pkg_file and str(ROOT) not in pkg_file
    assert rules_dir.endswith(os.path.join("tflint", "_rules")) and str(venv) in rules_dir

    (work / "train.py").write_text("import tensorflow as tf\nds = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(x))\n")
    p = _run([py, "-m", "tflint", "check", "--select", "TFL101", "--output-format", "json", "train.py"], cwd=work)
    assert p.returncode == 1, p.stderr
    assert [f["code"] for f in json.loads(p.stdout)] == ["TFL101"]
    p = _run([py, "-m", "tflint", "rule", "TFL101"], cwd=work)
    assert p.returncode == 0 and "map-without-parallel-calls" in p.stdout
    # TensorFlow is not a dependency of the static checker
    p = _run([py, "-c", "import importlib.util as u; print(u.find_spec('tensorflow') is None)"], cwd=work)
    assert p.stdout.strip() == "True"
