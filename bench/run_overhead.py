"""What observing a script with `tflint run` costs: each script run plain (`python SCRIPT`) and under
`tflint run --json`, interleaved in pairs, same session, same machine.

    python bench/run_overhead.py                  # the scripts below, 5 pairs each
    python bench/run_overhead.py --pairs 3 SCRIPT [SCRIPT...]

Per script, medians over the pairs of the observed / plain ratio of:
- `command`: the whole command's wall time: tflint's start-up (a second Python process, the configuration and
  rule registry, built while the script runs), the observed script, the measurement `tflint run` makes after a
  `model.fit` (the step on batches in memory, the pipeline alone), the report;
- `run`: the same less that measurement after the script (`report.timings.after_run_s`): what watching the script
  costs, the time the user waits for the script's own output to end;
- `loop`: the script's own timed loop, when it prints `loop_s=...` (the recorder's and the watches' cost alone).

Both sides run with the bytecode of tflint and TensorFlow cached (`PYTHONPYCACHEPREFIX`, a temporary folder), as
an installed package would; the shell's PYTHONDONTWRITEBYTECODE would otherwise make every start compile tflint.
The load average of the machine is printed before and after: read the ratios against it. The latest output is
kept beside this script, in bench/run_overhead.txt (`python bench/run_overhead.py > bench/run_overhead.txt`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLES = sorted((ROOT / "examples" / "run").glob("*.py"))
SCRIPTS = [HERE / "run_scripts" / "tiny_steps.py", HERE / "run_scripts" / "dense_loop.py",
           ROOT / "fixtures" / "runtime" / "run" / "keras_fit.py", *EXAMPLES]


def _env(cache: str) -> dict[str, str]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def once(cmd: list[str], env: dict[str, str]) -> tuple[float, float | None, float]:
    """(wall seconds, the script's loop_s if it printed one, tflint's measurement after the script)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    m = re.search(r"loop_s=([0-9.]+)", proc.stdout + proc.stderr)
    after = 0.0
    if "--json" in cmd:
        after = float(json.loads(proc.stdout)["report"]["timings"].get("after_run_s") or 0.0)
    return wall, float(m.group(1)) if m else None, after


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scripts", nargs="*", type=Path)
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="tflint-bench-pycache-")
    env = _env(cache)
    scripts = args.scripts or SCRIPTS
    # one untimed run of each side fills the bytecode cache
    once([sys.executable, str(scripts[0])], env)
    once([sys.executable, "-m", "tflint", "run", "--json", str(scripts[0])], env)
    print(f"load average at start: {load()}  ({os.cpu_count()} cores)")
    print(f"{'script':<30} {'plain s':>8} {'tflint s':>8} {'command':>8} {'run':>6} {'loop':>6}   pairs (command)")
    for script in scripts:
        plain, observed, ratios, run_ratios, loop_ratios = [], [], [], [], []
        for i in range(args.pairs):
            plain_cmd = [sys.executable, str(script)]
            run_cmd = [sys.executable, "-m", "tflint", "run", "--json", str(script)]
            if i % 2:  # alternate which side goes first
                b = once(run_cmd, env)
                a = once(plain_cmd, env)
            else:
                a = once(plain_cmd, env)
                b = once(run_cmd, env)
            plain.append(a[0])
            observed.append(b[0])
            ratios.append(b[0] / a[0])
            run_ratios.append((b[0] - b[2]) / a[0])
            if a[1] and b[1]:
                loop_ratios.append(b[1] / a[1])
        loop = f"{statistics.median(loop_ratios):.3f}" if loop_ratios else "-"
        print(f"{script.name:<30} {statistics.median(plain):>8.2f} {statistics.median(observed):>8.2f} "
              f"{statistics.median(ratios):>8.3f} {statistics.median(run_ratios):>6.3f} {loop:>6}   "
              f"({', '.join(f'{r:.2f}' for r in ratios)})", flush=True)
    print(f"load average at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
