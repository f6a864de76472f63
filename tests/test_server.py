"""End-to-end tests of `tflint server`: a separate process spoken to over stdio, as an editor does.

A minimal LSP client for tests: starts `python -m tflint server` as a separate process and speaks JSON-RPC
over its stdio (Content-Length framing), as an editor does. It answers the server's own requests
(client/registerCapability, workspace/applyEdit, window/workDoneProgress/create) and records them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60.0  # generous: the machine is shared; nothing here measures time


class LspError(Exception):
    pass


class LspClient:
    def __init__(self, cwd: Path, apply_edit_result: bool = True) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tflint", "server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd),
            env=env,
        )
        self._next_id = 0
        self._responses: dict[int, dict] = {}
        self._cond = threading.Condition()
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self.apply_edit_result = apply_edit_result
        self._stderr: list[bytes] = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- wire ------------------------------------------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
        self.proc.stdin.flush()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line)

    def _read_loop(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode("ascii").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = out.read(int(headers["content-length"]))
            msg = json.loads(body.decode("utf-8"))
            if "id" in msg and "method" in msg:
                self._answer(msg)
            with self._cond:
                if "id" in msg and "method" not in msg:
                    self._responses[msg["id"]] = msg
                elif "method" in msg and "id" not in msg:
                    self.notifications.append(msg)
                self._cond.notify_all()

    def _answer(self, msg: dict) -> None:
        self.server_requests.append(msg)
        method = msg["method"]
        if method == "workspace/applyEdit":
            result: Any = {"applied": self.apply_edit_result}
        else:
            result = None
        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    # -- API -------------------------------------------------------------------------------------------------
    def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        self._next_id += 1
        mid = self._next_id
        self._send({"jsonrpc": "2.0", "id": mid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise LspError(f"no response to {method}; server stderr:\n{self.stderr}")
                self._cond.wait(min(left, 0.5))
            msg = self._responses.pop(mid)
        if "error" in msg:
            raise LspError(f"{method}: {msg['error']}")
        return msg.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, method: str, pred: Callable[[dict], bool] = lambda p: True, timeout: float = TIMEOUT,
                 start: int = 0) -> dict:
        """The params of the first notification `method` (from index `start` on) whose params satisfy `pred`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.notifications[start:]:
                    if msg["method"] == method and pred(msg.get("params")):
                        return msg["params"]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    seen = [m["method"] for m in self.notifications]
                    raise LspError(f"no {method} notification matched; got {seen}; stderr:\n{self.stderr}")
                self._cond.wait(min(left, 0.5))

    def mark(self) -> int:
        with self._cond:
            return len(self.notifications)

    def diagnostics(self, uri: str, version: Optional[int] = None, start: int = 0) -> list[dict]:
        def pred(p: dict) -> bool:
            return p["uri"] == uri and (version is None or p.get("version") == version)

        return self.wait_for("textDocument/publishDiagnostics", pred, start=start)["diagnostics"]

    def initialize(self, root: Path, encodings: tuple[str, ...] = ("utf-16",), **init_options: Any) -> dict:
        caps = {
            "general": {"positionEncodings": list(encodings)},
            "textDocument": {
                "synchronization": {"didSave": True, "dynamicRegistration": False},
                "publishDiagnostics": {"versionSupport": True},
                "codeAction": {
                    "codeActionLiteralSupport": {
                        "codeActionKind": {"valueSet": ["quickfix", "source", "source.fixAll"]}
                    }
                },
                "hover": {"contentFormat": ["markdown", "plaintext"]},
            },
            "workspace": {
                "applyEdit": True,
                "didChangeWatchedFiles": {"dynamicRegistration": True},
                "workspaceFolders": True,
            },
            "notebookDocument": {"synchronization": {"dynamicRegistration": False}},
        }
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": caps,
                "initializationOptions": init_options or None,
            },
        )
        self.notify("initialized", {})
        return result

    def close(self) -> int:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None)
                self.notify("exit", None)
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def apply_text_edits(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (UTF-16 positions) to `text`, as an editor would."""
    import re

    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(pos: dict) -> int:
        line = pos["line"]
        if line >= len(starts):
            return len(text)
        s = starts[line]
        e = starts[line + 1] if line + 1 < len(starts) else len(text)
        units = 0
        i = s
        while i < e and units < pos["character"] and text[i] not in "\r\n":
            units += 2 if ord(text[i]) > 0xFFFF else 1
            i += 1
        return i

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits), reverse=True)
    for s, t, new in spans:
        text = text[:s] + new + text[t:]
    return text


# ---------------------------------------------------------------------------------------------------------------
# The tests: each starts its own server process in a scratch workspace.
from tflint.api import check_source, fix_source
from tflint.config import Config
from tflint.engine import Settings
from tflint.registry import default_registry

SELECT = '[tool.tflint]\nselect = ["TFL101", "TFL102"]\n'  # other rules must not change what these tests see

PIPELINE = '''import tensorflow as tf

label = "😀"; ds = tf.data.Dataset.range(10).map(lambda x: tf.strings.as_string(x))
for x in ds:
    train_step(x)
'''


def utf16_position(text: str, row: int, column: int) -> dict:
    """1-based row/column (code points) -> 0-based LSP position in UTF-16 units, computed independently."""
    line = text.split("\n")[row - 1]
    prefix = line[: column - 1]
    return {"line": row - 1, "character": len(prefix.encode("utf-16-le")) // 2}


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "pyproject.toml").write_text(SELECT)
    return tmp_path


def settings_of(workspace: Path, **kwargs) -> Settings:
    """What `tflint check` would use in this workspace (the expectation, computed in this process)."""
    return Settings.create(default_registry(), Config.load(start=workspace), **kwargs)


@pytest.fixture
def client(workspace):
    c = LspClient(workspace)
    yield c
    c.close()


def open_doc(c: LspClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})
    return uri


def test_initialize_advertises_features(client, workspace):
    result = client.initialize(workspace)
    caps = result["capabilities"]
    assert result["serverInfo"]["name"] == "tflint"
    assert caps["hoverProvider"]
    assert "quickfix" in caps["codeActionProvider"]["codeActionKinds"]
    assert "source.fixAll.tflint" in caps["codeActionProvider"]["codeActionKinds"]
    assert "tflint.applyAutofix" in caps["executeCommandProvider"]["commands"]
    assert caps["textDocumentSync"]["openClose"] and caps["textDocumentSync"]["save"] is not None
    assert caps["notebookDocumentSync"]["notebookSelector"]
    # the client offered dynamic registration: the server watches pyproject.toml files
    deadline = time.monotonic() + TIMEOUT
    while not any(r["method"] == "client/registerCapability" for r in client.server_requests):
        assert time.monotonic() < deadline, "no client/registerCapability request"
        time.sleep(0.05)
    reg = next(r for r in client.server_requests if r["method"] == "client/registerCapability")
    watchers = reg["params"]["registrations"][0]["registerOptions"]["watchers"]
    assert watchers[0]["globPattern"].endswith("pyproject.toml")
    assert client.close() == 0  # shutdown then exit: exit code 0 per the protocol


def test_exit_without_shutdown_is_exit_code_1(client, workspace):
    client.initialize(workspace)
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 1


def test_open_publishes_the_same_findings_as_check_with_lsp_positions(client, workspace):
    client.initialize(workspace)
    path = workspace / "train.py"
    uri = open_doc(client, path, PIPELINE)
    diags = client.diagnostics(uri, version=1)
    expected = check_source(PIPELINE, str(path), settings_of(workspace))
    assert sorted(d["code"] for d in diags) == sorted(f.code for f in expected) == ["TFL101", "TFL102"]
    for f in expected:
        d = next(d for d in diags if d["code"] == f.code)
        assert d["range"]["start"] == utf16_position(PIPELINE, f.location.row, f.location.column)
        assert d["range"]["end"] == utf16_position(PIPELINE, f.end_location.row, f.end_location.column)
        assert d["source"] == "tflint" and d["severity"] == 2 and d["message"] == f.message
    d101 = next(d for d in diags if d["code"] == "TFL101")
    # the emoji is one code point but two UTF-16 units: `map` starts at code point 44, UTF-16 unit 45
    assert d101["range"]["start"] == {"line": 2, "character": 45}
    assert PIPELINE.split("\n")[2].encode("utf-16-le")[45 * 2: 48 * 2].decode("utf-16-le") == "map"


def test_did_change_is_debounced_and_publishes_for_the_latest_version(workspace):
    c = LspClient(workspace)
    try:
        c.initialize(workspace, debounce=0.2)
        path = workspace / "train.py"
        uri = open_doc(c, path, PIPELINE)
        assert len(c.diagnostics(uri, version=1)) == 2
        mark = c.mark()
        # quick edits (incremental), as typing does; the last one adds num_parallel_calls: only TFL102 remains
        for v in range(2, 7):
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": v},
                "contentChanges": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}},
                                    "text": f"# edit {v}\n"}],
            })
        line = PIPELINE.split("\n")[2]
        col16 = len(line.encode("utf-16-le")) // 2 - 1  # before the closing parenthesis of map(...)
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 7},
            "contentChanges": [{"range": {"start": {"line": 7, "character": col16}, "end": {"line": 7, "character": col16}},
                                "text": ", num_parallel_calls=tf.data.AUTOTUNE"}],
        })
        diags = c.diagnostics(uri, version=7, start=mark)
        assert [d["code"] for d in diags] == ["TFL102"]
        published = [n["params"].get("version") for n in c.notifications[mark:]
                     if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri]
        # a stale version is never published after a newer one
        assert published == sorted(published) and published[-1] == 7
        # saving re-checks at once
        mark = c.mark()
        c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [d["code"] for d in c.diagnostics(uri, version=7, start=mark)] == ["TFL102"]
        # closing clears the file's diagnostics
        mark = c.mark()
        c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert c.diagnostics(uri, start=mark) == []
    finally:
        c.close()


def test_quick_fixes_suppression_and_unsafe_label(client, workspace):
    client.initialize(workspace)
    text = PIPELINE + "\nnoisy = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(tf.cast(x, tf.float32) + tf.random.uniform([])))\n"
    path = workspace / "train.py"
    uri = open_doc(client, path, text)
    diags = client.diagnostics(uri, version=1)
    d101 = next(d for d in diags if d["code"] == "TFL101" and d["range"]["start"]["line"] == 2)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": d101["range"], "context": {"diagnostics": [d101]}})
    titles = [a["title"] for a in actions]
    assert all(a["kind"] == "quickfix" for a in actions), titles  # no source actions unless asked for
    fix = next(a for a in actions if a["title"].startswith("TFL101:"))
    assert fix["isPreferred"] and "unsafe" not in fix["title"]
    fixed = apply_text_edits(text, fix["edit"]["changes"][uri])
    assert "map(lambda x: tf.strings.as_string(x), num_parallel_calls=tf.data.AUTOTUNE)" in fixed.split("\n")[2]
    assert not [f for f in check_source(fixed, str(path), settings_of(workspace)) if f.code == "TFL101" and f.location.row == 3]

    suppress = next(a for a in actions if a["title"].startswith("Suppress TFL101"))
    silenced = apply_text_edits(text, suppress["edit"]["changes"][uri])
    assert silenced.split("\n")[2].endswith("  # noqa: TFL101")
    left = check_source(silenced, str(path), settings_of(workspace))
    assert [f.code for f in left if f.location.row == 3] == ["TFL102"]

    # the random op makes TFL101's fix unsafe: offered, labelled, not preferred
    d_unsafe = next(d for d in diags if d["range"]["start"]["line"] == 6)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": d_unsafe["range"], "context": {"diagnostics": [d_unsafe]}})
    unsafe = next(a for a in actions if a["title"].startswith("TFL101:"))
    assert "unsafe" in unsafe["title"] and not unsafe.get("isPreferred")

    # a range without findings offers nothing
    none = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
        "context": {"diagnostics": []}})
    assert not none


def test_fix_all_applies_safe_fixes_only_like_check_fix(client, workspace):
    client.initialize(workspace)
    # unsafe-fixes on in the config must not leak into fixAll
    (workspace / "pyproject.toml").write_text(SELECT + "unsafe-fixes = true\n")
    text = PIPELINE + "\nnoisy = tf.data.Dataset.range(3).map(lambda x: tf.strings.as_string(tf.cast(x, tf.float32) + tf.random.uniform([])))\n"
    path = workspace / "train.py"
    uri = open_doc(client, path, text)
    client.diagnostics(uri, version=1)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [a["kind"] for a in actions] == ["source.fixAll.tflint"]
    got = apply_text_edits(text, actions[0]["edit"]["changes"][uri])
    expected = fix_source(text, str(path), settings_of(workspace, unsafe_fixes=False)).text
    assert got == expected != text
    assert "tf.random.uniform([])))\n" in got  # the unsafe TFL101 fix was not applied
    assert ".prefetch(tf.data.AUTOTUNE)" in got

    # the same through the command: the server asks the editor to apply the edit
    result = client.request("workspace/executeCommand", {"command": "tflint.applyAutofix", "arguments": [uri]})
    assert result == {"applied": True, "edits": 1}
    apply = [r for r in client.server_requests if r["method"] == "workspace/applyEdit"]
    assert len(apply) == 1
    assert apply_text_edits(text, apply[0]["params"]["edit"]["changes"][uri]) == expected


def test_hover_shows_the_rule_documentation(client, workspace):
    client.initialize(workspace)
    path = workspace / "train.py"
    uri = open_doc(client, path, PIPELINE)
    diags = client.diagnostics(uri, version=1)
    d = next(d for d in diags if d["code"] == "TFL101")
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": d["range"]["start"]})
    value = hover["contents"]["value"]
    assert hover["contents"]["kind"] == "markdown"
    assert "# map-without-parallel-calls (TFL101)" in value and "## Why is this bad?" in value
    assert "# dataset-without-prefetch (TFL102)" in value  # both findings cover this spot
    nothing = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 2}})
    assert nothing is None


def test_config_is_read_and_reloaded_when_it_changes(client, workspace):
    (workspace / "pyproject.toml").write_text(SELECT + 'ignore = ["TFL102"]\n')
    client.initialize(workspace)
    path = workspace / "train.py"
    uri = open_doc(client, path, PIPELINE)
    assert [d["code"] for d in client.diagnostics(uri, version=1)] == ["TFL101"]
    mark = client.mark()
    (workspace / "pyproject.toml").write_text(SELECT + 'ignore = ["TFL101"]\n')
    client.notify("workspace/didChangeWatchedFiles", {
        "changes": [{"uri": (workspace / "pyproject.toml").as_uri(), "type": 2}]})
    assert [d["code"] for d in client.diagnostics(uri, start=mark)] == ["TFL102"]

    # a broken config is reported to the user and the defaults are used
    mark = client.mark()
    (workspace / "pyproject.toml").write_text('[tool.tflint]\nselct = ["TFL101"]\n')
    defaults = sorted({f.code for f in check_source(PIPELINE, str(path), Settings.create(default_registry(), Config()))})
    client.notify("workspace/didChangeWatchedFiles", {
        "changes": [{"uri": (workspace / "pyproject.toml").as_uri(), "type": 2}]})
    msg = client.wait_for("window/showMessage", start=mark)
    assert msg["type"] == 1 and "selct" in msg["message"]
    assert sorted({d["code"] for d in client.diagnostics(uri, start=mark)}) == defaults
    assert "TFL101" in defaults


def test_notebook_cells_get_their_own_diagnostics(client, workspace):
    client.initialize(workspace)
    nb_uri = (workspace / "explore.ipynb").as_uri()
    cells_src = [
        "import tensorflow as tf\n%matplotlib inline\n",
        "# Title",
        "ds = tf.data.Dataset.range(4)\nds = ds.map(lambda x: tf.strings.as_string(x * 2))\n",
    ]
    cell_uris = [f"vscode-notebook-cell://{workspace}/explore.ipynb#cell{i}" for i in range(3)]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {
            "uri": nb_uri, "notebookType": "jupyter-notebook", "version": 1,
            "cells": [{"kind": 2, "document": cell_uris[0]}, {"kind": 1, "document": cell_uris[1]},
                      {"kind": 2, "document": cell_uris[2]}],
        },
        "cellTextDocuments": [
            {"uri": cell_uris[0], "languageId": "python", "version": 1, "text": cells_src[0]},
            {"uri": cell_uris[1], "languageId": "markdown", "version": 1, "text": cells_src[1]},
            {"uri": cell_uris[2], "languageId": "python", "version": 1, "text": cells_src[2]},
        ],
    })
    diags = client.diagnostics(cell_uris[2])
    assert [d["code"] for d in diags] == ["TFL101"]
    assert diags[0]["range"]["start"] == {"line": 1, "character": 8}  # row 2 of the cell, at `map`
    assert client.diagnostics(cell_uris[0]) == []
    # quick fix on the cell edits the cell
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cell_uris[2]}, "range": diags[0]["range"], "context": {"diagnostics": diags}})
    fix = next(a for a in actions if a["title"].startswith("TFL101:"))
    assert apply_text_edits(cells_src[2], fix["edit"]["changes"][cell_uris[2]]).split("\n")[1] == (
        "ds = ds.map(lambda x: tf.strings.as_string(x * 2), num_parallel_calls=tf.data.AUTOTUNE)")
    fix_all = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cell_uris[2]}, "range": diags[0]["range"],
        "context": {"diagnostics": [], "only": ["source.fixAll.tflint"]}})
    assert list(fix_all[0]["edit"]["changes"]) == [cell_uris[2]]
    # editing the cell (a notebook change) re-checks it
    mark = client.mark()
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb_uri, "version": 2},
        "change": {"cells": {"textContent": [{
            "document": {"uri": cell_uris[2], "version": 2},
            "changes": [{"range": {"start": {"line": 1, "character": 27}, "end": {"line": 1, "character": 27}},
                         "text": ", num_parallel_calls=4"}],
        }]}},
    })
    assert client.diagnostics(cell_uris[2], start=mark) == []


def test_excluded_files_get_no_diagnostics(client, workspace):
    (workspace / "pyproject.toml").write_text(SELECT + 'extend-exclude = ["generated/"]\n')
    client.initialize(workspace)
    (workspace / "generated").mkdir()
    (workspace / ".venv" / "lib").mkdir(parents=True)
    gen = open_doc(client, workspace / "generated" / "pipeline.py", PIPELINE)
    lib = open_doc(client, workspace / ".venv" / "lib" / "pipeline.py", PIPELINE)  # a default exclude
    mine = open_doc(client, workspace / "train.py", PIPELINE)
    assert len(client.diagnostics(mine, version=1)) == 2
    assert client.diagnostics(gen, version=1) == []
    assert client.diagnostics(lib, version=1) == []


def test_server_never_imports_tensorflow(workspace, tmp_path):
    """The server is as static as `tflint check`: a spy on the import system sees no TensorFlow import."""
    spy = tmp_path / "spy"
    spy.mkdir()
    mark = tmp_path / "tf-imported"
    (spy / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tensorflow' or name.startswith('tensorflow.'):\n"
        f"            open({str(mark)!r}, 'a').write(name + '\\n')\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Spy())\n"
        f"open({str(mark)!r} + '.loaded', 'a').close()\n"
    )
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(spy) + (os.pathsep + old if old else "")
    try:
        c = LspClient(workspace)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    try:
        c.initialize(workspace)
        uri = open_doc(c, workspace / "train.py", PIPELINE)
        diags = c.diagnostics(uri, version=1)
        d = diags[0]
        c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d["range"],
                                              "context": {"diagnostics": diags}})
        c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": d["range"]["start"]})
    finally:
        assert c.close() == 0
    assert Path(str(mark) + ".loaded").exists()
    assert not mark.exists(), mark.read_text()


def test_utf32_encoding_and_crlf_line_endings(client, workspace):
    """A client that offers only UTF-32 gets code-point columns; CRLF files keep their line numbers."""
    result = client.initialize(workspace, encodings=("utf-32",))
    assert result["capabilities"]["positionEncoding"] == "utf-32"
    text = PIPELINE.replace("\n", "\r\n")
    uri = open_doc(client, workspace / "train.py", text)
    diags = client.diagnostics(uri, version=1)
    d101 = next(d for d in diags if d["code"] == "TFL101")
    assert d101["range"]["start"] == {"line": 2, "character": 44}  # code points: the emoji counts once
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": d101["range"], "context": {"diagnostics": [d101]}})
    edit = next(a for a in actions if a["title"].startswith("TFL101:"))["edit"]["changes"][uri][0]
    line = PIPELINE.split("\n")[2]
    assert edit["range"]["start"] == {"line": 2, "character": len(line) - 1}  # before `)`, in code points
