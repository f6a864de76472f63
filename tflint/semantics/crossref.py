"""What one file may ask of the rest of the project, and a record of what it asked.

A rule that meets a call to a function defined in another module of the project (`ds = data.make_dataset()`), or a
module-level function of its own file that other modules call, asks the project through `Semantics.project` (a
`ProjectView`). Without project facts (a single file, stdin, the language server, or the first pass of a run) every
answer is None: unknown, so rules stay silent, as they do for anything they cannot establish.

Every question and a fingerprint of its answer are recorded (`ProjectView.queries`). A run checks each file first
with no facts, builds the project's facts from every file's summary (`tflint.semantics.summary`, `tflint.modules`),
and checks again only the files for which some recorded question now has a different answer; the cache keeps the
record beside a file's findings and re-checks the file when an answer changes.

Questions (keys of the record):
    d:<name>            the dataset a call to the project function <name> (as this file spells it) returns
    g:<function>        whether another module calls this file's module-level <function> from graph code
    m:<name>            whether the project class a call names is a Keras "model" or "layer" subclass
    p:<function>:<pos>:<param>   what calls from other modules pass there: "dataset" (every one), "other", None
    f:<function>:<pos>:<param>   the same for a function passed there: "plain", "graph" (every one), "other", None
    t:<function>        where another module trains on the dataset this file's module-level <function> returns
    a:<name>            the TensorFlow or Keras name a project module or module-level name stands for
    b:<name>            whether the project function a call names returns a Keras model
    k:<name>            whether a name a file without TensorFlow in its text imports stands for Keras (a model
                        class or builder, a TensorFlow alias): then the file is analysed after all
"""
from __future__ import annotations

import json
from typing import Any, Optional, Protocol


class ProjectFacts(Protocol):
    def answer(self, path: str, key: str) -> Any:
        """The answer to question `key` asked by the file at `path` (None when unknown)."""


def fingerprint(answer: Any) -> str:
    if answer is None:
        return ""  # every answer of a run without project facts: no hashlib (OpenSSL) in a one-file run's start-up
    import hashlib

    return hashlib.sha1(json.dumps(answer, sort_keys=True, default=str).encode()).hexdigest()[:12]


class ProjectView:
    """One file's window on the project's facts (None: no facts, every answer unknown)."""

    def __init__(self, facts: Optional[ProjectFacts] = None, path: str = "") -> None:
        self.facts = facts
        self.path = path
        self.queries: dict[str, str] = {}

    def _ask(self, key: str) -> Any:
        answer = self.facts.answer(self.path, key) if self.facts is not None else None
        self.queries[key] = fingerprint(answer)
        return answer

    def dataset_of_call(self, name: str) -> Optional[dict]:
        """The dataset returned by the project function a call names (`data.make_dataset`, `.data.make`):
        {"methods": [...], "kind": ..., "where": "path:row"} or None."""
        return self._ask(f"d:{name}")

    def model_builder(self, name: str) -> Optional[bool]:
        """True when the project function a call names returns a Keras model (`nets.unet.Unet`)."""
        return self._ask(f"b:{name}")

    def tf_alias(self, name: str) -> Optional[str]:
        """The TensorFlow or Keras name (canonical) a project module or module-level name stands for (`from
        pkg.backend import keras` where backend.py does `import keras`; a shim module that star-imports tf_keras)."""
        return self._ask(f"a:{name}")

    def keras_class_of_call(self, name: str) -> Optional[str]:
        """"model" or "layer" when the project class a call names (`VGG16(...)` imported from `model.py`)
        subclasses a Keras Model or Layer, else None."""
        return self._ask(f"m:{name}")

    def called_from_graph(self, function: str) -> bool:
        """Another module calls this file's module-level `function` from code that runs as a graph."""
        return bool(self._ask(f"g:{function}"))

    def param_elsewhere(self, function: str, position: Optional[int], param: str) -> Optional[bool]:
        """What calls of this file's module-level `function` from other modules pass for `param`: None when no
        other module calls it, True when every such call passes a dataset, False otherwise."""
        answer = self._ask(f"p:{function}:{'' if position is None else position}:{param}")
        return None if answer is None else answer == "dataset"

    def function_passed_elsewhere(self, function: str, position: Optional[int], param: str) -> Optional[str]:
        """What calls of this file's module-level `function` from other modules pass for `param` when it is a
        function of theirs: "plain" (every one passes a function that is not a graph function), "graph" (every one
        a `tf.function` or Keras step), "other", or None when no other module calls it."""
        return self._ask(f"f:{function}:{'' if position is None else position}:{param}")

    def trained_elsewhere(self, function: str, item: Optional[int] = None) -> Optional[str]:
        """Which other module ("train.py") trains on what this file's module-level `function` returns, as it
        is returned (no dataset step added there), or on the `item` of the tuple it returns; None when no module
        is known to."""
        return self._ask(f"t:{function}" if item is None else f"t:{function}#{item}")
