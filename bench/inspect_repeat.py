"""How often `tflint inspect` blames the same pipeline stage: each bundled example pipeline inspected N times
(5 by default), each run a separate `tflint inspect --json FILE::FACTORY` (its own process and TensorFlow import),
one after the other so the runs do not compete with each other for the CPU.

    python bench/inspect_repeat.py                    # the pipelines below, 5 runs each
    python bench/inspect_repeat.py --runs 3 cached_pipeline tiny_pipeline

Prints one row per pipeline: the verdict of each run (the stage TFL806 blamed, as `label@line`, or `none`, `too
few` when the sample was too small to judge, `disagreed` when the run's two measurements named different stages),
the verdict expected from how the pipeline was built, how many runs agreed with the most common verdict, and how
many gave the expected one. A benchmark, not a test: it prints numbers and always exits 0 unless a run failed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repeat_runs import ROOT, print_table, tflint  # a sibling module of the benchmark scripts
FILE = "fixtures/runtime/datasets.py"
# factory -> the verdict a correct analysis gives (a stage as `label@line-marker`, resolved to its line below)
EXPECTED = {
    "slow_python_map": ("map(lambda)", "TFL802 and TFL806"),
    "heavy_tf_map": (None, None),  # a 64x64 matmul: ~30 µs per element here, below TFL806's 50 µs
    "sequential_random_map": ("map(lambda)", "ds = ds.map(lambda x: tf.cast(x, tf.float32) + 0.0"),
    "generator_pipeline": ("from_generator()", "from_generator(_rows"),
    "cached_pipeline": ("map(lambda)", "tf.fill([256, 256], tf.cast"),
    "cheap_pipeline": (None, "none"),
    "tiny_pipeline": ("too few", None),
    "cache_never_fills": ("none", None),
}


def _line(marker: str) -> int:
    for i, text in enumerate((ROOT / FILE).read_text().splitlines(), start=1):
        if marker in text:
            return i
    raise SystemExit(f"{marker!r} not in {FILE}")


def expected(name: str) -> str:
    label, marker = EXPECTED[name]
    if label is None or label in ("none",):
        return "none"
    if label == "too few":
        return "too few"
    return f"{label}@{_line(marker)}"


def verdict(report: dict) -> str:
    findings = [f for f in report.get("findings", []) if f["code"] == "TFL806"]
    rep = report.get("report", {})
    if findings:
        line = findings[0]["location"]["row"]
        stage = next((s["label"] for s in rep.get("stages", []) if s.get("bottleneck")), "?")
        return f"{stage}@{line}"
    note = rep.get("bottleneck_note") or ""
    if note.startswith("too few"):
        return "too few"
    if "disagreed" in note:
        return "disagreed"
    return "none"


def run_once(name: str) -> tuple[str, float]:
    proc, wall = tflint(["inspect", "--json", f"{FILE}::{name}"])
    if proc.returncode not in (0, 1):
        return f"error {proc.returncode}", wall
    return verdict(json.loads(proc.stdout)), wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("names", nargs="*", default=list(EXPECTED))
    args = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"tflint inspect, {args.runs} runs per pipeline ({FILE}); load average at start: {load:.1f}" if load
          is not None else "")
    rows = []
    for name in args.names:
        got, walls = [], []
        for _ in range(args.runs):
            v, wall = run_once(name)
            got.append(v)
            walls.append(wall)
            print(f"  {name}: {v} ({wall:.1f} s)", file=sys.stderr, flush=True)
        exp = expected(name)
        common, n = Counter(got).most_common(1)[0]
        rows.append((name, exp, got, f"{n}/{args.runs} {common}", f"{sum(g == exp for g in got)}/{args.runs}",
                     sum(walls) / len(walls)))
    head = ["pipeline", "expected", *[f"run {i + 1}" for i in range(args.runs)], "agreement", "as expected", "s/run"]
    print_table(head, [[r[0], r[1], *r[2], r[3], r[4], f"{r[5]:.1f}"] for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
