"""The one suppression implementation, used by check, fix, the language server and inspect.

- `# noqa: TFL101` / `# noqa: map-without-parallel-calls` at the end of a line; a bare `# noqa` silences every
  rule on that line. Codes of other tools in the same comment (`# noqa: E501, TFL101`) are left alone.
- `# tflint: ignore[TFL101]` on a line of its own covers the next statement (all its lines).
- `# tflint: noqa` or `# tflint: noqa: TFL1` anywhere in a file covers the whole file.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

NOQA_COMMENT = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w\-]+(?:[\s,]+[\w\-]+)*))?", re.IGNORECASE)
_FILE = re.compile(r"#\s*tflint:\s*noqa(?::\s*(?P<codes>[\w\-]+(?:[\s,]+[\w\-]+)*))?\s*$", re.IGNORECASE)
_NEXT = re.compile(r"#\s*tflint:\s*ignore\[(?P<codes>[^\]]*)\]", re.IGNORECASE)
_SPLIT = re.compile(r"[\s,]+")


def split_codes(text: str) -> list[str]:
    """The codes or names of a directive's list (`TFL101, TFL102` or `TFL101 TFL102`)."""
    return [c for c in _SPLIT.split(text) if c]


@dataclass
class Directive:
    kind: str  # "line" | "next" | "file"
    codes: Optional[tuple[str, ...]]  # None: every rule
    row: int  # 1-based row of the comment
    column: int  # 0-based column where the comment starts
    end_column: int
    text: str  # the comment text
    rows: tuple[int, int] = (0, 0)  # rows covered (inclusive); for "line" the row, for "file" everything
    used: set[str] = field(default_factory=set)  # codes this directive suppressed
    own_line: bool = False

    def matches(self, code: str, name: str, resolve: Callable[[str], set[str]]) -> bool:
        if self.codes is None:
            return True
        for c in self.codes:
            if c == code or c == name or code in resolve(c):
                return True
        return False


def _comments(text: str) -> Iterable[tuple[int, int, str, bool]]:
    """(row, col, comment, own_line) for every comment, via tokenize; falls back to a line scan on code that
    does not tokenize (the fallback may see `#` in strings, which only matters for broken files)."""
    try:
        toks = tokenize.generate_tokens(io.StringIO(text).readline)
        prev_row_code: set[int] = set()
        for tok in toks:
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.start[1], tok.string, tok.start[0] not in prev_row_code
            elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                for r in range(tok.start[0], tok.end[0] + 1):
                    prev_row_code.add(r)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        for i, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
            j = line.find("#")
            if j >= 0:
                yield i, j, line[j:], not line[:j].strip()


def parse_directives(text: str) -> list[Directive]:
    if "noqa" not in text and "tflint" not in text and "NOQA" not in text:
        return []
    out: list[Directive] = []
    for row, col, comment, own_line in _comments(text):
        m = _FILE.search(comment)
        if m:
            codes = tuple(split_codes(m.group("codes") or "")) or None
            out.append(Directive("file", codes, row, col, col + len(comment), comment, (1, 1 << 30), own_line=own_line))
            continue
        m = _NEXT.search(comment)
        if m:
            codes = tuple(split_codes(m.group("codes"))) or None
            out.append(Directive("next", codes, row, col, col + len(comment), comment, (row + 1, row + 1), own_line=own_line))
            continue
        m = NOQA_COMMENT.search(comment)
        if m:
            codes = tuple(split_codes(m.group("codes") or "")) or None
            out.append(Directive("line", codes, row, col, col + len(comment), comment, (row, row), own_line=own_line))
    return out


def next_statement_finder(text: str) -> Callable[[int], Optional[tuple[int, int]]]:
    """`row -> (first, last)` rows of the first statement (nested ones included) that starts after `row`; a
    decorated definition starts at its first decorator. Code that does not parse has no statements."""
    import ast
    import bisect
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return lambda row: None
    stmts = []
    for n in ast.walk(tree):
        if isinstance(n, ast.stmt):
            first = min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", ()))])
            stmts.append((first, n.end_lineno or n.lineno))
    stmts.sort()

    def find(row: int) -> Optional[tuple[int, int]]:
        i = bisect.bisect_right(stmts, (row, 1 << 30))
        return stmts[i] if i < len(stmts) else None

    return find


class Suppressions:
    """Decides whether a finding is suppressed and remembers which directives were used."""

    @classmethod
    def for_text(cls, text: str, resolve: Callable[[str], set[str]],
                 directives: Optional[list[Directive]] = None) -> "Suppressions":
        """The suppressions of one file's text, "next statement" directives given their statements' rows: the one
        path static and runtime findings share."""
        supp = cls(parse_directives(text) if directives is None else directives, resolve)
        if any(d.kind == "next" for d in supp.directives):
            supp.set_statement_ranges(next_statement_finder(text))
        return supp

    def __init__(self, directives: list[Directive], resolve: Callable[[str], set[str]]) -> None:
        self.directives = directives
        self._resolve_cache: dict[str, set[str]] = {}
        self._resolve = resolve

    def resolve(self, selector: str) -> set[str]:
        if selector not in self._resolve_cache:
            try:
                self._resolve_cache[selector] = self._resolve(selector)
            except Exception:
                self._resolve_cache[selector] = set()
        return self._resolve_cache[selector]

    def set_statement_ranges(self, next_statement: Callable[[int], Optional[tuple[int, int]]]) -> None:
        """Give "next statement" directives their row range; `next_statement(row)` returns the rows of the
        first statement starting after `row`."""
        for d in self.directives:
            if d.kind == "next":
                rng = next_statement(d.row)
                if rng is not None:
                    d.rows = rng

    def suppressing(self, code: str, name: str, row: int) -> Optional[Directive]:
        for d in self.directives:
            if d.rows[0] <= row <= d.rows[1] and d.matches(code, name, self.resolve):
                d.used.add(code)
                return d
        return None

    def unused(self, known: Callable[[str], bool]) -> list[tuple[Directive, list[str]]]:
        """Directives (or codes within them) that suppressed nothing. Only tflint's own codes count: codes of
        other tools in a shared `# noqa` are not ours to judge; a bare `# noqa` is never reported."""
        out: list[tuple[Directive, list[str]]] = []
        for d in self.directives:
            if d.codes is None:
                continue
            unused = []
            for c in d.codes:
                if not known(c):
                    continue
                matched = self.resolve(c)
                if not (matched & d.used) and c not in d.used:
                    unused.append(c)
            if unused:
                out.append((d, unused))
        return out


def remove_codes(comment: str, codes: list[str]) -> str:
    """The comment with `codes` removed; "" when nothing of the directive is left."""
    for rx in (_FILE, _NEXT, NOQA_COMMENT):
        m = rx.search(comment)
        if m:
            break
    else:  # pragma: no cover - caller passes a directive comment
        return comment
    present = split_codes(m.group("codes") or "")
    keep = [c for c in present if c not in codes]
    if not keep:
        rest = (comment[: m.start()] + comment[m.end():]).strip()
        if rest in ("", "#"):
            return ""
        if not rest.startswith("#"):
            rest = "# " + rest
        return rest
    span_start, span_end = m.span("codes")
    return comment[:span_start] + ", ".join(keep) + comment[span_end:]
