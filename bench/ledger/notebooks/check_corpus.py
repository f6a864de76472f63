"""Compare tflint's reading of notebook cells with IPython's own, on every code cell of a corpus of notebooks.

    python bench/ledger/notebooks/check_corpus.py DIR [DIR ...] [--json OUT]

For each code cell of each .ipynb under each DIR, two verdicts:
- ours: tflint.notebook.transform_cell(source).kind: "python" (compiles), "error" (a CellError, reported as TFL001)
  or "skipped" (a cell magic whose body is not Python);
- IPython's: a fresh InteractiveShell's transform_cell (TransformerManager, plus automagic for a one-line cell), then
  compile(..., PyCF_ALLOW_TOP_LEVEL_AWAIT): "python" or "error". A cell magic is judged by its body the way IPython
  runs it: the body of a cell magic that runs Python (%%time, %%capture, %%writefile x.py...) through the shell's
  transform again; any other cell magic is "skipped" by both (listed by magic name).
Prints counts and every disagreement (a disagreement is any cell where the two verdicts differ). Needs IPython.
"""
from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))

from tflint.notebook import Notebook, NotebookError, transform_cell  # noqa: E402


def make_shell():
    os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp(prefix="ipydir"))
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    c = Config()
    c.HistoryManager.enabled = False
    return InteractiveShell.instance(config=c)


def ipython_verdict(shell, src: str, depth: int = 0) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = shell.transform_cell(src)
    except Exception:  # IPython's transformer raising (e.g. IndentationError from its tokenizer): the cell fails
        return "error"
    if out.startswith("get_ipython().run_cell_magic(") and depth < 3:
        try:
            call = ast.parse(out).body[0].value  # type: ignore[attr-defined]
            name, line, body = (a.value for a in call.args)
        except Exception:
            return "error"
        if runs_python(name, line):
            return ipython_verdict(shell, body, depth + 1)
        return "skipped"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(out, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return "error"
    return "python"


def runs_python(name: str, line: str) -> bool:
    """The cell magics whose body IPython (or a common extension) runs as Python."""
    from tflint.notebook import PYTHON_CELL_MAGICS

    words = line.split()
    if name in ("writefile", "file"):
        target = next((w for w in words if not w.startswith("-")), "")
        return target.strip("'\"").endswith(".py")
    if name == "script":
        return bool(words) and os.path.basename(words[0]).startswith("python") and words[0][-1:] != "2"
    return name in PYTHON_CELL_MAGICS


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--json", help="write per-cell verdicts of the disagreements and the counts here")
    args = ap.parse_args()
    shell = make_shell()
    counts: collections.Counter = collections.Counter()
    skipped_magics: collections.Counter = collections.Counter()
    disagreements = []
    per_dir = {}
    for d in args.dirs:
        nb_count = cell_count = 0
        for root, dirs, files in os.walk(d):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for fn in sorted(files):
                if not fn.endswith(".ipynb"):
                    continue
                path = os.path.join(root, fn)
                try:
                    with open(path, encoding="utf-8") as fh:
                        nb = Notebook.parse(fh.read(), path)
                except (NotebookError, UnicodeDecodeError, OSError):
                    counts["unreadable notebooks"] += 1
                    continue
                nb_count += 1
                for index, src in zip(nb.code_cells, nb.sources):
                    cell_count += 1
                    t = transform_cell(src)
                    theirs = ipython_verdict(shell, src)
                    counts[f"ours={t.kind} ipython={theirs}"] += 1
                    if t.kind == "skipped":
                        skipped_magics[t.magic] += 1
                    if t.kind != theirs:
                        disagreements.append({"file": os.path.relpath(path, d), "dir": d, "cell": index + 1,
                                              "ours": t.kind, "ipython": theirs, "error": t.error, "source": src})
        per_dir[d] = {"notebooks": nb_count, "code_cells": cell_count}
    for d, c in per_dir.items():
        print(f"{d}: {c['notebooks']} notebooks, {c['code_cells']} code cells")
    for k, v in sorted(counts.items()):
        print(f"{k}: {v}")
    print("skipped cell magics:", dict(skipped_magics.most_common()))
    print(f"disagreements: {len(disagreements)}")
    for x in disagreements:
        print(f"--- {x['dir']}/{x['file']} cell {x['cell']}: ours={x['ours']} ipython={x['ipython']} {x['error'] or ''}")
        print("    " + "\n    ".join(x["source"].splitlines()[:12]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"per_dir": per_dir, "counts": counts, "skipped_magics": skipped_magics,
                       "disagreements": disagreements}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
