"""What a file is to the analysis: a Python file, or a notebook whose code cells are Python.

Everything that reads, analyses or writes a file goes through a `Document`, so nothing else asks what a file's
extension is:

    doc = open_document(text, path)       # the one place a path's suffix picks the type
    findings = [*doc.own_findings, *doc.map_findings(check_text(doc.lint_text, path, settings).findings)]
    new_text = doc.render(fixed_lint_text)  # the file's text after fixes (DocumentError when it cannot be)

A document's `lint_text` is the Python the engine analyses (None when nothing in the file can be); `map_findings()`
maps the engine's findings back to the file's own coordinates (a cell and a row within it); `own_findings` are the
document's own (a notebook that is not valid JSON, a cell that does not compile). `render()` keeps every byte the fixes did not touch.
"""
from __future__ import annotations

import re
from typing import Callable, Optional, Sequence, TypeVar

from .engine import SYNTAX_ERROR
from .findings import Finding, Position

R = TypeVar("R")
# a line magic (`%matplotlib inline`), a cell magic (`%%time`) or a shell escape (`!pip install x`, `!!ls`)
_IPYTHON_LINE = re.compile(r"^(%%?[A-Za-z_]|!!?\S)")


class DocumentError(Exception):
    """A fixed text that cannot be written back into the file's own format; the message is for the user."""


# a script that says it was exported from a notebook (Colab's header, jupytext / VS Code cell markers)
_NOTEBOOK_EXPORT = re.compile(r"(?i)automatically generated (?:by|using) colab|colaboratory|^# In\[|^# %%|jupytext",
                              re.M)


def syntax_error(path: str, message: str, row: int = 1, column: int = 1, cell: Optional[int] = None,
                 source_line: Optional[str] = None) -> Finding:
    """A TFL001 finding (rows and columns 1-based)."""
    at = Position(max(row, 1), max(column, 1))
    return Finding(code=SYNTAX_ERROR, name="syntax-error", message=message, filename=path, cell=cell, location=at,
                   end_location=at, source_line=source_line)


class Document:
    """A Python file: the text is what is analysed, positions need no mapping."""

    suffixes: tuple[str, ...] = (".py", ".pyi")

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.lint_text: Optional[str] = text  # None: nothing in the file can be analysed
        self.own_findings: list[Finding] = []

    def map_findings(self, engine_findings: Sequence[Finding]) -> list[Finding]:
        """The engine's findings on `lint_text`, in the file's own coordinates. A syntax error on a line of IPython
        syntax says so: the file is a notebook cell saved as Python."""
        out = []
        for f in engine_findings:
            if f.code == SYNTAX_ERROR:
                if self._deliberate(f):
                    continue
                f = self._ipython_syntax(f)
            out.append(f)
        return out

    def _deliberate(self, f: Finding) -> bool:
        """Python 2 source or an exercise blank (tflint.unfinished): not a mistake, left out without a finding."""
        from .unfinished import not_a_mistake

        if not f.message.startswith("SyntaxError") or self.lint_text is None:
            return False
        lines = self.lint_text.splitlines()
        line = lines[f.location.row - 1] if 0 < f.location.row <= len(lines) else ""
        if line.lstrip().startswith(("!", "%")) and _NOTEBOOK_EXPORT.search(self.text):
            return True  # `!pip install` left in a script exported from a notebook (it says so): the notebook runs it
        return not_a_mistake(lines, f.location.row, f.message) is not None

    def _ipython_syntax(self, f: Finding) -> Finding:
        """`%matplotlib inline`, `%%time`, `!pip install x` where the parse failed: valid in a notebook cell, never in
        Python; the message names the magic and what to do instead of the parser's bare "invalid syntax"."""
        if not f.message.startswith("SyntaxError") or self.lint_text is None:
            return f
        lines = self.lint_text.splitlines()
        row = f.location.row
        line = lines[row - 1].strip() if 0 < row <= len(lines) else ""
        if not _IPYTHON_LINE.match(line):
            return f
        magic = line.split()[0][:40]
        return f.with_changes(message=f"SyntaxError: IPython syntax (`{magic}`) in a .py file: this looks like a "
                                      "notebook cell saved as Python; save it as a notebook (.ipynb) or remove the "
                                      "magic")

    def reported_own(self, settings) -> list[Finding]:
        """The document's own findings (TFL001 for a broken notebook or cell) when the run selects TFL001."""
        return self.own_findings if SYNTAX_ERROR in settings.codes_for(self.path) else []

    def render(self, fixed_lint_text: str) -> str:
        return fixed_lint_text

    def analyse(self, run: Callable[[str], R]) -> R:
        """`run(lint_text)` (a check or a fix whose result has `syntax_error`), run again without each part of the
        text that does not parse, as long as the document can leave such a part out."""
        result = run(self.lint_text)
        while result.syntax_error is not None and self.exclude(result.syntax_error):
            result = run(self.lint_text)
        return result

    def exclude(self, error: Finding) -> bool:
        """Leave out the part of the text that holds this syntax error and analyse the rest (a notebook's cell);
        False when there is no such part (a Python file is one piece)."""
        return False


class NotebookDocument(Document):
    """A Jupyter notebook: its Python code cells are joined into one text (tflint.notebook); findings are
    reported on their cell, a cell that does not compile is one TFL001 and left out, and fixes rewrite only the
    `source` of the cells they change."""

    suffixes = (".ipynb",)

    def __init__(self, text: str, path: str, notebook=None) -> None:
        from .notebook import Notebook, NotebookError

        super().__init__(text, path)
        self.notebook = notebook
        if notebook is None:
            try:
                self.notebook = Notebook.parse(text, path)
            except NotebookError as exc:
                self.lint_text = None
                self.own_findings = [syntax_error(path, str(exc).split(": ", 1)[-1])]
                return
        self.lint_text = self.notebook.text
        self.own_findings = [] if self.notebook.python2 else [
            syntax_error(path, e.message, e.row, e.column, cell=e.cell) for e in self.notebook.cell_errors
            if not self._deliberate_cell(e)
        ]

    def exclude(self, error: Finding) -> bool:
        if not self.notebook.exclude_cell_at(error.location.row, error.location.column, error.message):
            return False
        e = self.notebook.cell_errors[-1]
        if not self.notebook.python2 and not self._deliberate_cell(e):
            self.own_findings.append(syntax_error(self.path, e.message, e.row, e.column, cell=e.cell))
        self.lint_text = self.notebook.text
        return True

    def _deliberate_cell(self, e) -> bool:
        """A cell that does not compile on purpose: an exercise blank, a citation or R (tflint.unfinished), or, in a
        Colab notebook, a cell magic after comment lines (Colab runs `# note\\n%%html\\n<p>...`; IPython would not). Python 2 is
        decided by the kernel the notebook was saved with (`Notebook.python2`): under a Python 3 kernel, `print x`
        fails when the user runs the cell."""
        from .unfinished import citation, exercise_blank, r_code

        k = next((k for k, index in enumerate(self.notebook.code_cells) if index + 1 == e.cell), None)
        if k is None:
            return False
        lines = self.notebook.sources[k].split("\n")
        if self.notebook.colab:
            first = next((ln for ln in lines if ln.strip() and not ln.strip().startswith("#")), "")
            if first.startswith("%%"):  # at the start of its line: ` %%time` indented is another matter
                return True
            from .notebook import runs_on_ipython8

            if runs_on_ipython8(self.notebook.sources[k]):
                return True  # Colab's IPython 7.34 dedents by the first line: ` %%time`, ` params = {` run there
        return exercise_blank(lines, e.row, e.message) or citation(lines) or r_code(lines)


    @classmethod
    def from_cells(cls, sources: list[str], path: str) -> "NotebookDocument":
        """A notebook known only by its code cells' sources (an editor's open notebook): cell k is sources[k]."""
        from .notebook import Notebook

        return cls("", path, Notebook.from_sources(sources))

    def map_findings(self, engine_findings: Sequence[Finding]) -> list[Finding]:
        return [self.notebook.map_finding(f) for f in engine_findings]

    def cell_texts(self, fixed_lint_text: str) -> list[str]:
        """The source of every code cell after fixes (DocumentError when a cell boundary was lost)."""
        from .notebook import fixed_sources

        sources = fixed_sources(self.notebook, fixed_lint_text)
        if sources is None:
            raise DocumentError("the fixed text lost a cell boundary; notebook not written")
        return sources

    def render(self, fixed_lint_text: str) -> str:
        from .notebook import NotebookError, render_fixed

        try:
            return render_fixed(self.notebook, fixed_lint_text)
        except NotebookError as exc:
            raise DocumentError(str(exc)) from None


DOCUMENT_TYPES: tuple[type[Document], ...] = (NotebookDocument, Document)
SUFFIXES: tuple[str, ...] = tuple(s for t in DOCUMENT_TYPES for s in t.suffixes)


def document_type(path: str) -> type[Document]:
    """The type of document a path names: a notebook by its suffix, anything else (stdin, `<string>`) Python."""
    for t in DOCUMENT_TYPES:
        if path.endswith(t.suffixes):
            return t
    return Document


def open_document(text: str, path: str) -> Document:
    return document_type(path)(text, path)
