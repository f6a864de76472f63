"""Jupyter notebooks: code cells joined into one text, positions mapped back to (cell, row), and writes that
change only the bytes of the cells that were fixed.

IPython magics (`%time`, `%%bash`, `!pip install`, `x?`) are replaced by an inert line of the same indentation
(`pass  # tflint-magic: ...`) so the cell still parses, and restored on write. Cells are separated by a marker
comment so that fixes which add or remove lines never blur the cell boundaries.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from .findings import Edit, Finding, Fix, Position

MARKER = "# <tflint-cell>"
_MAGIC_LINE = re.compile(r"^(\s*)([%!].*|.*\?\??\s*)$")
_MAGIC_RESTORE = re.compile(r"^(\s*)pass  # tflint-magic(-raw)?: ?(.*)$")
# IPython help: `obj?`, `obj.attr??`, `?obj` (not any line ending in `?`, which may be inside a string)
_HELP = re.compile(r"^\s*(\?\??[\w.*\[\]]+|[A-Za-z_*][\w.*\[\]()]*\?\??)\s*$")
_AUTOCALL = re.compile(r"^(\s*)(/\w)")
# `files = !ls`, `t = %timeit -o f()`: IPython assignment magics
_ASSIGN_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")


class NotebookError(Exception):
    pass


@dataclass
class Notebook:
    raw: str
    data: dict[str, Any]
    code_cells: list[int]  # indexes into data["cells"] of the Python code cells
    sources: list[str]  # the original source of each code cell
    text: str = ""  # the joined, magic-free text that is linted
    cell_rows: list[tuple[int, int]] = field(default_factory=list)  # (first row, last row) of each cell in text

    @classmethod
    def parse(cls, raw: str, path: str = "<notebook>") -> "Notebook":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"{path}: not a valid notebook: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells", None), list):
            raise NotebookError(f"{path}: not a valid notebook: no `cells` list")
        lang = (
            (data.get("metadata") or {}).get("kernelspec", {}) or {}
        ).get("language") or ((data.get("metadata") or {}).get("language_info", {}) or {}).get("name") or "python"
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
        nb = cls(raw, data, code_cells, sources)
        nb.text, nb.cell_rows = join_cells(sources)
        return nb

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

    def map_finding(self, f: Finding) -> Finding:
        cell, row = self.locate(f.location.row)
        _, end_row = self.locate(f.end_location.row)
        if cell is None:
            return f
        fix = f.fix
        if fix is not None:
            edits = []
            for e in fix.edits:
                c1, r1 = self.locate(e.location.row)
                _, r2 = self.locate(e.end_location.row)
                if c1 != cell:
                    fix = None
                    break
                edits.append(Edit(e.content, Position(r1, e.location.column), Position(r2, e.end_location.column), e.start, e.end))
            else:
                fix = Fix(fix.applicability, fix.message, tuple(edits))
        return f.with_changes(
            cell=cell,
            location=Position(row, f.location.column),
            end_location=Position(end_row, f.end_location.column),
            fix=fix,
        )


def _is_magic(ln: str) -> bool:
    stripped = ln.strip()
    if not stripped or stripped.startswith("#"):
        return False
    return stripped[0] in "%!" or bool(_HELP.match(ln)) or bool(_ASSIGN_MAGIC.match(ln))


def _mask_magics(src: str) -> str:
    lines = src.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        return "\n".join(f"pass  # tflint-magic: {ln}" if ln.strip() else ln for ln in lines)
    out = []
    prev_indent, prev_opens = "", False  # the last code line's indentation, and whether it opens a block
    for ln in lines:
        if _is_magic(ln):
            indent = ln[: len(ln) - len(ln.lstrip())]
            if not prev_opens and len(indent) > len(prev_indent):
                # indented deeper than the code around it (IPython allows this): an inert line that still parses,
                # with the whole original line kept for the write-back
                out.append(f"{prev_indent}pass  # tflint-magic-raw: {ln}")
                indent = prev_indent
            else:
                out.append(f"{indent}pass  # tflint-magic: {ln[len(indent):]}")
            prev_indent, prev_opens = indent, False
        else:
            out.append(ln)
            code = ln.split("#", 1)[0].rstrip()
            if code:
                prev_indent, prev_opens = ln[: len(ln) - len(ln.lstrip())], code.endswith(":")
    return "\n".join(out)


def _unmask_magics(src: str) -> str:
    out = []
    for ln in src.split("\n"):
        m = _MAGIC_RESTORE.match(ln)
        if m is None:
            out.append(ln)
        else:
            out.append(m.group(3) if m.group(2) else m.group(1) + m.group(3))
    return "\n".join(out)


def join_cells(sources: list[str]) -> tuple[str, list[tuple[int, int]]]:
    parts: list[str] = []
    rows: list[tuple[int, int]] = []
    row = 1
    for k, src in enumerate(sources):
        masked = _mask_magics(src)
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
    """The fixed cell text with magics restored and the original's (lack of a) final newline."""
    text = _unmask_magics(fixed_chunk)
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
    return [restore_cell(c, o) for c, o in zip(chunks, nb.sources)]


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
