"""Safe means proven by running: every fixable rule's fixes, executed under TensorFlow and compared.

Cases live in fixtures/equivalence/<rule-name>/<context>.py. Each is a runnable module with a `make` factory (the
`tflint verify` contract: it returns a dataset, `(fn, args)`, `(fn, args, kwargs)` or `(fn, calls)`) and a literal

    __tflint_equivalence__ = {"rule": "TFL101", "target": "2.4", "safe": "equivalent", "unsafe": "none"}

(`select` adds rules a case needs beside its own, e.g. TFL002 reports a stale `noqa` only when its rule runs;
`reported`, when given, says whether the rule reports the case at all: a context where the finding stays but no fix
is offered, or where the rule is silent, e.g. compatibility code.)

`safe` is what the rule's safe fixes do to the file, `unsafe` what all its fixes together (unsafe included) do when
they add anything to the safe ones ("none" when they do not):
- "equivalent": the fix applies and the fixed module computes the same values, dtypes, shapes and element_spec;
- "none": no fix of that kind is offered in this context (the file is left as it is);
- "differs" / "broken" / "random" (unsafe only): the fix applies and its outputs differ / it raises where the
  original ran / the outputs are random, so equality cannot be claimed. These are what make a fix unsafe; a case
  says which, so that a fix that starts breaking code silently fails here.
A safe fix is never allowed anything but "equivalent" or "none". Where the outcome of an unsafe fix depends on
scheduling (random ops run in parallel draw in whatever order the threads take), `unsafe` may list the outcomes
it can have, e.g. ["random", "equivalent"]; there "differs" counts as "random" (two runs of such a side can agree by
chance, on a loaded machine), and a case whose pipeline allows any order says `"any_order": True` to compare the
elements as multisets.

A case whose original uses an API today's TensorFlow/Keras removed (`"original": "removed-api"`: the original
cannot run here) expects "runs" instead: the fixed code runs, deterministically, with outputs to compare.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from tflint.config import Config, parse_version
from tflint.engine import Settings, check_text, fix_text
from tflint.registry import default_registry

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "equivalence"
OUTCOMES = {"equivalent", "none", "differs", "broken", "random", "runs"}
# rules whose fixes only touch comments (checked by comparing syntax trees, nothing to run)
COMMENT_ONLY = {"TFL002"}


@dataclass
class Case:
    path: Path
    rule: str
    text: str
    options: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"

    def settings(self, unsafe: bool) -> Settings:
        cfg = Config(target_explicit=True)
        if self.options.get("target"):
            cfg.target_version = parse_version(str(self.options["target"]), str(self.path))
        if self.options.get("rule-options"):  # e.g. {"aliases": True}: the rule's own options, as pyproject sets them
            cfg.rule_options = {default_registry().get(self.rule).name: dict(self.options["rule-options"])}
        select = [self.rule, *self.options.get("select", [])]  # a rule that needs others (TFL002: a stale noqa)
        return Settings.create(default_registry(), cfg, select=select, unsafe_fixes=unsafe)

    def fixed(self, unsafe: bool) -> str:
        result = fix_text(self.text, str(self.path), self.settings(unsafe))
        assert not result.errors, result.errors
        return result.text


def _options(text: str, name: str) -> Optional[dict]:
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def load_cases() -> list[Case]:
    out = []
    for path in sorted(CASES.glob("*/*.py")):
        if path.name.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8")
        opts = _options(text, "__tflint_equivalence__")
        assert opts is not None, f"{path}: no __tflint_equivalence__"
        out.append(Case(path, opts["rule"], text, opts))
    return out


ALL = load_cases()


def _outcomes(value) -> set[str]:
    return set(value) if isinstance(value, list) else {value}


def _fix_kinds(meta) -> set[str]:
    fix = meta.raw.get("fix")
    kinds = set(fix) if isinstance(fix, list) else {fix}
    return kinds & {"safe", "unsafe"}


def test_every_fixable_rule_has_cases_for_each_kind_of_fix_it_offers():
    registry = default_registry()
    missing = []
    for meta in registry:
        kinds = _fix_kinds(meta)
        if not kinds:
            continue
        cases = [c for c in ALL if c.rule == meta.code]
        if not cases:
            missing.append(f"{meta.code} {meta.name}: no case")
            continue
        assert all(c.path.parent.name == meta.name for c in cases), [str(c.path) for c in cases]
        if "safe" in kinds and not any(c.options["safe"] != "none" for c in cases):
            missing.append(f"{meta.code} {meta.name}: no case where its safe fix applies")
        if "unsafe" in kinds and not any(c.options["unsafe"] != "none" for c in cases):
            missing.append(f"{meta.code} {meta.name}: no case where an unsafe fix applies")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_case_is_well_formed_and_its_fixes_apply_as_it_says(case: Case):
    removed = case.options.get("original") == "removed-api"
    assert case.options.get("safe") in ({"runs", "none"} if removed else {"equivalent", "none"}), \
        "a safe fix may only be equivalent (or not offered)"
    unsafe_outcomes = _outcomes(case.options.get("unsafe"))
    assert unsafe_outcomes and unsafe_outcomes <= OUTCOMES and ("none" not in unsafe_outcomes or len(unsafe_outcomes) == 1)
    assert not removed or unsafe_outcomes <= {"runs", "none"}
    assert default_registry().get(case.rule) is not None
    safe, unsafe = case.fixed(False), case.fixed(True)
    assert (safe != case.text) == (case.options["safe"] != "none"), \
        f"safe fix {'not ' if safe == case.text else ''}applied:\n{safe}"
    unsafe_applies = unsafe != safe
    assert unsafe_applies == (case.options["unsafe"] != "none"), f"unsafe fix {'not ' if not unsafe_applies else ''}applied:\n{unsafe}"
    for text in (safe, unsafe):
        compile(text, str(case.path), "exec")  # every fix parses
    if "reported" in case.options:
        codes = {f.code for f in check_text(case.text, str(case.path), case.settings(False)).findings}
        assert (case.rule in codes) == case.options["reported"], codes
    if case.rule in COMMENT_ONLY:
        assert ast.dump(ast.parse(safe)) == ast.dump(ast.parse(case.text))


_STATUS = {"equivalent": "equivalent", "not equivalent": "differs", "broken": "broken", "not comparable": "random"}


@pytest.mark.slow
def test_fixes_run_and_compute_what_the_cases_say():
    pytest.importorskip("tensorflow")
    from tflint.registry import default_registry as reg
    from tflint.runtime.equivalence import Pair, run_pairs
    from tflint.runtime.verify import order_changing

    registry = reg()
    pairs, expected = [], []
    for case in ALL:
        if case.rule in COMMENT_ONLY:
            continue
        verify_opts = _options(case.text, "__tflint_verify__") or {}
        # a case whose pipeline allows any order (`experimental_deterministic = False`) compares multisets: which
        # order a parallel read yields depends on thread timing, and two runs may agree by chance
        ordered = not order_changing([case.rule], registry) and not case.options.get("any_order", False)
        rtol, atol = float(verify_opts.get("rtol", 1e-5)), float(verify_opts.get("atol", 1e-6))
        safe = case.fixed(False)
        for kind, text, base in (("safe", safe, case.text), ("unsafe", case.fixed(True), safe)):
            if text == base:
                continue  # nothing (new) to run
            if case.options.get("original") == "removed-api":  # the fixed code runs, against itself
                pairs.append(Pair(f"{case.id} [{kind}]", case.path, text, text, ordered=ordered, rtol=rtol, atol=atol))
                expected.append({"equivalent" if o == "runs" else o for o in _outcomes(case.options[kind])})
                continue
            pairs.append(Pair(f"{case.id} [{kind}]", case.path, case.text, text, ordered=ordered, rtol=rtol, atol=atol))
            expected.append(_outcomes(case.options[kind]))
    results = run_pairs(pairs)
    wrong = []
    for pair, want, got in zip(pairs, expected, results):
        status = _STATUS.get(got.status, got.status)
        if status == "differs" and "random" in want:
            # two seeded runs of a side that depends on thread scheduling can agree by chance, and then its
            # outputs are compared as if deterministic: "equality cannot be claimed" either way
            status = "random"
        if status not in want:
            wrong.append(f"{pair.label}: expected {' or '.join(sorted(want))}, got {got.status}: {got.detail}")
    assert len(results) == len(pairs)
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_the_seed_mixed_precision_example_scales_its_loss_once_fixed(tmp_path):
    """Flagged (TFL402: scaling on a plain optimizer does nothing; TFL403: removed Keras 2 API), fixed with
    `check --fix --unsafe-fixes`, and the fixed step, run on today's TensorFlow + Keras 3 with the policy set on CPU,
    scales its loss by LossScaleOptimizer's initial 2**15."""
    import json
    import subprocess
    import sys

    pytest.importorskip("tensorflow")
    src = CASES / "removed-loss-scale-api" / "plain_optimizer.py"
    f = tmp_path / "seed.py"
    f.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    run = [sys.executable, "-m", "tflint", "check", "--no-cache", "--select", "TFL402,TFL403", "--target-version", "2.21"]
    found = subprocess.run(run + ["--output-format", "json", str(f)], capture_output=True, text=True, timeout=300)
    codes = sorted({d["code"] for d in json.loads(found.stdout)})
    assert codes == ["TFL402", "TFL403"], found.stdout
    fixed = subprocess.run(run + ["--fix", "--unsafe-fixes", str(f)], capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    text = f.read_text(encoding="utf-8")
    assert "LossScaleOptimizer(tf.keras.optimizers.Adam())" in text and ".get_scaled_loss(" not in text
    probe = ("import importlib.util, sys\n"
             f"spec = importlib.util.spec_from_file_location('seed', {str(f)!r})\n"
             "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
             "fn, calls = m.make()\n"
             "import json; print('RATIOS', json.dumps([float(fn(*a)) for a in calls]))\n")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    line = next(ln for ln in ran.stdout.splitlines() if ln.startswith("RATIOS"))
    assert json.loads(line.split(" ", 1)[1]) == [32768.0] * 3
