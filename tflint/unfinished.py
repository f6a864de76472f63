"""Syntax errors that are not mistakes: code written for Python 2, and exercise templates with blanks to fill in.

tflint reports a file or cell it cannot parse (TFL001) because the user loses its analysis. Two kinds of text fail
to parse on purpose, and the judges of the real-code ledger called every such finding wrong or not worth a look:

- **Python 2 source** (`print x`, `except E, e:`, `exec "..."`, `0777`, backquotes, `ur"..."`): a course's or an
  old project's files that ran under the interpreter they were written for. Python 3 cannot analyse them; the code
  is older than the parser, not broken.
- **An exercise blank**: `x = # TODO`, `preds =` under `# YOUR CODE HERE`, `<insert artifact ID here>`,
  `model = ___`: a template the reader completes (the course's solution file holds the finished code).

Both are left out without a finding, as a Python 2 notebook's cells already are (tflint.notebook).
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

# messages CPython gives only for Python 2 statements and literals
_PY2_MESSAGES = (
    "Missing parentheses in call to 'print'",
    "Missing parentheses in call to 'exec'",
    "multiple exception types must be parenthesized",
    "leading zeros in decimal integer literals are not permitted",
)
_PY2_LINE = re.compile(
    r"""^\s*(print(\s+[^\s=(.,)\[\]]|\s*>>|\s*$)  # print x / print >>f, x / print
    |exec\s+["'\w]                                  # exec "code"
    |raise\s+[\w.]+\s*,                             # raise E, "message"
    |except\s+[\w.]+\s*,\s*\w+\s*:)                 # except E, e:
    |`[^`\n]+`                                      # backquotes: repr
    |(?<![\w.])[uU][rR]["']                         # ur"..."
    |\w\s*<>\s*\w                                   # <>
    |(?<![\w.])0\d+[lL]?\b|(?<=\d)[lL]\b            # 0777, 10L
    """,
    re.X,
)
# what a template puts where the reader's code goes
_MARKER = re.compile(r"(?i)\b(TODO|TO\s?DO|FIXME|YOUR\s+(CODE|ACTION|ANSWER|TURN)|FILL\s*(ME|IN|THIS|HERE)|"
                     r"INSERT\b.*\bHERE|REPLACE\b.*\bHERE|COMPLETE\s+THIS|WRITE\s+YOUR)")
_BLANK = re.compile(r"<[A-Za-z][^<>\n]*\s[^<>\n]*>|\b_{3,}\b|(^|[=(,]\s*)\?\?\?|=\s*(#.*)?$")


def python2_source(lines: Sequence[str], row: int, message: str) -> bool:
    """The syntax error at `row` (1-based) is a Python 2 statement or literal."""
    if any(m in message for m in _PY2_MESSAGES):
        return True
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    return bool(_PY2_LINE.search(_code_part(line)))


def exercise_blank(lines: Sequence[str], row: int, message: str = "") -> bool:
    """The syntax error at `row` is a blank left for the reader: a placeholder on the line, or a line left
    unfinished (`x =`, a block whose body is only a `# TO DO` comment) next to a `TODO` / `YOUR CODE HERE` marker
    within the three lines above it."""
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    near = lines[max(row - 4, 0):row]
    marked = any(_MARKER.search(ln) for ln in near)
    if re.search(r"<[A-Za-z][^<>\n]*\s[^<>\n]*>|\b_{3,}\b|\?\?\?", _code_part(line)):
        return True  # `<insert artifact ID here>`, `___`, `???`
    if marked and "expected an indented block" in message:
        return True  # `with scope():` whose body is a `# TO DO` comment
    return marked and bool(_BLANK.search(line) or not _code_part(line).strip() or _MARKER.search(line))


def not_a_mistake(lines: Sequence[str], row: int, message: str) -> Optional[str]:
    """Why the syntax error at `row` is deliberate ("Python 2 source", "an exercise blank"), or None."""
    if python2_source(lines, row, message):
        return "Python 2 source"
    if exercise_blank(lines, row, message):
        return "an exercise blank"
    return None


def _code_part(line: str) -> str:
    """The line without a trailing comment (a `#` outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line
