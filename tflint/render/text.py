"""Human-readable formats: `concise` (one line per finding) and `full` (source, caret, fix and its diff)."""
from __future__ import annotations

import os
import sys
from typing import Optional

from ..findings import Applicability, Finding


def _where(f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.filename}:{cell}{f.location.row}:{f.location.column}"


def _fix_marker(f: Finding) -> str:
    if f.fix is None:
        return ""
    if f.fix.applicability is Applicability.SAFE:
        return " [*]"
    if f.fix.applicability is Applicability.UNSAFE:
        return " [unsafe fix]"
    return ""


def concise(findings: list[Finding], color: bool = False, **_: object) -> str:
    lines = []
    for f in findings:
        code = _c(f.code, "31;1", color)
        lines.append(f"{_where(f)}: {code}{_fix_marker(f)} {f.message}")
    return "\n".join(lines) + ("\n" if lines else "")


def full(findings: list[Finding], color: bool = False, **_: object) -> str:
    out = []
    for f in findings:
        out.append(f"{_c(_where(f), '1', color)}: {_c(f.code, '31;1', color)} {f.message}  [{f.name}]")
        if f.source_line:
            src_lines = f.source_line.split("\n")
            width = len(str(f.location.row + len(src_lines) - 1))
            out.append(f"{' ' * width} |")
            for i, line in enumerate(src_lines):
                row = f.location.row + i
                out.append(f"{str(row).rjust(width)} | {line.expandtabs(1)}")
                if i == 0:
                    start = f.location.column - 1
                    if f.end_location.row == f.location.row:
                        length = max(1, f.end_location.column - f.location.column)
                    else:
                        length = max(1, len(line) - start)
                    out.append(f"{' ' * width} | {' ' * start}{_c('^' * length, '31;1', color)}")
            out.append(f"{' ' * width} |")
        if f.fix is not None:
            kind = {"safe": "Safe fix", "unsafe": "Unsafe fix", "display": "Suggested fix (not applied)"}[f.fix.applicability.value]
            out.append(f"  = {kind}: {f.fix.message}")
            for line in _fix_diff(f):
                out.append(f"    {line}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _fix_diff(f: Finding) -> list[str]:
    """A small -/+ view of the fix, from the finding's source lines and the edits on them."""
    if not f.source_line or f.fix is None:
        return []
    lines = f.source_line.split("\n")
    first = f.location.row
    last = first + len(lines) - 1
    edits = sorted(f.fix.edits, key=lambda e: (e.location.row, e.location.column))
    if any(e.location.row < first or e.end_location.row > last for e in edits):
        return [f"(edits at line {e.location.row}: {e.content!r})" for e in edits][:3]
    text = "\n".join(lines)
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)

    def off(row: int, col: int) -> int:
        return starts[row - first] + col - 1

    new = text
    for e in reversed(edits):
        new = new[: off(e.location.row, e.location.column)] + e.content + new[off(e.end_location.row, e.end_location.column):]
    return [f"- {ln}" for ln in text.split("\n")] + [f"+ {ln}" for ln in new.split("\n")]


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def use_color(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def statistics(findings: list[Finding], registry=None) -> str:
    counts: dict[str, list] = {}
    for f in findings:
        entry = counts.setdefault(f.code, [0, f.name, False])
        entry[0] += 1
        entry[2] = entry[2] or (f.fix is not None and f.fix.applicability is Applicability.SAFE)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    width = max((len(str(v[0])) for _, v in rows), default=1)
    return "".join(f"{str(n).rjust(width)}\t{code}\t{'[*]' if fixable else '[ ]'} {name}\n" for code, (n, name, fixable) in rows)


def summary(n_findings: int, n_fixed: int, n_fixable: int, n_unsafe: int, fix_mode: bool) -> Optional[str]:
    parts = []
    if n_fixed:
        parts.append(f"Fixed {n_fixed} error{'s' if n_fixed != 1 else ''}.")
    if n_findings:
        parts.append(f"Found {n_findings} error{'s' if n_findings != 1 else ''}.")
        if n_fixable and not fix_mode:
            parts.append(f"[*] {n_fixable} fixable with the `--fix` option.")
        if n_unsafe:
            parts.append(f"{n_unsafe} hidden fix{'es' if n_unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option.")
    elif not n_fixed:
        parts.append("All checks passed!")
    return "\n".join(parts)
