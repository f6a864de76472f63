"""`tflint run NOTEBOOK.ipynb`: a notebook's code cells run in order as one script, as "Run All" runs them.

The cells are made Python the way `tflint check` reads notebooks (tflint.notebook: one line for one line, each
IPython line an inert `pass  # tflint-magic: ...`, a cell magic whose body is not Python left blank), written to a
temporary folder (never the user's project) and run from there with the notebook's folder first on `sys.path`.
The lines Jupyter would have run but Python cannot (`!pip install`, `%matplotlib inline`, a `%%bash` cell) are
skipped and listed; `%time STATEMENT` and `%timeit STATEMENT` run their statement. Runtime findings, and the
report's `file:line` references, are mapped back to the notebook's `cell N:ROW`, as `check` reports a notebook.
"""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..findings import Finding
from ..notebook import Notebook, NotebookError, transform_cell

_TIMED = re.compile(r"^(\s*)pass  # tflint-magic: %(?:time|timeit)\s+(\S.*)$")
_MAGIC_LINE = "# tflint-magic"


class NotebookRunError(Exception):
    pass


@dataclass
class NotebookRun:
    notebook: str  # the path as the user gave it
    nb: Notebook
    script: str  # the runnable text's temporary file
    folder: str  # its temporary folder, removed after the run
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {"cell", "line", "text"} Jupyter-only lines

    def locate(self, line: int) -> tuple[Optional[int], int]:
        return self.nb.locate(line)

    def rename(self, text: str) -> str:
        """`TMP/NAME.py:ROW` (absolute or as displayed) in a message or the text report -> `NOTEBOOK:cell N:ROW`."""
        def repl(m: re.Match) -> str:
            cell, row = self.locate(int(m.group(1)))
            return f"{self.notebook}:cell {cell}:{row}" if cell is not None else f"{self.notebook}:{m.group(1)}"

        forms = {self.script, os.path.basename(self.script)}  # as displayed: absolute, or its name alone
        for shown in sorted(forms, key=len, reverse=True):
            text = re.sub(r"(?<![\w./-])" + re.escape(shown) + r":(\d+)", repl, text)
        return text.replace(self.script, self.notebook)

    def map_report(self, obj: Any) -> Any:
        """The JSON report with the temporary file's locations made the notebook's (`file`, `cell`, `line`)."""
        if isinstance(obj, dict):
            out = {k: self.map_report(v) for k, v in obj.items()}
            for file_key, line_key, cell_key in (("file", "line", "cell"), ("loop_file", "loop_line", "loop_cell"),
                                                 ("dataset_file", "dataset_line", "dataset_cell"),
                                                 ("fetch_file", "fetch_line", "fetch_cell")):
                if obj.get(file_key) == self.script and isinstance(obj.get(line_key), int):
                    cell, row = self.locate(obj[line_key])
                    out[file_key], out[line_key], out[cell_key] = self.notebook, row, cell
            return out
        if isinstance(obj, list):
            return [self.map_report(v) for v in obj]
        if isinstance(obj, str) and self.script in obj:
            return self.rename(obj)
        return obj

    def map_finding(self, f: Finding) -> Finding:
        if f.cell is not None:
            return f
        if os.path.abspath(f.filename) != self.script:
            return f
        mapped = self.nb.map_finding(f)
        return mapped.with_changes(filename=self.notebook, message=self.rename(f.message))

    def note(self) -> str:
        """The skipped lines, for the text report."""
        if not self.skipped:
            return ""
        shown = ", ".join(f"cell {s['cell']}:{s['line']} `{s['text']}`" if s.get("line") else
                          f"cell {s['cell']} (`{s['text']}`, the whole cell)" for s in self.skipped[:6])
        more = f", and {len(self.skipped) - 6} more" if len(self.skipped) > 6 else ""
        return (f"Skipped {len(self.skipped)} line(s) that Jupyter runs but Python cannot (shell commands and "
                f"magics): {shown}{more}.")


def prepare(notebook: str) -> NotebookRun:
    """Parse the notebook and write its runnable text to a temporary folder. NotebookRunError when it cannot run."""
    try:
        raw = Path(notebook).read_text(encoding="utf-8")
        nb = Notebook.parse(raw, notebook)
    except (OSError, UnicodeDecodeError, NotebookError) as exc:
        raise NotebookRunError(str(exc)) from None
    if not nb.code_cells:
        raise NotebookRunError(f"{notebook}: no Python code cells to run")
    if nb.cell_errors:
        e = nb.cell_errors[0]
        raise NotebookRunError(f"{notebook}: cell {e.cell} is not Python ({e.message} at line {e.row}): Jupyter's "
                               "\"Run All\" would stop there too")
    lines = nb.text.split("\n")
    skipped: list[dict[str, Any]] = []
    for k, src in enumerate(nb.sources):
        cell_no = nb.code_cells[k] + 1
        t = transform_cell(src)
        first, _ = nb.cell_rows[k]
        if t.kind == "skipped":
            head = next((ln.strip() for ln in src.split("\n") if ln.strip()), "")
            skipped.append({"cell": cell_no, "line": None, "text": head})
            continue
        for i, out in enumerate(t.lines):
            m = _TIMED.match(out)
            if m:  # `%time STATEMENT`: the statement runs (timing it is Jupyter's)
                lines[first - 1 + i] = m.group(1) + m.group(2)
            elif _MAGIC_LINE in out and out.lstrip().startswith("pass  "):
                skipped.append({"cell": cell_no, "line": i + 1, "text": src.split("\n")[i].strip()})
    folder = tempfile.mkdtemp(prefix="tflint-run-notebook-")
    script = os.path.join(os.path.realpath(folder), Path(notebook).stem + ".py")
    Path(script).write_text("\n".join(lines), encoding="utf-8")
    return NotebookRun(notebook, nb, script, folder, skipped)
