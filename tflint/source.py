"""Reading source files exactly and writing them back without losing a byte that was not fixed.

A file is read as bytes, its encoding taken from the BOM or the PEP 263 cookie, decoded without newline
translation (so CRLF, CR and mixed endings survive), and written back in the same encoding, with the BOM, through
a temporary file in the same folder and an atomic rename that keeps the file's mode. A file that changed on disk
since it was read is not overwritten.
"""
from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MAX_BYTES = 10 * 1024 * 1024  # files above this are reported, not parsed
# the comment line that separates a notebook's cells in the text tflint analyses (tflint.notebook joins them); here,
# not in tflint.notebook, so that the rules that read it do not import the notebook machinery in every run
CELL_MARKER = "# <tflint-cell>"


class SourceError(Exception):
    """A file that cannot be read or decoded; the message is for the user."""


@dataclass
class SourceFile:
    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    raw: bytes = b""
    mtime_ns: int = 0

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return (codecs.BOM_UTF8 + data) if self.bom else data


def decode(data: bytes, path: str = "<stdin>") -> tuple[str, str, bool]:
    """(text, encoding, bom). Raises SourceError for binary or undecodable input."""
    if b"\x00" in data[:8192]:
        raise SourceError(f"{path}: looks like a binary file (NUL bytes), not Python source")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        msg = exc.msg if hasattr(exc, "msg") else str(exc)
        if "invalid or missing encoding declaration" in msg:
            msg = "not valid UTF-8 and no PEP 263 coding cookie names another encoding; add one or save it as UTF-8"
        raise SourceError(f"{path}: {msg}") from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    body = data[len(codecs.BOM_UTF8):] if bom else data
    try:
        text = body.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise SourceError(
            f"{path}: cannot decode as {encoding}{where} ({reason}); add a PEP 263 coding cookie or save it as UTF-8"
        ) from None
    return text, encoding, bom


def read_source(path: str) -> SourceFile:
    p = Path(path)
    try:
        st = p.stat()
        if p.is_dir():
            raise SourceError(f"{path}: is a directory")
        if not stat.S_ISREG(st.st_mode):  # a FIFO, socket or device would block or never end
            raise SourceError(f"{path}: not a regular file; skipped")
        if st.st_size > MAX_BYTES:
            raise SourceError(f"{path}: file is {st.st_size // (1024 * 1024)} MiB, over the {MAX_BYTES // (1024 * 1024)} MiB limit; skipped")
        data = p.read_bytes()
    except SourceError:
        raise
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file (or a broken symlink)") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    text, encoding, bom = decode(data, path)
    return SourceFile(path, text, encoding, bom, data, st.st_mtime_ns)


def write_atomic(path: str, data: bytes, expected: Optional[bytes] = None) -> None:
    """Write `data` to `path` through a temporary file and a rename, keeping the file's mode. When `expected` is
    given and the file on disk no longer holds those bytes, refuse (the file changed since it was read)."""
    target = Path(path)
    real = Path(os.path.realpath(target))
    if expected is not None:
        try:
            current = real.read_bytes()
        except OSError as exc:
            raise SourceError(f"{path}: cannot re-read before writing: {exc.strerror or exc}") from None
        if current != expected:
            raise SourceError(f"{path}: changed on disk since it was read; not overwritten")
    try:
        mode = real.stat().st_mode & 0o7777
    except OSError:
        mode = 0o644
    import tempfile  # only a fix writes (tempfile imports shutil, random, bz2, lzma: start-up time of every run)

    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tflint.tmp", dir=str(real.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Maps between character offsets and (row, column) in a text, with libcst's notion of lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        for m in _NEWLINE.finditer(text):
            starts.append(m.end())
        self.starts = starts

    def offset(self, row: int, col: int) -> int:
        """row 1-based, col 0-based -> offset."""
        if row - 1 >= len(self.starts):
            return len(self.text)
        return min(self.starts[row - 1] + col, len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        """offset -> (row 1-based, col 0-based)."""
        import bisect

        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i]

    def line(self, row: int) -> str:
        if row - 1 >= len(self.starts) or row < 1:
            return ""
        start = self.starts[row - 1]
        end = self.starts[row] if row < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def newline(self) -> str:
        m = _NEWLINE.search(self.text)
        return m.group(0) if m else "\n"


def common_affixes(old: str, new: str) -> tuple[int, int]:
    """(p, q): the lengths of the longest common prefix and (non-overlapping) common suffix of `old` and `new`,
    so that `old[p:len(old)-q]` -> `new[p:len(new)-q]` is the minimal single edit."""
    p = 0
    limit = min(len(old), len(new))
    while p < limit and old[p] == new[p]:
        p += 1
    q = 0
    while q < limit - p and old[len(old) - 1 - q] == new[len(new) - 1 - q]:
        q += 1
    return p, q
