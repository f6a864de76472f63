"""Run user code in a child process with a time limit: the one runner shared by `tflint inspect` and `verify`.

User code (a FILE::FACTORY, and TensorFlow itself) is never imported into the tflint process. The parent calls

    result = run_in_child("tflint.runtime.analyze:inspect_target", {"target": "train.py::make"}, timeout=60)

which starts `python -m tflint.runtime.worker REQUEST RESPONSE` in a new session, writes the JSON request to a
temporary file, and waits at most `timeout` seconds. The worker imports `module`, calls `function(payload)` and
writes its return value (JSON) to the response file. The result is a `ChildResult`:

- `status == "ok"`: `value` is what the function returned;
- `status == "error"`: the user's code failed in a way the user can fix: the factory raised, returned something
  that is not a Dataset or `(fn, args)` / `(fn, args, kwargs)` / `(fn, calls)`, the file does not import, ...
  `message` says what happened in one line; `details` holds the user-side traceback (frames in tflint and
  TensorFlow trimmed) when there is one;
- `status == "timeout"`: the child ran longer than `timeout` seconds and was killed with its whole process group;
- `status == "crash"`: the child died (a signal, an out-of-memory kill, an internal error in tflint);
  `message` says how and `stderr` holds the tail of what it printed.

Inside the child, code raises `UserCodeError(message, details)` for the "error" status. `load_factory(target)`
loads a FILE::FACTORY, calls it and returns a `FactoryResult` (`kind` "dataset" or "function"); both are meant for
child-side entry points (they import TensorFlow only when the factory's file does, and `classify` does it lazily).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_TIMEOUT = "timeout"
STATUS_CRASH = "crash"

_STDERR_TAIL = 4000


def missing_runtime() -> Optional[str]:
    """Why the runtime module cannot run in this Python (TensorFlow or NumPy not installed), else None. Asked in
    the parent without importing either, so that a missing package is named with its remedy instead of surfacing
    as an internal error or as an ImportError blamed on the user's code."""
    import importlib.util

    missing = [m for m in ("tensorflow", "numpy") if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed in this Python "
            f"({sys.executable}); the runtime commands need them: pip install 'tflint[runtime]'")


class UserCodeError(Exception):
    """A failure the user can fix (bad target, factory raised, wrong return type). Raised in the child."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details


@dataclass
class ChildResult:
    status: str
    value: Any = None
    message: str = ""
    details: str = ""
    stderr: str = ""
    wall: float = 0.0  # seconds, including the child's start-up and TensorFlow import

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    def describe(self) -> str:
        """One readable paragraph for the terminal (no tflint traceback)."""
        if self.status == STATUS_OK:
            return "ok"
        text = self.message
        if self.details:
            text += "\n" + self.details.rstrip()
        return text


def child_env(extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The environment of a child: TensorFlow's C++ logging quieted, tflint importable from the child."""
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("PYTHONUNBUFFERED", "1")
    pkg_root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if extra:
        env.update(extra)
    return env


def passthrough_env() -> dict[str, str]:
    """The environment of a child that runs a user's script (`tflint run`): the user's own, with only tflint
    made importable (the child puts PYTHONPATH back as it was before the script starts)."""
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_in_child(
    entry: str,
    payload: dict[str, Any],
    timeout: float,
    *,
    cwd: Optional[str] = None,
    env: Optional[dict[str, str]] = None,
    python: Optional[str] = None,
    passthrough: bool = False,
    stdout_to_stderr: bool = False,
    on_start: Optional[Callable[[], None]] = None,
) -> ChildResult:
    """Call `entry` ("package.module:function") with `payload` in a fresh Python process; see the module doc.

    `payload` and the function's return value must be JSON-serializable. The child's stdout and stderr are
    captured (user code that prints does not garble tflint's output); the tail of stderr is in the result.
    With `passthrough` (`tflint run`: the user's script) the child inherits stdin, stdout and stderr and the
    user's environment (`passthrough_env`); `stdout_to_stderr` sends its stdout to our stderr (so that stdout
    carries only a JSON report). Ctrl-C in the parent is passed on to the child as SIGINT.
    `on_start()`, when given, runs in the parent once the child has started, before waiting for it (`tflint run`
    loads the project meanwhile); if it raises, the child's process group is killed and the exception passes on.
    """
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tflint-child-") as tmp:
        req = Path(tmp) / "request.json"
        resp = Path(tmp) / "response.json"
        # a passthrough child (the user's script) leaves without the interpreter's teardown (worker.fast_exit)
        req.write_text(json.dumps({"entry": entry, "payload": payload, "fast_exit": passthrough}), encoding="utf-8")
        cmd = [python or sys.executable, "-m", "tflint.runtime.worker", str(req), str(resp)]
        out_path = Path(tmp) / "stderr.txt"
        with open(out_path, "w+b") as errf, open(os.devnull, "wb") as nullf:
            if passthrough:
                sys.stdout.flush()
                sys.stderr.flush()
                child_env_ = passthrough_env()
                if env:
                    child_env_.update(env)
                proc = subprocess.Popen(
                    cmd, cwd=cwd, env=child_env_, stdin=None,
                    stdout=sys.stderr.fileno() if stdout_to_stderr else None, stderr=None, start_new_session=True,
                )
            else:
                proc = subprocess.Popen(
                    cmd, cwd=cwd, env=child_env(env), stdin=subprocess.DEVNULL, stdout=nullf, stderr=errf,
                    start_new_session=True,
                )
            try:
                if on_start is not None:
                    try:
                        on_start()
                    except KeyboardInterrupt:  # a Ctrl-C while the parent loads the project: the script's too
                        if not passthrough:
                            raise
                        _interrupt(proc)
                        on_start()  # the report still needs what it was loading
                rc = _wait(proc, timeout, forward_interrupt=passthrough)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                return ChildResult(
                    STATUS_TIMEOUT,
                    message=f"the user code did not finish within {timeout:g} s (raise --timeout if it needs longer)",
                    stderr=_tail(out_path),
                    wall=time.perf_counter() - start,
                )
            finally:
                if proc.poll() is None:  # pragma: no cover - interrupted
                    kill_group(proc)
        stderr = _tail(out_path)
        wall = time.perf_counter() - start
        if resp.exists():
            try:
                data = json.loads(resp.read_text(encoding="utf-8"))
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("status") in (STATUS_OK, STATUS_ERROR, STATUS_CRASH):
                return ChildResult(
                    data["status"], value=data.get("value"), message=data.get("message", ""),
                    details=data.get("details", ""), stderr=stderr, wall=wall,
                )
        if rc < 0:
            try:
                how = f"was killed by signal {signal.Signals(-rc).name}"
            except ValueError:  # pragma: no cover
                how = f"was killed by signal {-rc}"
        else:
            how = f"exited with status {rc} before reporting a result"
        hint = " (out of memory?)" if rc == -signal.SIGKILL else ""
        return ChildResult(STATUS_CRASH, message=f"the child process {how}{hint}", stderr=stderr, wall=wall)


def _wait(proc: subprocess.Popen, timeout: float, forward_interrupt: bool) -> int:
    """proc.wait(timeout); with `forward_interrupt`, a Ctrl-C here is sent on to the child's process group (it
    runs in its own session, so the terminal's SIGINT does not reach it) and the child gets the time left (at
    most 60 s) to stop and report."""
    deadline = time.monotonic() + timeout
    try:
        return proc.wait(timeout=timeout)
    except KeyboardInterrupt:
        if not forward_interrupt:
            raise
        _interrupt(proc)
        return proc.wait(timeout=max(1.0, min(60.0, deadline - time.monotonic())))


def _interrupt(proc: subprocess.Popen) -> None:
    """Send the child's process group the SIGINT that a terminal's Ctrl-C sent us."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-_STDERR_TAIL:].decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------------------------
# Child side
# ---------------------------------------------------------------------------------------------------------------


def parse_target(target: str) -> tuple[Path, str]:
    """`FILE::FACTORY` -> (path, factory name). Raises UserCodeError with a readable message."""
    if "::" not in target:
        raise UserCodeError(f"expected FILE::FACTORY, got {target!r} (e.g. train.py::make_dataset)")
    file, _, name = target.rpartition("::")
    if not file or not name.isidentifier():
        raise UserCodeError(f"expected FILE::FACTORY with a function name after `::`, got {target!r}")
    path = Path(file)
    if not path.is_file():
        raise UserCodeError(f"{file}: no such file")
    return path, name


def user_traceback(exc: BaseException, user_file: Optional[Path] = None) -> str:
    """The traceback of `exc` without tflint's own frames (and TensorFlow's internal frames shortened)."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = str(Path(__file__).resolve().parent.parent)
    kept = [f for f in frames if not f.filename.startswith(here)]
    lines = ["Traceback (most recent call last):"]
    lines += [ln.rstrip("\n") for ln in traceback.format_list(kept)]
    lines += [ln.rstrip("\n") for ln in traceback.format_exception_only(type(exc), exc)]
    return "\n".join(lines)


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message, shortened (TensorFlow's messages can run to pages; the whole
    message is in the traceback in `details`)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    if len(line) > limit:
        line = line[: limit - 1] + "…"
    return line + (" …" if len(text.splitlines()) > 1 else "")


def import_user_file(path: Path):
    """Import FILE as a module named after it, with its folder on sys.path (as `python FILE` would have)."""
    import importlib.util

    path = path.resolve()
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    mod_name = "_tflint_user_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise UserCodeError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in user code is the user's to see
        raise UserCodeError(
            f"{path.name}: importing the file raised {type(exc).__name__}: {first_line(exc)}", user_traceback(exc)
        ) from None
    return module


@dataclass
class FactoryResult:
    """What a factory returned, normalized. `kind` is "dataset" or "function"."""

    kind: str
    dataset: Any = None
    fn: Any = None
    calls: list[tuple[tuple, dict]] = field(default_factory=list)  # one (args, kwargs) per call
    form: str = ""  # "(fn, args)", "(fn, args, kwargs)", "(fn, calls)" or "Dataset"
    module: Any = None  # the imported user module


def load_factory(target: str) -> FactoryResult:
    """Import FILE, call FACTORY() and classify what it returned. Raises UserCodeError on any user-side problem."""
    path, name = parse_target(target)
    module = import_user_file(path)
    factory = getattr(module, name, None)
    if factory is None:
        raise UserCodeError(f"{path.name} has no top-level `{name}`")
    if not callable(factory):
        raise UserCodeError(f"{path.name}::{name} is a {type(factory).__name__}, not a zero-argument function")
    try:
        value = factory()
    except Exception as exc:  # noqa: BLE001
        raise UserCodeError(
            f"{path.name}::{name}() raised {type(exc).__name__}: {first_line(exc)}", user_traceback(exc)
        ) from None
    result = classify(value, f"{path.name}::{name}()")
    result.module = module
    return result


_EXPECTED = (
    "a factory must return a tf.data.Dataset, (fn, args), (fn, args, kwargs) or (fn, calls) where calls is a "
    "list of argument tuples"
)


def classify(value: Any, where: str = "the factory") -> FactoryResult:
    """Normalize a factory's return value; UserCodeError when it is none of the accepted shapes."""
    if "tensorflow" in sys.modules:
        import tensorflow as tf

        if isinstance(value, tf.data.Dataset):
            return FactoryResult("dataset", dataset=value, form="Dataset")
    if isinstance(value, tuple) and len(value) in (2, 3) and callable(value[0]):
        fn, second = value[0], value[1]
        if len(value) == 3:
            if not isinstance(second, (tuple, list)) or not isinstance(value[2], dict):
                raise UserCodeError(f"{where} returned (fn, args, kwargs) but args is not a tuple or kwargs not a "
                                    f"dict; {_EXPECTED}")
            return FactoryResult("function", fn=fn, calls=[(tuple(second), dict(value[2]))], form="(fn, args, kwargs)")
        if isinstance(second, list) and second and all(isinstance(c, tuple) for c in second):
            return FactoryResult("function", fn=fn, calls=[(tuple(c), {}) for c in second], form="(fn, calls)")
        if isinstance(second, tuple):
            return FactoryResult("function", fn=fn, calls=[(second, {})], form="(fn, args)")
        raise UserCodeError(f"{where} returned (fn, {type(second).__name__}); {_EXPECTED}")
    shown = type(value).__name__
    if isinstance(value, tuple):
        shown = f"a tuple of {len(value)}"
    raise UserCodeError(f"{where} returned {shown}; {_EXPECTED}")
