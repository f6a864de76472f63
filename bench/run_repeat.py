"""Does `tflint run` name the same problems every time? Each example in examples/run/ and its fixed version run
under `tflint run --json` N times (5 by default), each run a separate process, one after the other so the runs do
not compete with each other for the CPU.

    python bench/run_repeat.py                        # every example and its fixed version, 5 runs each
    python bench/run_repeat.py --runs 3 mirrored_parse

Prints one row per script: the findings of each run (`code@line`), whether every planted problem was named in
every run, at its line and with its cause (the argument that changed, the read, the stage that limits the
input), whether anything else was reported in any run, and the range over the runs of the largest share of time a
loop or `fit` waited for its input (TFL809 needs 50% by default: how far each verdict was from flipping). A
benchmark, not a test: input-boundness is a timing, and this shows how it holds on the machine at hand. Exits 0
unless a run failed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repeat_runs import ROOT, print_table, tflint  # a sibling module of the benchmark scripts
FOLDER = "examples/run"
# script -> the planted problems: (code, marker of the line the finding points at, what its message must say); in
# the latter, `{at:MARKER}` stands for `examples/run/SCRIPT.py:LINE` and `{line:MARKER}` for LINE, the line of MARKER
PLANTED: dict[str, list[tuple[str, str, list[str]]]] = {
    "fit_generator_input": [
        ("TFL809", "history = model.fit(", ["`from_generator()` at {at:train = tf.data.Dataset.from_generator(}"]),
    ],
    "custom_loop_retrace": [
        ("TFL801", "def train_step(", ["`step` is a Python value that changed"]),
        ("TFL810", "losses.append(loss.numpy())", ["`.numpy()` read a tensor's value back", "in the loop at line "
                                                                                         "{line:for x, y in train:}"]),
    ],
    "mirrored_parse": [
        ("TFL809", "dataset = dataset.batch(GLOBAL_BATCH_SIZE)",
         ["distributed dataset", "`map(parse)` at {at:dataset = dataset.map(parse)}", "`tf.io.parse_example`",
          "TFL107 at {at:dataset = dataset.map(parse)}"]),
    ],
}


def line_of(path: Path, marker: str) -> int:
    for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in text:
            return i
    raise SystemExit(f"{marker!r} not in {path}")


def expected(name: str) -> list[tuple[str, int, list[str]]]:
    path = ROOT / FOLDER / f"{name}.py"
    out = []
    for code, marker, says in PLANTED.get(name, []):
        texts = []
        for text in says:
            while "{" in text:
                head, _, rest = text.partition("{")
                inner, _, tail = rest.partition("}")
                kind, _, other = inner.partition(":")
                line = line_of(path, other)
                text = head + (f"{FOLDER}/{name}.py:{line}" if kind == "at" else str(line)) + tail
            texts.append(text)
        out.append((code, line_of(path, marker), texts))
    return out


def run_once(name: str) -> tuple[list[dict], float, str, float]:
    proc, wall = tflint(["run", "--json", f"{FOLDER}/{name}.py"])
    if proc.returncode not in (0, 1):
        return [], wall, f"error {proc.returncode}: {proc.stderr[-300:]}", 0.0
    out = json.loads(proc.stdout)
    report = out["report"]
    # how close the input-boundness verdict was: the largest share of time a loop or a fit waited for its input
    waited = max([it.get("wait_share") or 0.0 for it in report.get("iterators", [])]
                 + [fit.get("wait_share") or 0.0 for fit in report.get("fits", [])], default=0.0)
    return out["findings"], wall, "", waited


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("names", nargs="*", help="examples (without .py); default: all, each with its fixed version")
    args = ap.parse_args()
    names = []
    for name in args.names or list(PLANTED):
        names += [name, f"{name}_fixed"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"tflint run, {args.runs} runs per script ({FOLDER}); {os.cpu_count()} CPUs, {platform.python_version()}; "
          + (f"load average at start: {load:.1f}" if load is not None else ""))
    rows, failed = [], False
    for name in names:
        want = expected(name)
        got, walls, waits, planted_ok, extra = [], [], [], 0, 0
        for _ in range(args.runs):
            findings, wall, error, waited = run_once(name)
            walls.append(wall)
            waits.append(waited)
            if error:
                failed = True
                got.append("error")
                print(f"  {name}: {error}", file=sys.stderr, flush=True)
                continue
            named = {(f["code"], f["location"]["row"]): f["message"] for f in findings}
            hits = [(code, line) for code, line, says in want
                    if (code, line) in named and all(s in named[(code, line)] for s in says)]
            planted_ok += len(hits) == len(want)
            others = [key for key in named if key not in {(c, ln) for c, ln, _ in want}]
            extra += bool(others)
            got.append(" ".join(f"{c}@{ln}" for c, ln in sorted(named)) or "-")
            print(f"  {name}: {got[-1]} ({wall:.1f} s)", file=sys.stderr, flush=True)
        planted = " ".join(f"{c}@{ln}" for c, ln, _ in want) or "-"
        rows.append([f"{name}.py", planted, *got, f"{planted_ok}/{args.runs}" if want else "-",
                     "no" if not extra else f"yes ({extra}/{args.runs})",
                     f"{min(waits):.0%}–{max(waits):.0%}", f"{sum(walls) / len(walls):.1f}"])
    head = ["script", "planted", *[f"run {i + 1}" for i in range(args.runs)], "planted, line and cause",
            "anything else", "waited", "s/run"]
    print_table(head, rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
