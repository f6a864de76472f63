"""The child side of `tflint.runtime.child.run_in_child`: `python -m tflint.runtime.worker REQUEST RESPONSE`.

Reads {"entry": "module:function", "payload": {...}} from REQUEST, calls the function and writes
{"status": "ok", "value": ...} or {"status": "error"|"crash", "message": ..., "details": ...} to RESPONSE.
"""
from __future__ import annotations

import importlib
import json
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
    return 0


def _jsonable(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    return str(obj)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
