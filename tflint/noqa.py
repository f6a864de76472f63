"""`tflint check --add-noqa`: silence every current finding with a `# noqa: CODE` on its line.

For adopting tflint on an existing codebase: run it once, commit, and from then on only new code is reported.

- The comment goes on the row where the finding starts (the row the suppression check looks at). Codes are merged
  into an existing `# noqa: ...` on that row (`# noqa: E501` -> `# noqa: E501, TFL101`) and other comments are
  kept (`x = f()  # why` -> `x = f()  # why  # noqa: TFL101`).
- A row whose end cannot take a comment (it ends inside a multi-line string, or with a `\\` continuation) gets a
  `# tflint: ignore[CODE]` line above its statement instead, which covers the whole statement.
- Syntax errors (TFL001) and unused suppressions (TFL002) are never "suppressed" this way: they are fixed, not
  silenced.
- Notebooks are handled through tflint.notebook: only the source of the cells that change is rewritten.
- Files are written atomically (tflint.source.write_atomic) and only when the result still parses; a second run
  adds nothing.

The same edit builder serves the language server's "Suppress TFLxxx on this line" code action.
"""
from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional

from .engine import SYNTAX_ERROR, UNUSED_SUPPRESSION, Settings, apply_edits, check_text
from .findings import Finding
from .source import LineIndex, SourceError, read_source, write_atomic
from .suppress import NOQA_COMMENT, parse_directives, split_codes

NEVER_NOQA = frozenset({SYNTAX_ERROR, UNUSED_SUPPRESSION})
_CODE_LIKE = re.compile(r"[A-Za-z]+[0-9]+|[a-z][a-z0-9]*(?:-[a-z0-9]+)+")  # a code (E501) or a rule name


@dataclass(frozen=True)
class TextEdit:
    """Replace text[start:end] with `content` (character offsets into the text the edit was computed on)."""

    start: int
    end: int
    content: str


@dataclass
class _Lines:
    """Per-row facts from one tokenize pass: comments and rows whose end cannot hold a comment."""

    comments: dict[int, tuple[int, str]] = field(default_factory=dict)  # row -> (0-based column, comment text)
    blocked: set[int] = field(default_factory=set)
    ok: bool = True


def _scan(text: str) -> _Lines:
    out = _Lines()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.comments[tok.start[0]] = (tok.start[1], tok.string)
            elif tok.start[0] != tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                # a token spanning rows (a triple-quoted string): every row it starts on or crosses, except its
                # last, ends inside the token
                out.blocked.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out.ok = False
    lines = LineIndex(text)
    for row in range(1, len(lines.starts) + 1):
        line = lines.line(row)
        if line.rstrip().endswith("\\") and row not in out.comments:
            out.blocked.add(row)
    return out


def _statement_start(tree: ast.AST, row: int) -> Optional[int]:
    """The first row of the innermost statement whose rows include `row`."""
    best: Optional[tuple[int, int]] = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.lineno <= row <= end:
                if best is None or node.lineno > best[0] or (node.lineno == best[0] and end < best[1]):
                    best = (node.lineno, end)
    return best[0] if best else None


def merge_noqa(comment: str, codes: Iterable[str]) -> Optional[str]:
    """The comment with `codes` merged into its `# noqa: ...` directive, or None when it has none (or a bare
    `# noqa`, which already covers everything)."""
    m = NOQA_COMMENT.search(comment)
    if m is None:
        return None
    if m.group("codes") is None:
        return comment
    present = split_codes(m.group("codes"))
    new = [c for c in codes if c not in present]
    if not new:
        return comment
    start, end = m.span("codes")
    # insert after the last code-like word, so trailing prose stays prose: `# noqa: E501 why` -> `E501, TFL101 why`
    last = None
    for w in re.finditer(r"[\w\-]+", comment[start:end]):
        if _CODE_LIKE.fullmatch(w.group()):
            last = w
    if last is not None:
        end = start + last.end()
    return comment[:end] + ", " + ", ".join(new) + comment[end:]


def noqa_edits(text: str, targets: dict[int, Iterable[str]]) -> tuple[list[TextEdit], list[int]]:
    """Edits that suppress `targets` (1-based row -> codes). Returns (edits, rows that could not be handled)."""
    lines = LineIndex(text)
    scan = _scan(text)
    edits: list[TextEdit] = []
    failed: list[int] = []
    tree: Optional[ast.AST] = None
    above: dict[int, list[str]] = {}  # statement start row -> codes for a `# tflint: ignore[...]` line
    for row in sorted(targets):
        codes = sorted(dict.fromkeys(targets[row]))
        if not codes or row < 1 or row > len(lines.starts):
            continue
        line = lines.line(row)
        line_start = lines.offset(row, 0)
        if row in scan.comments:
            col, comment = scan.comments[row]
            merged = merge_noqa(comment, codes)
            s = line_start + col
            if merged is not None:
                if merged != comment:
                    edits.append(TextEdit(s, s + len(comment), merged))
                continue
            end = s + len(comment)
            edits.append(TextEdit(end, end, f"  # noqa: {', '.join(codes)}"))
            continue
        if row in scan.blocked or not scan.ok:
            if tree is None:
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    failed.append(row)
                    continue
            start = _statement_start(tree, row)
            if start is None:
                failed.append(row)
                continue
            bucket = above.setdefault(start, [])
            bucket += [c for c in codes if c not in bucket]
            continue
        body = line.rstrip()
        end = line_start + len(line)
        edits.append(TextEdit(line_start + len(body), end, f"  # noqa: {', '.join(codes)}"))
    nl = lines.newline()
    for start, codes in above.items():
        line = lines.line(start)
        indent = line[: len(line) - len(line.lstrip())]
        existing = _ignore_directive_above(text, lines, start)
        if existing is not None:
            s, comment = existing
            m = re.search(r"\[([^\]]*)\]", comment)
            present = split_codes(m.group(1)) if m else []
            new = [c for c in codes if c not in present]
            if m and new:
                inner = ", ".join([*present, *new])
                edits.append(TextEdit(s + m.start(1), s + m.end(1), inner))
            continue
        off = lines.offset(start, 0)
        edits.append(TextEdit(off, off, f"{indent}# tflint: ignore[{', '.join(codes)}]{nl}"))
    edits.sort(key=lambda e: (e.start, e.end))
    return edits, failed


def _ignore_directive_above(text: str, lines: LineIndex, row: int) -> Optional[tuple[int, str]]:
    if row <= 1:
        return None
    prev = lines.line(row - 1)
    stripped = prev.lstrip()
    if not stripped.startswith("#"):
        return None
    for d in parse_directives(prev + "\n"):
        if d.kind == "next":
            return lines.offset(row - 1, d.column), d.text
    return None


def targets_for(findings: Iterable[Finding]) -> dict[int, list[str]]:
    """row -> codes of the findings a `# noqa` may silence (not syntax errors nor unused suppressions)."""
    out: dict[int, list[str]] = {}
    for f in findings:
        if f.code in NEVER_NOQA:
            continue
        codes = out.setdefault(f.location.row, [])
        if f.code not in codes:
            codes.append(f.code)
    return out


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


@dataclass
class NoqaResult:
    text: str
    added: int = 0  # directives added or extended
    messages: list[str] = field(default_factory=list)


def add_noqa_to_text(text: str, path: str, settings: Settings) -> NoqaResult:
    """Suppress every current finding in a Python text (not a notebook's JSON: see add_noqa_to_file_text)."""
    result = NoqaResult(text)
    findings = check_text(text, path, settings).findings
    targets = targets_for(findings)
    if not targets:
        return result
    if any(f.code == SYNTAX_ERROR for f in findings) or not _parses(text):
        result.messages.append(f"{path}: has a syntax error; no `# noqa` added")
        return result
    edits, failed = noqa_edits(text, targets)
    for row in failed:
        result.messages.append(f"{path}:{row}: cannot place a `# noqa` here; left as is")
    new_text = apply_edits(text, edits)  # TextEdit has the start/end/content the engine's edits have
    if new_text != text and not _parses(new_text):  # pragma: no cover - defensive: never write a broken file
        result.messages.append(f"{path}: adding `# noqa` would break the file; left as is")
        return result
    result.text = new_text
    result.added = len(edits)
    return result


def add_noqa_to_file_text(text: str, path: str, settings: Settings) -> NoqaResult:
    """Suppress every current finding in a file's text: a Python file, or a notebook (only the source of the cells
    that change is rewritten)."""
    from .document import DocumentError, open_document

    doc = open_document(text, path)
    result = NoqaResult(text, messages=[f"{path}: {f.message}" for f in doc.own_findings if doc.lint_text is None])
    if doc.lint_text is None:
        return result
    inner = add_noqa_to_text(doc.lint_text, path, settings)
    result.messages = inner.messages
    if inner.text == doc.lint_text:
        return result
    try:
        result.text = doc.render(inner.text)
    except DocumentError as exc:
        result.messages.append(f"{path}: {exc}")
        return result
    result.added = inner.added
    return result


def add_noqa(paths: list[str], settings: Settings) -> int:
    """The `--add-noqa` command: 0 when every file was handled, 2 when a file could not be read or written."""
    from .api import discover

    files, messages = discover(paths, settings.config)
    total = 0
    status = 0
    for path in files:
        try:
            src = read_source(path)
        except SourceError as exc:
            messages.append(str(exc))
            continue
        res = add_noqa_to_file_text(src.text, path, settings)
        messages += res.messages
        if res.text == src.text:
            continue
        try:
            write_atomic(path, src.encode(res.text), expected=src.raw)
        except (SourceError, OSError) as exc:
            messages.append(str(exc))
            status = 2
            continue
        total += res.added
    for m in messages:
        print(f"tflint: warning: {m}", file=sys.stderr)
    print(f"Added {total} noqa directive{'s' if total != 1 else ''}.", file=sys.stderr)
    return status


def add_noqa_stdin(data: bytes, filename: str, settings: Settings) -> int:
    """`--add-noqa` on stdin: the text with its `# noqa` comments goes to stdout (as `--fix` does with stdin)."""
    from .source import decode

    try:
        text, _, _ = decode(data, filename)
    except SourceError as exc:
        print(f"tflint: error: {exc}", file=sys.stderr)
        return 2
    res = add_noqa_to_file_text(text, filename, settings)
    sys.stdout.write(res.text)
    for m in res.messages:
        print(f"tflint: warning: {m}", file=sys.stderr)
    print(f"Added {res.added} noqa directive{'s' if res.added != 1 else ''}.", file=sys.stderr)
    return 0
