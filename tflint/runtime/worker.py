"""The child side of `tflint.runtime.child.run_in_child`: `python -m tflint.runtime.worker REQUEST RESPONSE`.

Reads {"entry": "module:function", "payload": {...}} from REQUEST, calls the function and writes
{"status": "ok", "value": ...} or {"status": "error"|"crash", "message": ..., "details": ...} to RESPONSE.

With `"fast_exit": true` in the request (`tflint run`: the user's script ran in this process), the worker does not
leave through the interpreter's finalization once the response is written: tearing down TensorFlow's and Keras's
modules (hundreds of thousands of objects, then TensorFlow's C++ state) took 0.65-3 s after every run, which the
user waited for. `fast_exit` does what finalization does that a script can see, then `os._exit`: it waits for the
script's non-daemon threads, runs the `atexit` handlers (logging's flush, multiprocessing's clean-up,
`weakref.finalize`, the script's own), flushes every file object still open for writing (a file a module
still holds, which the teardown of that module would have flushed), collects the garbage the script left in
reference cycles (so `__del__` methods run), and flushes C's stdio buffers.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import traceback


def main(argv: list[str]) -> int:
    req_path, resp_path = argv[1], argv[2]
    with open(req_path, encoding="utf-8") as f:
        request = json.load(f)
    from .child import UserCodeError

    try:
        module_name, _, func_name = request["entry"].partition(":")
        func = getattr(importlib.import_module(module_name), func_name)
        value = func(request.get("payload") or {})
        out = {"status": "ok", "value": value}
    except UserCodeError as exc:
        out = {"status": "error", "message": exc.message, "details": exc.details}
    except Exception as exc:  # noqa: BLE001 - reported to the parent as an internal error, with the traceback
        out = {
            "status": "crash",
            "message": f"internal error in tflint's child process: {type(exc).__name__}: {exc}",
            "details": traceback.format_exc(),
        }
    try:
        text = json.dumps(out, default=_jsonable)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"status": "crash", "message": f"internal error: result is not JSON: {exc}"})
    with open(resp_path, "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.flush()
    if request.get("fast_exit"):
        fast_exit(0)
    return 0


def fast_exit(code: int) -> None:
    """Exit now, with what the interpreter's finalization would have done that a script can observe, without the
    teardown of every module (see the module doc). Never returns."""
    import atexit
    import gc
    import io
    import threading

    shutdown = getattr(threading, "_shutdown", None)  # what the interpreter calls first: join non-daemon threads
    for step in (shutdown, atexit._run_exitfuncs):
        if step is None:
            continue
        try:
            step()
        except BaseException:  # noqa: BLE001 - as at a normal exit, a failing handler does not stop the others
            traceback.print_exc()
    # files still open for writing: flushed, as the interpreter's teardown of the modules holding them would (a
    # text layer before the buffer under it); the kernel closes their descriptors
    streams = [s for s in (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__) if s]
    std = {id(s) for s in streams} | {id(getattr(s, "buffer", None)) for s in streams}
    text, binary = [], []
    for obj in gc.get_objects():  # exact types: io.IOBase is an ABC, several times slower to test on every object
        kind = type(obj)
        if kind is io.TextIOWrapper and id(obj) not in std:
            text.append(obj)
        elif (kind is io.BufferedWriter or kind is io.BufferedRandom) and id(obj) not in std:
            binary.append(obj)
    for f in (*text, *binary):
        try:
            if not f.closed:
                f.flush()
        except BaseException:  # noqa: BLE001 - a file that cannot be flushed now could not be at exit either
            pass
    # then the garbage the script left in reference cycles (its module's globals, which its functions refer to),
    # so that `__del__` methods run; its files are flushed already (finalized in one batch, a text file can be
    # closed after the buffer under it, losing what it held)
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # C libraries' buffered stdout (the kernel has everything else)
    except (OSError, AttributeError):  # pragma: no cover - no C library to ask (Windows)
        pass
    os._exit(code)


def _jsonable(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
