"""Jupyter notebooks: code cells joined into one text, positions mapped back to (cell, row), and writes that
change only the bytes of the cells that were fixed.

Each code cell is made Python the way IPython does it (`%time`, `!pip install` with its `\\` continuations, `x?`,
`files = !ls`, a one-line `cd dir`, a cell indented as a whole), one line for one line: a magic becomes an inert line
(`pass  # tflint-magic: ...`) and the original line comes back on write. A cell magic whose body is not Python
(`%%bash`, `%%html`, `%%writefile notes.txt`...) is skipped. A cell that IPython itself could not run (it does not
compile even so) is a CellError: its rows are blank in the joined text, the other cells are analysed as usual, and
fixes never touch it. Cells are separated by a marker comment so that fixes which add or remove lines never blur
the cell boundaries.
"""
from __future__ import annotations

import ast
import difflib
import json
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Optional

from .findings import Edit, Finding, Fix, Position
from .source import CELL_MARKER

MARKER = CELL_MARKER
_MAGIC_RESTORE = re.compile(r"^(\s*)(?:pass  )?# tflint-magic(-raw)?: ?(.*)$")


class NotebookError(Exception):
    pass


@dataclass(frozen=True)
class CellError:
    """A code cell that is not Python even after IPython's own transformations: reported as one TFL001 for the
    cell and left out of the analysis (its rows are blank in the joined text; fixes never touch it)."""

    cell: int  # 1-based index of the cell in the notebook
    row: int  # 1-based row within the cell
    column: int  # 1-based
    message: str  # e.g. "SyntaxError: invalid syntax"


def _python2(metadata: dict) -> bool:
    """A notebook saved from a Python 2 kernel. Many such notebooks hold Python 3 code (the metadata of the kernel
    they were last saved with), so their cells are read as usual; a cell that does not compile is taken for Python
    2 (`print x`) and left out without a finding: the code is not wrong, only older than the parser."""
    spec = metadata.get("kernelspec") or {}
    info = metadata.get("language_info") or {}
    version = info.get("version") if isinstance(info, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    return (isinstance(version, str) and version.startswith("2.")) or name == "python2" or (
        isinstance(info, dict) and (info.get("codemirror_mode") or {}) == {"name": "ipython", "version": 2})


@dataclass
class Notebook:
    raw: str
    data: dict[str, Any]
    code_cells: list[int]  # indexes into data["cells"] of the Python code cells
    sources: list[str]  # the original source of each code cell
    text: str = ""  # the joined, magic-free text that is linted
    cell_rows: list[tuple[int, int]] = field(default_factory=list)  # (first row, last row) of each cell in text
    cell_errors: list[CellError] = field(default_factory=list)  # cells left out because they do not compile
    blanked: set[int] = field(default_factory=set)  # code cells (k into sources) left out after libcst rejected them
    python2: bool = False  # saved from a Python 2 kernel: a cell that does not compile is Python 2, not a mistake
    colab: bool = False  # saved by Colab (metadata `colab`), which runs a cell magic after comment lines

    def __post_init__(self) -> None:
        if self.text and not self.cell_errors:  # built from join_cells' output (the language server's path)
            self.cell_errors = _cell_errors(self.code_cells, self.sources)

    @classmethod
    def from_sources(cls, sources: list[str]) -> "Notebook":
        """A notebook of these code cells only (cell k is cell k + 1 of the notebook), as an editor holds it."""
        text, rows = join_cells(sources)
        return cls("", {}, list(range(len(sources))), list(sources), text, rows)

    @property
    def transforms(self) -> list["CellTransform"]:
        return [transform_cell(src) for src in self.sources]

    @classmethod
    def parse(cls, raw: str, path: str = "<notebook>") -> "Notebook":
        try:
            # an empty .ipynb (a generator's placeholder for a chapter with no code) is an empty notebook
            data = json.loads(raw) if raw.strip() else {"cells": []}
        except json.JSONDecodeError as exc:
            raise NotebookError(f"{path}: not a valid notebook: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells", None), list):
            raise NotebookError(f"{path}: not a valid notebook: no `cells` list")
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        kernel = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
        info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
        lang = kernel.get("language") or info.get("name") or _kernel_language(kernel.get("name")) or "python"
        code_cells: list[int] = []
        sources: list[str] = []
        if str(lang).lower() == "python":
            for i, cell in enumerate(data["cells"]):
                if isinstance(cell, dict) and cell.get("cell_type") == "code":
                    src = cell.get("source", "")
                    if isinstance(src, list):
                        src = "".join(s for s in src if isinstance(s, str))
                    if not isinstance(src, str):
                        continue
                    code_cells.append(i)
                    sources.append(src)
        if sum(1 for src in sources if _R_CODE.search(src)) >= 2:
            code_cells, sources = [], []  # R code under a Python kernelspec (copied metadata): not Python
        nb = cls(raw, data, code_cells, sources)
        nb.python2 = _python2(data.get("metadata") or {})
        nb.colab = isinstance(data.get("metadata"), dict) and "colab" in data["metadata"]
        nb.text, nb.cell_rows = join_cells(sources)
        nb.cell_errors = _cell_errors(code_cells, sources)
        return nb

    def exclude_cell_at(self, row: int, column: int, message: str) -> bool:
        """Leave out the cell holding joined-text `row`, which libcst cannot parse though CPython compiles it (rare:
        checked once on the joined text rather than cell by cell): it becomes a CellError, its rows blank, and fixes
        never touch it. False when the row is in no cell still analysed."""
        for k, (first, last) in enumerate(self.cell_rows):
            if first <= row <= last and k not in self.blanked and transform_cell(self.sources[k]).kind == "python":
                self.blanked.add(k)
                col = column + self._shift(row)
                self.cell_errors.append(CellError(self.code_cells[k] + 1, row - first + 1, col, message))
                self.text, self.cell_rows = join_cells(self.sources, self.blanked)
                return True
        return False

    def locate(self, row: int) -> tuple[Optional[int], int]:
        """Joined-text row -> (1-based cell index in the notebook, row within the cell)."""
        for k, (first, last) in enumerate(self.cell_rows):
            if first <= row <= last:
                return self.code_cells[k] + 1, row - first + 1
        # the separator row after a cell (a syntax error found at the end of a cell): that cell's last row
        for k, (first, last) in reversed(list(enumerate(self.cell_rows))):
            if row > last:
                return self.code_cells[k] + 1, last - first + 1
        return None, row

    def _shift(self, row: int) -> int:
        """Columns IPython's dedent removed from this joined-text row (a cell indented as a whole)."""
        for k, (first, last) in enumerate(self.cell_rows):
            if first <= row <= last:
                prefixes = transform_cell(self.sources[k]).prefixes
                return len(prefixes[row - first]) if row - first < len(prefixes) else 0
        return 0

    def map_finding(self, f: Finding) -> Finding:
        cell, row = self.locate(f.location.row)
        _, end_row = self.locate(f.end_location.row)
        if cell is None:
            return f
        shift, end_shift = self._shift(f.location.row), self._shift(f.end_location.row)
        fix = f.fix
        if fix is not None:
            edits = []
            for e in fix.edits:
                c1, r1 = self.locate(e.location.row)
                _, r2 = self.locate(e.end_location.row)
                if c1 != cell:
                    fix = None
                    break
                start = Position(r1, e.location.column + self._shift(e.location.row))
                end = Position(r2, e.end_location.column + self._shift(e.end_location.row))
                edits.append(Edit(e.content, start, end, e.start, e.end))
            else:
                fix = Fix(fix.applicability, fix.message, tuple(edits))
        return f.with_changes(
            cell=cell,
            location=Position(row, f.location.column + shift),
            end_location=Position(end_row, f.end_location.column + end_shift),
            fix=fix,
        )


# -- IPython syntax -> Python, one line for one line -------------------------------------------------------------
# IPython's own transformer (IPython.core.inputtransformer2.TransformerManager, plus the shell's automagic for a
# one-line cell) is the reference; this is an equivalent that does not need IPython and keeps every row (and, up to
# the cell's common indentation, every column) where it was, so findings map back and fixes write back exactly.
_MAGIC_TAG = "# tflint-magic: "
_MAGIC_RAW_TAG = "# tflint-magic-raw: "
# cell magics whose body IPython runs as Python (through the shell's own transform, so magics inside are fine)
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "px", "memit", "mprun", "python",
                                "python3", "code_wrap"})
_FILE_CELL_MAGICS = frozenset({"writefile", "file"})  # Python when the file written ends in .py
# line magics and shell aliases IPython's automagic calls without `%` (a fresh IPython 9 shell on Linux)
AUTOMAGICS = frozenset(
    "alias alias_magic autoawait autocall automagic bookmark cat cd code_wrap colors conda config cp debug dhist dirs "
    "doctest_mode ed edit env gui hist history killbgscripts ldir lf lk ll load load_ext loadpy logoff logon logstart "
    "logstate logstop ls lsmagic lx macro magic mamba matplotlib micromamba mkdir mv notebook page pastebin pdb pdef "
    "pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab quickref recall "
    "rehashx reload_ext rep rerun reset reset_selective rm rmdir run save sc set_env sx system tb time timeit unalias "
    "unload_ext uv who who_ls whos xdel xmode".split()
)
_HELP_END = re.compile(r"(%{0,2}(?!\d)[\w*]+(\.(?!\d)[\w*]+|\[-?[0-9]+\])*)(\?\??)$")
_LINE_SPLIT = re.compile(r"^(\s*)([,;/%]|!!?|\?\??)?\s*(%{0,2}[\w\.\*]*)(.*?$|$)")
_WS_ONLY = re.compile(r"[ \t]+")
_LEADING_WS = re.compile(r"[ \t]*(?=[^ \t\n])")
_NAME = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"(\d[\w.]*|\.\d[\w.]*)([eE][+-]\d+)?[jJ]?")
_OPERATORS = ("**=", "//=", ">>=", "<<=", "...", "->", ":=", "!=", "==", "<=", ">=", "+=", "-=", "*=", "/=", "%=",
              "&=", "|=", "^=", "@=", "**", "//", "<<", ">>")
_STRING_PREFIXES = frozenset({"r", "u", "f", "b", "br", "rb", "fr", "rf", "t", "tr", "rt"})
_ESCAPES = "!?%,;/"


@dataclass(frozen=True)
class CellTransform:
    """One code cell made Python: `lines` has one entry per line of the cell's source (split on "\\n");
    `prefixes[i]` is the indentation removed from line i (IPython dedents a cell whose lines are all indented);
    `kind` is "python", "skipped" (a cell magic whose body is not Python) or "error" (then `lines` are blank and
    `error` is (row, column, message), 1-based in the cell)."""

    lines: tuple[str, ...]
    prefixes: tuple[str, ...]
    kind: str = "python"
    error: Optional[tuple[int, int, str]] = None
    magic: str = ""  # the cell magic's name, for a cell that starts with `%%`

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@lru_cache(maxsize=4096)
def transform_cell(src: str) -> CellTransform:
    """The Python that IPython would run for this cell, row for row, with a verdict (see CellTransform)."""
    lines = src.split("\n")
    return _transform(lines, *_dedent(lines))


# R that no Python file holds: `library(glue)`, `install.packages(...)`, `sh <- function(cmd)`, `paste0(...)`
_R_CODE = re.compile(r"(?m)^\s*(?:library|require|install\.packages)\(|<-\s*function\s*\(|\bpaste0\(|\bSys\.(?:getenv|time)\(")
_OTHER_KERNELS = re.compile(r"(?i)^(swift|ir|julia|scala|javascript|typescript|bash|sh|java|kotlin|go|rust|c\+\+|"
                            r"xcpp|sas|matlab|octave|ruby|haskell|spark|sparkr|deno|tslab)\b")


def _kernel_language(name) -> Optional[str]:
    """The language a kernel's name says, when the metadata names no language (`"name": "swift"`)."""
    if isinstance(name, str):
        m = _OTHER_KERNELS.match(name.strip())
        if m:
            return m.group(1).lower()
    return None


def runs_on_ipython8(src: str) -> bool:
    """The cell is Python (or a cell magic) for IPython 7 and 8, which remove the first non-blank line's
    indentation from the lines that start with it where IPython 9 removes the common margin (read from the
    ipython 7.34.0 and 8.18.1 wheels: `leading_indent`). Colab ships IPython 7.34: ` %%time` or a first line
    indented by one space runs there."""
    lines = src.split("\n")
    return _transform(lines, *_first_line_dedent(lines)).kind != "error"


def _transform(lines: list[str], out: list[str], prefixes: list[str]) -> CellTransform:
    first = next((i for i, ln in enumerate(out) if ln.strip()), None)
    if first is not None and out[first].startswith("%%") and not re.match(r"%%\w+\?", out[first]):
        return _cell_magic(lines, out, prefixes, first)
    out = _mask(out)
    if first is not None:
        out = _automagic(out, first)
    return _verdict(lines, out, prefixes)


def _first_line_dedent(lines: list[str]) -> tuple[list[str], list[str]]:
    """IPython 7/8's `leading_indent`, line for line: the first non-blank line's indentation is removed from every
    line that starts with it; the others are kept as they are."""
    margin = ""
    for ln in lines:
        if ln and not _WS_ONLY.fullmatch(ln):
            m = _LEADING_WS.match(ln)
            margin = m.group(0) if m else ""
            break
    return _remove_margin(lines, margin)


def _dedent(lines: list[str]) -> tuple[list[str], list[str]]:
    """textwrap.dedent, as IPython applies it to a whole cell, line for line."""
    margin: Optional[str] = None
    for ln in lines:
        if not ln or _WS_ONLY.fullmatch(ln):
            continue
        m = _LEADING_WS.match(ln)
        indent = m.group(0) if m else ""
        if margin is None:
            margin = indent
        else:
            k = 0
            while k < min(len(margin), len(indent)) and margin[k] == indent[k]:
                k += 1
            margin = margin[:k]
    return _remove_margin(lines, margin or "")


def _remove_margin(lines: list[str], margin: str) -> tuple[list[str], list[str]]:
    """Each line without `margin` where it starts with it (every non-blank line, for a common margin), blank lines
    emptied; with the prefix removed from each line."""
    out, prefixes = [], []
    for ln in lines:
        if _WS_ONLY.fullmatch(ln):
            out.append("")
            prefixes.append(ln)
        elif ln and margin and ln.startswith(margin):
            out.append(ln[len(margin):])
            prefixes.append(margin)
        else:
            out.append(ln)
            prefixes.append("")
    return out, prefixes


def _cell_magic(lines: list[str], out: list[str], prefixes: list[str], first: int) -> CellTransform:
    name, _, args = out[first][2:].rstrip().partition(" ")
    args_words = args.split()
    python = name in PYTHON_CELL_MAGICS
    if name in _FILE_CELL_MAGICS:
        target = next((w for w in args_words if not w.startswith("-")), "")
        python = target.strip("'\"").endswith(".py")
    elif name == "script":
        python = bool(args_words) and re.fullmatch(r"(\S*/)?python3?(\.\d+)?", args_words[0]) is not None
    head = [""] * first + [f"pass  {_MAGIC_TAG}{out[first]}"]
    if not python:
        blank = ["" for _ in lines]
        return CellTransform(tuple(blank), tuple("" for _ in lines), "skipped", magic=name)
    if first + 1 == len(out):
        return CellTransform(tuple(head), tuple(prefixes), "python", magic=name)
    body = transform_cell("\n".join(out[first + 1:]))
    body_prefixes = [p + q for p, q in zip(prefixes[first + 1:], body.prefixes)]
    new_prefixes = tuple(prefixes[: first + 1]) + tuple(body_prefixes)
    if body.kind == "error":
        row, col, msg = body.error  # type: ignore[misc]
        col += len(prefixes[first + row])
        return CellTransform(tuple("" for _ in lines), new_prefixes, "error", (first + 1 + row, col, msg), name)
    if body.kind == "skipped":
        return CellTransform(tuple("" for _ in lines), new_prefixes, "skipped", magic=name)
    return CellTransform(tuple(head) + body.lines, new_prefixes, "python", magic=name)


class _Lexer:
    """Just enough of Python's tokenizer to find where logical lines start and what they hold."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def logical_line(self, row: int) -> tuple[list[tuple[str, str, int, int]], int]:
        """Tokens (kind, text, row, col) of the logical line starting at `row`, and the row after it."""
        lines = self.lines
        toks: list[tuple[str, str, int, int]] = []
        depth = 0
        r, c = row, 0
        while r < len(lines):
            ln = lines[r]
            n = len(ln)
            continued = False
            while c < n:
                ch = ln[c]
                if ch in " \t\f\r":
                    c += 1
                elif ch == "#":
                    toks.append(("comment", ln[c:], r, c))
                    c = n
                elif ch == "\\" and c == n - 1 or ln[c:].rstrip("\r") == "\\":
                    continued = True
                    c = n
                elif ch in "'\"":
                    r, c = self._string(r, c, "", toks)
                    ln, n = lines[r] if r < len(lines) else "", len(lines[r]) if r < len(lines) else 0
                elif ch.isalpha() or ch == "_" or ord(ch) > 127:
                    m = _NAME.match(ln, c)
                    if m is None:
                        toks.append(("err", ch, r, c))
                        c += 1
                        continue
                    word = m.group(0)
                    end = m.end()
                    if end < n and ln[end] in "'\"" and word.lower() in _STRING_PREFIXES:
                        r, c = self._string(r, end, word.lower(), toks, start=c)
                        ln, n = lines[r] if r < len(lines) else "", len(lines[r]) if r < len(lines) else 0
                    else:
                        toks.append(("name", word, r, c))
                        c = end
                elif ch.isdigit() or (ch == "." and c + 1 < n and ln[c + 1].isdigit()):
                    m = _NUMBER.match(ln, c)
                    toks.append(("number", m.group(0), r, c))  # type: ignore[union-attr]
                    c = m.end()  # type: ignore[union-attr]
                else:
                    op = next((o for o in _OPERATORS if ln.startswith(o, c)), ch)
                    if op in "([{":
                        depth += 1
                    elif op in ")]}":
                        depth = max(depth - 1, 0)
                    kind = "err" if op in "!?$`" else "op"
                    toks.append((kind, op, r, c))
                    c += len(op)
            r, c = r + 1, 0
            if not continued and depth == 0:
                return toks, r
        return toks, r

    def _string(self, r: int, c: int, prefix: str, toks: list, start: Optional[int] = None) -> tuple[int, int]:
        """Skip the string starting with the quote at (r, c); return the position after it."""
        lines = self.lines
        ln = lines[r]
        q = ln[c]
        triple = ln.startswith(q * 3, c)
        quote = q * 3 if triple else q
        fstring = "f" in prefix or "t" in prefix
        toks.append(("string", quote, r, start if start is not None else c))
        c += len(quote)
        depth = 0
        while r < len(lines):
            ln = lines[r]
            n = len(ln)
            cont = False
            while c < n:
                ch = ln[c]
                if ch == "\\":
                    if c == n - 1:  # a backslash at the end of the line continues the string
                        cont = True
                        break
                    c += 2
                    continue
                if depth == 0 and ln.startswith(quote, c):
                    return r, c + len(quote)
                if fstring and ch == "{":
                    if depth == 0 and ln.startswith("{{", c):
                        c += 2
                        continue
                    depth += 1
                elif fstring and ch == "}" and depth > 0:
                    depth -= 1
                elif fstring and depth > 0 and ch in "'\"":
                    r2, c2 = self._string(r, c, "", [])
                    if r2 != r:
                        return r2, c2  # a nested string over lines: give up on this f-string's end
                    c = c2
                    continue
                c += 1
            if not triple and not cont:
                return r, n  # unterminated: ends with the line, as the tokenizer's error token does
            r, c = r + 1, 0
        return r, 0


def _continued_end(lines: list[str], row: int) -> int:
    """IPython's find_end_of_continued_line: the last row of a `\\`-continued line."""
    end = row
    while end < len(lines) - 1 and lines[end].endswith("\\"):
        end += 1
    return end


def _mask_rows(out: list[str], lines: list[str], first: int, last: int, indent: str) -> None:
    out[first] = f"{indent}pass  {_MAGIC_TAG}{lines[first][len(indent):]}"
    for j in range(first + 1, last + 1):
        out[j] = f"{indent}{_MAGIC_RAW_TAG}{lines[j]}"


def _mask(lines: list[str]) -> list[str]:
    """IPython's token transforms (escaped commands, magic and system assignments, help), each special line (and
    its `\\` continuation lines) replaced by an inert line, in order, as IPython applies them one at a time."""
    out = list(lines)
    lexer = _Lexer(lines)
    row = 0
    while row < len(lines):
        ln = lines[row]
        stripped = ln.lstrip(" \t\f")
        indent = ln[: len(ln) - len(stripped)]
        if stripped[:1] and stripped[0] in _ESCAPES and not stripped.startswith(("!=", "%=", "/=", "//")):
            # an escaped command (`!cmd`, `%magic`, `?obj`, `,f a b`, `;f a`, `/f a`) and its `\\` continuations
            if not (stripped[0] == "/" and not stripped[1:].partition(" ")[0]):  # `/` needs a callable name
                end = _continued_end(lines, row)
                _mask_rows(out, lines, row, end, indent)
                row = end + 1
                continue
        toks, nxt = lexer.logical_line(row)
        # help: the logical line ends with `?` right after a name (`obj?`, `obj.attr??`, `x = y?` asks about y)
        if len(toks) > 1 and toks[-1][0] == "err" and toks[-1][1] == "?":
            q_row = toks[-1][2]
            content = "\n".join(lines[row: q_row + 1])[len(indent):] + "\n"
            if _HELP_END.search(content):
                _mask_rows(out, lines, row, q_row, indent)
                row = q_row + 1
                continue
        # `x = %magic ...` and `x = !cmd`: the first `=` outside brackets, then `%name` or `!`
        depth, assign = 0, None
        for k, t in enumerate(toks):
            if t[1] == "=" and depth == 0:
                assign = k
                break
            if t[0] == "op" and t[1] in "([{":
                depth += 1
            elif t[0] == "op" and t[1] in ")]}" and depth:
                depth -= 1
        if assign is not None and assign + 1 < len(toks):
            after = toks[assign + 1]
            magic = after[1] == "%" and assign + 2 < len(toks) and toks[assign + 2][0] == "name"
            system = after[1] == "!" and not lines[toks[assign][2]].strip().startswith("=")
            if magic or system:
                end = _continued_end(lines, after[2])
                _mask_rows(out, lines, row, end, indent)
                row = end + 1
                continue
        row = max(nxt, row + 1)
    return out


def _automagic(out: list[str], first: int) -> list[str]:
    """A one-line cell like `ls data/`, `cd dir` or `pip install x`: IPython's shell calls the magic of that name.
    Only when the line is not Python already (then the verdict is the same and the analysis keeps the Python)."""
    rest = out[first + 1:]
    if rest and (len(rest) > 1 or rest[0] != ""):
        return out
    ln = out[first]
    m = _LINE_SPLIT.match(ln)
    if m is None or m.group(2) or m.group(3).lstrip("%") not in AUTOMAGICS:
        return out
    after = m.group(4).lstrip()
    if after[:1] in ("=", ","):
        return out
    if _compile_error(ln + "\n") is None:
        return out
    new = list(out)
    _mask_rows(new, out, first, first, "")
    return new


_FUTURE_IMPORT = re.compile(r"^(\s*)from\s+__future__\s+import\b.*$", re.M)


def _compile_error(text: str) -> Optional[tuple[int, int, str]]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                compile(text, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
            except SyntaxError as exc:
                if "__future__" not in str(exc.msg):
                    raise
                # IPython compiles a cell statement by statement: `%magic` then `from __future__ import x` runs
                # there. Only the placement rule failed: check the rest with the future imports set aside.
                compile(_FUTURE_IMPORT.sub(lambda m: m.group(1) + "pass", text), "<cell>", "exec",
                        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, f"SyntaxError: {exc.msg}"
    except (ValueError, MemoryError, RecursionError, OverflowError) as exc:
        detail = "source contains NUL bytes" if "null" in str(exc).lower() else str(exc) or type(exc).__name__
        return 1, 1, f"SyntaxError: {detail}"
    return None


def _verdict(lines: list[str], out: list[str], prefixes: list[str]) -> CellTransform:
    text = "\n".join(out)
    if not text.endswith("\n"):
        text += "\n"
    error = _compile_error(text)
    if error is None:
        return CellTransform(tuple(out), tuple(prefixes))
    row, col, msg = error
    row = min(max(row, 1), len(lines))
    col = max(col, 1) + len(prefixes[row - 1])
    return CellTransform(tuple("" for _ in lines), tuple(prefixes), "error", (row, col, msg))


def _cell_errors(code_cells: list[int], sources: list[str]) -> list[CellError]:
    out = []
    for index, src in zip(code_cells, sources):
        t = transform_cell(src)
        if t.error is not None:
            out.append(CellError(index + 1, t.error[0], t.error[1], t.error[2]))
    return out


def _unmask_line(ln: str) -> str:
    m = _MAGIC_RESTORE.match(ln)
    if m is None:
        return ln
    return m.group(3) if m.group(2) else m.group(1) + m.group(3)


def _unmask_magics(src: str) -> str:
    return "\n".join(_unmask_line(ln) for ln in src.split("\n"))


def join_cells(sources: list[str], blank: Iterable[int] = ()) -> tuple[str, list[tuple[int, int]]]:
    """The linted text of these cells (each made Python, a cell that is not Python, or whose index is in `blank`,
    left blank) and the (first, last) row of each cell in it."""
    parts: list[str] = []
    rows: list[tuple[int, int]] = []
    row = 1
    blank = set(blank)
    for k, src in enumerate(sources):
        t = transform_cell(src)
        masked = "\n".join("" for _ in t.lines) if k in blank else t.text
        if not masked.endswith("\n"):
            masked += "\n"
        n = masked.count("\n")
        rows.append((row, row + n - 1))
        parts.append(masked)
        parts.append(MARKER + "\n")
        row += n + 1
    return "".join(parts), rows


def split_cells(text: str, count: int) -> Optional[list[str]]:
    chunks = text.split(MARKER + "\n")
    if len(chunks) != count + 1 or chunks[-1] != "":
        return None
    return chunks[:-1]


def restore_cell(fixed_chunk: str, original: str) -> str:
    """The fixed cell text with magics and IPython's dedent undone, every line the fix did not change byte for byte
    as it was, and the original's (lack of a) final newline. A cell that was not Python comes back unchanged."""
    t = transform_cell(original)
    joined = t.text if t.text.endswith("\n") else t.text + "\n"
    if t.kind != "python" or fixed_chunk == joined:
        return original
    old, orig = list(t.lines), original.split("\n")
    if not original.endswith("\n"):
        old.append("")
        orig.append("")
    new = fixed_chunk.split("\n")
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.extend(orig[i1:i2])
            continue
        for j in range(j1, j2):
            i = min(i1 + (j - j1), i2 - 1) if i2 > i1 else max(i1 - 1, 0)  # the old line this one stands for
            prefix = t.prefixes[i] if i < len(t.prefixes) and t.prefixes[i].strip() == "" else ""
            ln = _unmask_line(new[j])
            out.append(prefix + ln if ln else ln)
    text = "\n".join(out)
    if not original.endswith("\n") and text.endswith("\n"):
        text = text[:-1]
    return text


def _encode_source(text: str, was_list: bool, indent: str, old: str) -> str:
    if not was_list:
        return json.dumps(text, ensure_ascii=_ascii_only(old))
    lines = text.splitlines(keepends=True)
    if not lines:
        return "[]"
    items = [json.dumps(ln, ensure_ascii=_ascii_only(old)) for ln in lines]
    if "\n" not in old:
        return "[" + ", ".join(items) + "]"
    closing_indent = indent[:-len(_step(old, indent))] if _step(old, indent) else indent
    nl = "\r\n" if "\r\n" in old else "\n"  # the notebook file's own line ending
    return "[" + nl + ("," + nl).join(indent + it for it in items) + nl + closing_indent + "]"


def _step(old: str, indent: str) -> str:
    m = re.search(r"\n([ \t]*)\]\s*$", old)
    closing = m.group(1) if m else ""
    return indent[len(closing):] if indent.startswith(closing) else ""


def _ascii_only(old: str) -> bool:
    return all(ord(c) < 128 for c in old) and "\\u" in old


# -- locating `cells[i].source` in the raw JSON ---------------------------------------------------------------
def source_spans(raw: str) -> dict[int, tuple[int, int, bool, str]]:
    """cell index -> (start, end, value is a list, indent of the list items) of each cell's `source` value."""
    scanner = _Scanner(raw)
    return scanner.cell_sources()


class _Scanner:
    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        self.i = i

    def string(self) -> str:
        start = self.i
        self.i += 1
        s = self.s
        while True:
            c = s[self.i]
            if c == "\\":
                self.i += 2
                continue
            self.i += 1
            if c == '"':
                break
        return json.loads(s[start:self.i])

    def skip_value(self) -> None:
        self.ws()
        c = self.s[self.i]
        if c == '"':
            self.string()
        elif c in "{[":
            close = "}" if c == "{" else "]"
            self.i += 1
            self.ws()
            if self.s[self.i] == close:
                self.i += 1
                return
            while True:
                self.ws()
                if c == "{":
                    self.string()
                    self.ws()
                    self.i += 1  # colon
                self.skip_value()
                self.ws()
                if self.s[self.i] == ",":
                    self.i += 1
                    continue
                self.i += 1  # close
                return
        else:
            while self.i < len(self.s) and self.s[self.i] not in ",}] \t\r\n":
                self.i += 1

    def object_members(self):
        """Yield (key, value_start) for each member of the object at self.i, leaving self.i after the value
        when the caller skips it."""
        self.ws()
        assert self.s[self.i] == "{"
        self.i += 1
        self.ws()
        if self.s[self.i] == "}":
            self.i += 1
            return
        while True:
            self.ws()
            key = self.string()
            self.ws()
            self.i += 1  # colon
            self.ws()
            yield key
            self.ws()
            if self.s[self.i] == ",":
                self.i += 1
                continue
            self.i += 1
            return

    def cell_sources(self) -> dict[int, tuple[int, int, bool, str]]:
        out: dict[int, tuple[int, int, bool, str]] = {}
        for key in self.object_members():
            if key != "cells":
                self.skip_value()
                continue
            self.ws()
            self.i += 1  # [
            idx = 0
            self.ws()
            if self.s[self.i] == "]":
                self.i += 1
                continue
            while True:
                self.ws()
                for ck in self.object_members():
                    if ck == "source":
                        start = self.i
                        is_list = self.s[start] == "["
                        self.skip_value()
                        value = self.s[start:self.i]
                        m = re.search(r"\[\s*?\n([ \t]*)\S", value)
                        out[idx] = (start, self.i, is_list, m.group(1) if m else "")
                    else:
                        self.skip_value()
                idx += 1
                self.ws()
                if self.s[self.i] == ",":
                    self.i += 1
                    continue
                self.i += 1
                break
        return out


def fixed_sources(nb: Notebook, new_text: str) -> Optional[list[str]]:
    chunks = split_cells(new_text, len(nb.code_cells))
    if chunks is None:
        return None
    return [o if k in nb.blanked else restore_cell(c, o) for k, (c, o) in enumerate(zip(chunks, nb.sources))]


def render_fixed(nb: Notebook, new_text: str) -> str:
    sources = fixed_sources(nb, new_text)
    if sources is None:
        raise NotebookError("the fixed text lost a cell boundary; notebook not written")
    spans = source_spans(nb.raw)
    replacements = []
    for k, cell_index in enumerate(nb.code_cells):
        if sources[k] == nb.sources[k]:
            continue
        if cell_index not in spans:
            raise NotebookError(f"cannot locate the source of cell {cell_index + 1}")
        start, end, was_list, indent = spans[cell_index]
        replacements.append((start, end, _encode_source(sources[k], was_list, indent, nb.raw[start:end])))
    out = nb.raw
    for start, end, text in sorted(replacements, reverse=True):
        out = out[:start] + text + out[end:]
    return out
