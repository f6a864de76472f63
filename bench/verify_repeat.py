"""How often `tflint verify` gives the same verdict: each case verified N times (5 by default), each run a separate
`tflint verify --json FILE::FACTORY` (its own process, its own two workers), one after the other so that the runs
never compete with each other for the CPU.

    python bench/verify_repeat.py                        # the cases below, 5 runs each, verify's defaults
    python bench/verify_repeat.py --runs 3 aa-function eager-train-step
    python bench/verify_repeat.py --budget 8 --save /tmp/runs    # shorter runs; keep each run's JSON

Cases: bench pairs whose fix has a real effect of 1.5x or more on a 2-core machine (expected `faster`), A/A pairs
whose "fixed" side is exactly the same work (fixtures/runtime/verify_aa.py; expected `no difference`), and a pair
whose fix measures ~1x (expected `no difference`, `inconclusive` is honest too; never `faster` or `slower`).

Prints one row per case: each run's verdict, median speedup, the median's 90% confidence interval and the number of
pairs (of the measurement that decides: the defaults, the first mode), the expected verdict, how many runs agreed
with the most common verdict, and how many gave an expected one.
A benchmark, not a test: it prints numbers and always exits 0 unless a run failed. Its latest
output is kept beside it, in bench/verify_repeat.txt (`python bench/verify_repeat.py > bench/verify_repeat.txt`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repeat_runs import print_table, tflint  # a sibling module of the benchmark scripts
FASTER, SAME, INCONCLUSIVE = "faster", "no difference", "inconclusive"

# name -> (FILE::FACTORY, the verdicts a correct measurement may give; the first is the one expected)
CASES = {
    "eager-train-step": ("fixtures/bench/eager-train-step.py::make", (FASTER,)),
    "python-scalar-argument": ("fixtures/bench/python-scalar-argument.py::make", (FASTER,)),
    "function-created-in-loop": ("fixtures/bench/function-created-in-loop.py::make", (FASTER,)),
    "repeated-tensor-expression": ("fixtures/bench/repeated-tensor-expression.py::make", (FASTER,)),
    "per-example-parsing": ("fixtures/bench/per-example-parsing.py::make", (FASTER,)),
    "python-generator-input": ("fixtures/bench/python-generator-input.py::make", (FASTER,)),
    "aa-function": ("fixtures/runtime/verify_aa.py::aa_function", (SAME,)),
    "aa-dataset": ("fixtures/runtime/verify_aa.py::aa_dataset", (SAME,)),
    "tensor-dependent-python-branch": ("fixtures/bench/tensor-dependent-python-branch.py::make", (SAME, INCONCLUSIVE)),
}


def run_once(target: str, budget: float | None, save: Path | None, tag: str) -> tuple[str, str, float]:
    """One `tflint verify --json` process: (verdict, median speedup as text, wall seconds)."""
    proc, wall = tflint(["verify", "--json", target, *(["--budget", str(budget)] if budget is not None else [])],
                        timeout=1800)
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{tag}.json").write_text(proc.stdout)
    if proc.returncode not in (0, 1):
        return f"error {proc.returncode}", "-", wall
    results = json.loads(proc.stdout).get("results") or []
    # the combined variant (the last one) is what the pair verifies; its first measurement decides
    r = results[-1] if results else None
    m = r["measurements"][0] if r and r.get("measurements") else None
    if m is None:
        return (r or {}).get("status") or "nothing", "-", wall
    sp = m.get("speedup")
    # the median speedup, its confidence interval and the number of pairs: what the verdict was read from
    shown = f"{sp['median']:.2f}x ({sp['ci_low']:.2f}-{sp['ci_high']:.2f}, {sp['pairs']}p)" if sp else "-"
    return m["verdict"], shown, wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=None, help="verify's --budget (default: verify's own)")
    ap.add_argument("--save", type=Path, default=None, help="write each run's JSON into this folder")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    names = args.names or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(CASES)}", file=sys.stderr)
        return 2
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"tflint verify, {args.runs} runs per case"
          + (f", --budget {args.budget:g}" if args.budget is not None else ", verify's default budget")
          + (f"; load average at start: {load:.1f}" if load is not None else ""))
    rows, failed = [], False
    for name in names:
        target, ok = CASES[name]
        got, cells, walls = [], [], []
        for i in range(args.runs):
            v, speed, wall = run_once(target, args.budget, args.save, f"{name}-{i + 1}")
            failed |= v.startswith("error")
            got.append(v)
            cells.append(f"{v} {speed}")
            walls.append(wall)
            print(f"  {name}: {v} {speed} ({wall:.1f} s)", file=sys.stderr, flush=True)
        common, n = Counter(got).most_common(1)[0]
        rows.append((name, " or ".join(ok), cells, f"{n}/{args.runs} {common}",
                     f"{sum(g in ok for g in got)}/{args.runs}", sum(walls) / len(walls)))
    head = ["case", "expected", *[f"run {i + 1}" for i in range(args.runs)], "agreement", "as expected", "s/run"]
    print_table(head, [[r[0], r[1], *r[2], r[3], r[4], f"{r[5]:.0f}"] for r in rows])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
