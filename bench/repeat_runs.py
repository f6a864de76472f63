"""What the repeat-run benchmarks share (bench/inspect_repeat.py, verify_repeat.py, run_repeat.py): one tflint
command in a process of its own, timed, and the table they print."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tflint(args: list[str], timeout: float = 900) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m tflint ARGS` from the checkout's root, TensorFlow's logging quiet: (the process, wall seconds)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tflint", *args], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=timeout)
    return proc, time.perf_counter() - t0


def print_table(head: list[str], rows: list[list]) -> None:
    """The load average at the end of the runs, then `rows` under `head` in aligned columns."""
    if hasattr(os, "getloadavg"):
        print(f"load average at end: {os.getloadavg()[0]:.1f}")
    table = [head] + rows
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))
