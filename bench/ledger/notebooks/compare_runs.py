"""Before/after counts of `tflint check --output-format json` runs over a notebook corpus (issue 22).

    python bench/ledger/notebooks/compare_runs.py RESULTS_DIR CORPUS_DIR

RESULTS_DIR holds {before,after}-{TFL001,default,ALL}-<repo>.json, each the JSON output of
`tflint check --no-cache --exit-zero [--select TFL001 | --select ALL] --output-format json .` run inside
CORPUS_DIR/<repo>. Only findings in .ipynb files count. "Blinded" notebooks are those with a TFL001 before (then
the whole notebook was one syntax error). TFL001 after = the CLI's TFL001 plus the CellErrors of tflint.notebook
(which the api layer turns into TFL001 findings).
"""
from __future__ import annotations

import collections
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))

from tflint.notebook import Notebook  # noqa: E402


def load(results: str, when: str, sel: str, repo: str) -> list[dict]:
    with open(os.path.join(results, f"{when}-{sel}-{repo}.json")) as fh:
        return [f for f in json.load(fh) if f["filename"].endswith(".ipynb")]


def main() -> int:
    results, corpus = sys.argv[1], sys.argv[2]
    repos = sorted({os.path.basename(p)[len("before-TFL001-"):-5] for p in glob.glob(os.path.join(results, "before-TFL001-*.json"))})
    total = collections.Counter()
    for repo in repos:
        b001 = load(results, "before", "TFL001", repo)
        a001 = load(results, "after", "TFL001", repo)
        blinded = {f["filename"] for f in b001}
        cell_errors = 0
        for root, _, files in os.walk(os.path.join(corpus, repo)):
            for fn in files:
                if fn.endswith(".ipynb"):
                    with open(os.path.join(root, fn), encoding="utf-8") as fh:
                        cell_errors += len(Notebook.parse(fh.read()).cell_errors)
        row = {"TFL001 before": len(b001), "blinded notebooks": len(blinded), "TFL001 after (CLI)": len(a001),
               "CellErrors after": cell_errors}
        for sel in ("default", "ALL"):
            for when in ("before", "after"):
                fs = [f for f in load(results, when, sel, repo) if f["code"] != "TFL001"]
                row[f"{sel} {when} (all notebooks, no TFL001)"] = len(fs)
                row[f"{sel} {when} (blinded notebooks, no TFL001)"] = sum(f["filename"] in blinded for f in fs)
        print(repo, json.dumps(row, indent=1))
        total.update(row)
    print("TOTAL", json.dumps(dict(total), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
