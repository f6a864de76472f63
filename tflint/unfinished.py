"""Syntax errors that are not mistakes: code written for Python 2, exercise templates with blanks to fill in, and
citations pasted into notebook cells.

tflint reports a file or cell it cannot parse (TFL001) because the user loses its analysis. Four kinds of text fail
to parse on purpose, and the judges of the real-code ledger called every such finding wrong or not worth a look:

- **Python 2 source** (`print x`, `except E, e:`, `exec "..."`, `0777`, backquotes, `ur"..."`): a course's or an
  old project's files that ran under the interpreter they were written for. Python 3 cannot analyse them; the code
  is older than the parser, not broken.
- **An exercise blank**: `x = # TODO`, `preds =` under `# YOUR CODE HERE`, `<insert artifact ID here>`,
  `model = ___`, `h = tf.matmul(...`: a template the reader completes (the course's solution file holds the
  finished code).
- **R in a Python notebook**: cells of R (`fit <- glmnet(...)`, `gfile::GFile(...)`, `data$county`) in a
  notebook saved with a Python kernel, which its author runs after switching the runtime to R (round 15: 11
  findings in TensorFlow Probability's notebooks, all judged wrong). Only notebook cells are read this way.
- **A citation**: a BibTeX entry (`@manual{key, title={...}, ...}`) pasted into a notebook's code cell, as the last
  cell of every tutorial of some projects ("cite this tutorial"). It holds no code and hides none (round 14: 24 of
  a project's 26 findings, all judged not worth a look).

All are left out without a finding, as a Python 2 notebook's cells already are (tflint.notebook).
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
_MARKER = re.compile(r"(?i)\b(TODO|TO\s?DO|FIXME|YOUR\s+(CODE|ACTION|ANSWER|TURN|SOLUTION|IMPLEMENTATION)|FILL\s*(ME|IN|THIS|HERE)|"
                     r"INSERT\b.*\bHERE|REPLACE\b.*\bHERE|COMPLETE\s+THIS|FINISH\s+THIS|WRITE\s+(YOUR|CODE\s+HERE))")
# `<insert ... here>`, `___`, `???`, a `??` or a lone `?` where a value goes (`activation=??`, `epochs= ?  # Replace
# ? with an integer`, `df[ ? ]`; `name??` and a `?` starting a line are IPython's help), and
# `x = raise NotImplementedError()` (the reader replaces the raise)
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*\s[^<>\n]*>|\b_{3,}\b|\?\?\?|(?<![\w)\]}?])\?\?(?!\?)|=\s*raise\b"
                          r"|(?<=[=(\[,:])\s*\?(?=\s*(?:[)\],#]|$))"
                          # `<gen(noise)>`, `<YOUR_EMAIL>` standing where a value goes (hse-aml's course, round 20)
                          r"|(?:(?<=[=(\[,:])|^)\s*<[A-Za-z_][^<>\n]*>\s*(?=[)\],#]|$)")
_UNFINISHED = re.compile(r"^\s*[\w.\[\]'\", =]+=\s*$")  # `label_i =`, `preds, labels =`, `x = y =`
# dots where the reader's code goes, on the line that fails: `utils.convolve(...`, `tf.placeholder(name='X'...`,
# `net = ..`, `tf.train....minimize(cost)`, `... DO SOMETHING AWESOME ! ...` (round 22: pkmital/CADL's homework
# notebooks, 17 such cells judged not worth a look); a line that fails cannot end in dots by accident
_DOTS_BLANK = re.compile(r"\.\.\.?\s*$|\.{4,}|^\s*\.\.\.\s*[A-Za-z]")
# `None` where the reader's name goes (`def None():`, `None.None(...)`, `label_encoder.None`): graded-assignment
# skeletons; and the region such a skeleton marks for the reader's code (`### START CODE HERE` ... `### END CODE
# HERE`), however long
_NONE_BLANK = re.compile(r"\bdef\s+None\s*\(|\bclass\s+None\b|\bNone\s*\.\s*None\b|\.\s*None\b(?!\w)")
_REGION_START = re.compile(r"(?i)\bSTART\s+CODE\s+HERE\b")
_REGION_END = re.compile(r"(?i)\bEND\s+CODE\s+HERE\b")


# Python 2 statements, sought in the whole file when the first error CPython stops at is not one (a tab/space mix
# is fine in Python 2: improved-gan's `model.py` stops at it before its `print` statements; round 20, not worth)
_PY2_STATEMENT = re.compile(r"^\s*(print(\s+[^\s=(.,)\[\]]|\s*>>)|exec\s+[\"'\w]|raise\s+[\w.]+\s*,|"
                            r"except\s+[\w.]+\s*,\s*\w+\s*:)")


def python2_source(lines: Sequence[str], row: int, message: str) -> bool:
    """The syntax error at `row` (1-based) is a Python 2 statement or literal, or a tab/space mix (legal in Python 2)
    in a file that has Python 2 statements elsewhere."""
    if any(m in message for m in _PY2_MESSAGES):
        return True
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    if _PY2_LINE.search(_code_part(line)):
        return True
    return "tabs and spaces" in message and any(_PY2_STATEMENT.search(_code_part(ln)) for ln in lines)


def exercise_blank(lines: Sequence[str], row: int, message: str = "") -> bool:
    """The syntax error at `row` is a blank left for the reader: a placeholder on the line (`<insert ... here>`,
    `___`, `???`), an assignment left without a value (`x =`), or any error below a `TODO` / `YOUR CODE HERE`
    marker six lines above at most (an unclosed call under `x = # TODO ... (` ends lines later), or below the
    marker inside the block the error message names (`expected an indented block after 'with' statement on line
    81`)."""
    line = _code_part(lines[row - 1]) if 0 < row <= len(lines) else ""
    if _PLACEHOLDER.search(line) or _UNFINISHED.match(line) or _NONE_BLANK.search(line) or _DOTS_BLANK.search(line):
        return True
    before = next((_code_part(ln) for ln in reversed(lines[:row - 1]) if ln.strip()), "")
    if _DOTS_BLANK.search(before) and before.count("(") > before.count(")"):
        return True  # `loss = f(D_real, ...` left open: CPython stops at the next line
    for ln in reversed(lines[:row]):
        if _REGION_END.search(ln):
            break
        if _REGION_START.search(ln):
            return True  # inside the region a skeleton leaves for the reader's code
    start = max(row - 7, 0)
    m = re.search(r"on line (\d+)", message)
    if m and 0 < int(m.group(1)) < row:
        start = min(start, int(m.group(1)) - 1)
    return any(_MARKER.search(ln) for ln in lines[start:row])


_BIBTEX = re.compile(r"@[A-Za-z]+\s*\{\s*[^\s,{}]*\s*,?\s*$")


def citation(lines: Sequence[str]) -> bool:
    """The text is a BibTeX entry: its first line that is not blank or a comment opens one (`@article{key,`) and
    a field follows (`title = {...}`, `author=...`)."""
    body = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return (bool(body) and bool(_BIBTEX.fullmatch(body[0].strip()))
            and any(re.match(r"\s*\w+\s*=\s*[{\"\d]", ln) for ln in body[1:4]))


_STRING = re.compile(r"'[^'\n]*'" + r'|"[^"\n]*"')
_R_CODE = re.compile(
    r"""^\s*[A-Za-z.][\w.]*(\$\w+|\[[^\]\n]*\])*\s*<<?-\s*\S   # x <- value, data$col <- value, radon.model <- f(...)
    |[A-Za-z]\w*:::?[A-Za-z_.][\w.]*\s*\(                       # gfile::GFile(...), pkg:::internal(...)
    |[A-Za-z_)\]]\$[A-Za-z_]                                       # fit$y, data$county
    |(?<![\w.])as\.[A-Za-z][\w.]*\s*\(                            # as.matrix(...), as.data.frame(...)
    |^\s*(library|suppressMessages|suppressWarnings)\s*\(         # library('glmnet'), suppressMessages({
    """,
    re.X,
)


def r_code(lines: Sequence[str]) -> bool:
    """The text is R, not Python: a notebook saved with a Python kernel can hold R cells that its author runs after
    switching the runtime ("to execute this section, switch to an R colab runtime": TensorFlow Probability's own
    notebooks, 11 such cells judged wrong in round 15). A line outside strings and comments carries what Python
    cannot spell: an `<-` assignment at its start, a `pkg::f(` call, a `$` member, an `as.numeric(` call (`as`
    is a Python keyword), or a line that loads a package (`library(...)`, `suppressMessages({`)."""
    for line in lines:
        code = _STRING.sub('""', _code_part(line))
        if _R_CODE.search(code):
            return True
    return False


def not_a_mistake(lines: Sequence[str], row: int, message: str) -> Optional[str]:
    """Why the syntax error at `row` is deliberate ("Python 2 source", "an exercise blank", "a citation"), or None. A file that
    imports `print_function` from `__future__` was ported to Python 3: a `print x` left in it is a mistake."""
    ported = any("print_function" in ln and "__future__" in ln for ln in lines)
    if python2_source(lines, row, message) and not ported:
        return "Python 2 source"
    if exercise_blank(lines, row, message):
        return "an exercise blank"
    if citation(lines):
        return "a citation"
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
