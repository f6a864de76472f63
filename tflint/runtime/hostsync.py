"""Host-device synchronisation in the user's loops (TFL810), the child side of `tflint run`.

Every read of an eager tensor's value back into Python (`.numpy()`, `float(t)`, `int(t)`, `bool(t)` / `if t:`,
`print(t)` / `str(t)`, an f-string, `np.asarray(t)`) is timed when the user's own code makes it on the main thread
(Keras's and TensorFlow's own reads are not the user's lines; a `py_function` body runs on another thread). Each
read is kept by its line and the user's frames above it, so a read in a helper that the loop calls is found in
the loop. After the run, a line inside a loop that read back at least `min-per-step` times per step (the calls of
the most-called `tf.function`) and `min-count` times in all is TFL810, with its count and the time it took.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections import Counter
from typing import Any, Callable, Optional

from .trace import LoopIndex, is_user_file

# the hooked methods of EagerTensor and how the user spells them
_SPELLING = {
    "numpy": "`.numpy()`",
    "__float__": "`float()`",
    "__int__": "`int()`",
    "__index__": "`int()`/indexing",
    "__bool__": "`bool()` (`if tensor:`)",
    "__format__": "an f-string/`format()`",
    "__str__": "`print()`/`str()`",
    "__repr__": "`repr()`",
    "__array__": "`np.asarray()`",
}
# where a finding points on its line, when one kind of read made it
_HINT = {"numpy": ".numpy(", "__float__": "float(", "__int__": "int(", "__str__": "print(", "__array__": "asarray("}
_FRAMES = 4  # user frames kept per read: the line that reads and the callers that may hold the loop

DEFAULTS = {"sync_min_per_step": 0.5, "sync_min_count": 5}


class _Site:
    __slots__ = ("count", "seconds", "kinds")

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.kinds: Counter = Counter()


class SyncWatch:
    """Wraps the value-reading methods of TensorFlow's eager tensor class while installed."""

    def __init__(self) -> None:
        self.sites: dict[tuple, _Site] = {}
        self._user: dict[str, bool] = {}
        self._restore: list[tuple[Any, str, Any]] = []
        self._main = threading.main_thread().ident
        self._depth = 0

    def install(self) -> None:
        from tensorflow.python.framework import ops

        base = ops._EagerTensorBase
        for name in _SPELLING:
            original = vars(base).get(name)
            if original is None:
                continue
            setattr(base, name, self._wrap(original, name))
            self._restore.append((base, name, original))

    def uninstall(self) -> None:
        for cls, name, original in self._restore:
            setattr(cls, name, original)
        self._restore = []

    def _is_user(self, filename: str) -> bool:
        ok = self._user.get(filename)
        if ok is None:
            ok = self._user[filename] = is_user_file(filename)
        return ok

    def _wrap(self, original: Callable, name: str) -> Callable:
        watch = self

        @functools.wraps(original)
        def hooked(tensor, *args, **kwargs):
            frame = sys._getframe(1)
            if watch._depth or not watch._is_user(frame.f_code.co_filename) or threading.get_ident() != watch._main:
                return original(tensor, *args, **kwargs)
            watch._depth += 1
            t0 = time.perf_counter()
            try:
                return original(tensor, *args, **kwargs)
            finally:
                seconds = time.perf_counter() - t0
                watch._depth -= 1
                watch._record(frame, name, seconds)

        return hooked

    def _record(self, frame, name: str, seconds: float) -> None:
        key = []
        f = frame
        while f is not None and len(key) < _FRAMES:
            if self._is_user(f.f_code.co_filename):
                key.append((f.f_code.co_filename, f.f_lineno))
            f = f.f_back
        site = self.sites.get(tuple(key))
        if site is None:
            site = self.sites[tuple(key)] = _Site()
        site.count += 1
        site.seconds += seconds
        site.kinds[name] += 1


def sync_report(watch: Optional[SyncWatch], steps: int, step_name: Optional[str], findings: list[dict[str, Any]],
                options: dict[str, Any], short: Callable[[str], str]) -> list[dict[str, Any]]:
    """One entry per line that read tensors back to Python; TFL810 for the lines in a loop that did so about every
    step. `steps`: the calls of the most-called tf.function (the training step)."""
    if watch is None:
        return []
    opts = {**DEFAULTS, **options}
    loops = LoopIndex()
    merged: dict[tuple[str, int], dict[str, Any]] = {}  # by the reading line (several callers add up)
    for key, site in watch.sites.items():
        if not key:
            continue
        file, line = os.path.abspath(key[0][0]), key[0][1]
        loop = None
        for f, ln in key:  # the innermost user frame whose line is inside a loop: the loop that runs the read
            found = loops.loop_at((os.path.abspath(f), ln))
            if found is not None:
                loop = found
                break
        entry = merged.get((file, line))
        if entry is None:
            entry = merged[(file, line)] = {"file": file, "line": line, "count": 0, "seconds": 0.0, "kinds": Counter(),
                                            "loop": None}
        entry["count"] += site.count
        entry["seconds"] += site.seconds
        entry["kinds"].update(site.kinds)
        if loop is not None and entry["loop"] is None:
            entry["loop"] = loop
    out = []
    for entry in sorted(merged.values(), key=lambda e: (-e["count"], e["file"], e["line"])):
        per_step = entry["count"] / steps if steps else None
        report = {"file": entry["file"], "line": entry["line"], "count": entry["count"],
                  "seconds": round(entry["seconds"], 6), "per_step": round(per_step, 3) if per_step is not None else None,
                  "kinds": {_SPELLING[k]: n for k, n in entry["kinds"].most_common()},
                  "loop_file": entry["loop"][0] if entry["loop"] else None,
                  "loop_line": entry["loop"][1] if entry["loop"] else None, "finding": False}
        out.append(report)
        if (entry["loop"] is None or not steps or steps < int(opts["sync_min_count"])
                or entry["count"] < int(opts["sync_min_count"]) or per_step < float(opts["sync_min_per_step"])):
            continue
        report["finding"] = True
        spelled = " and ".join(report["kinds"])
        mean_us = 1e6 * entry["seconds"] / entry["count"]
        loop_file, loop_line = entry["loop"]
        in_loop = (f"in the loop at line {loop_line}" if loop_file == entry["file"]
                   else f"in the loop at {short(loop_file)}:{loop_line}")
        msg = (f"host sync in the loop: {spelled} read a tensor's value back to Python {entry['count']} times "
               f"{in_loop}, {per_step:.1f} per step ({steps} calls of `{step_name or 'the step'}`), "
               f"{entry['seconds'] * 1e3:.1f} ms in these reads in all ({mean_us:,.0f} µs each). Each read waits for "
               "every op queued before it and copies the value to the host: on a GPU or TPU that stops Python from "
               "queuing the next step while the device works, so the device idles between steps; on a CPU the ops "
               "have finished when they return, so the time measured here is small. Keep the value as a tensor "
               "(sum it in the step, or a `keras.metrics.Mean`) and read it every N steps or once per epoch")
        findings.append({"code": "TFL810", "message": msg, "file": entry["file"], "line": entry["line"],
                         "extra": {"count": entry["count"], "per_step": report["per_step"],
                                   "sites": [[entry["file"], entry["line"]]],
                                   "seconds": report["seconds"], "loop": [loop_file, loop_line],
                                   "hint": _HINT.get(next(iter(entry["kinds"]))) if len(entry["kinds"]) == 1 else None}})
    return out
