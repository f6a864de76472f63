"""What the TF1 session rules (TFL605, TFL607) know about sessions: which calls create one, and whether an
expression is one (a name bound by `with tf.Session() as sess:` or `sess = tf.compat.v1.Session()`, or `self.sess`
assigned once from such a call)."""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ...semantics import Semantics
from ..keras.models import origin_call

SESSIONS = frozenset({
    "tensorflow.Session", "tensorflow.compat.v1.Session", "tensorflow.InteractiveSession",
    "tensorflow.compat.v1.InteractiveSession", "tensorflow.train.MonitoredTrainingSession",
    "tensorflow.compat.v1.train.MonitoredTrainingSession", "tensorflow.train.MonitoredSession",
    "tensorflow.compat.v1.train.MonitoredSession", "tensorflow.compat.v1.train.SingularMonitoredSession",
    "tensorflow.train.SingularMonitoredSession",
})
DEFAULT_SESSION = frozenset({"tensorflow.get_default_session", "tensorflow.compat.v1.get_default_session",
                             "tensorflow.keras.backend.get_session", "keras.backend.get_session",
                             "tensorflow.compat.v1.keras.backend.get_session"})


_SESSION_PARAM = re.compile(r"(?:\w+_)?(?:sess|session)(?:_\w+)?")


def _feeds(sem: Semantics, fn, name: str) -> bool:
    """`fn` calls `name.run(..., feed_dict=...)`: the TF1 session API, spelled out."""
    if fn is None:
        return False
    for call in sem.functions.calls_in(fn):
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value == "run" and isinstance(f.value, cst.Name) \
                and f.value.value == name and any(a.keyword is not None and a.keyword.value == "feed_dict"
                                                   for a in call.args):
            return True
    return False


def is_session(sem: Semantics, expr: cst.BaseExpression, default: bool = False) -> bool:
    """`expr` is a TF1 session created in this file (through `with ... as`, an assignment or `self.x`); with
    `default`, also the default session (`tf.compat.v1.get_default_session()`, Keras's `get_session()`)."""
    call: Optional[cst.Call] = expr if isinstance(expr, cst.Call) else None
    if isinstance(expr, cst.Name):
        b = sem.index.lookup(expr.value, expr)
        if b is not None and b.kind in ("with", "assign") and isinstance(b.value, cst.Call):
            call = b.value
        elif b is not None and b.kind == "param" and isinstance(b.node, cst.Param) and b.node.annotation is None \
                and _SESSION_PARAM.fullmatch(expr.value) and _feeds(sem, b.scope, expr.value):
            # `def run_loop(self, session, ...)` whose body runs `session.run(fetches, feed_dict=...)`: a TF1 session
            # handed in (nlp-architect's Match-LSTM trainer, a round-27 TFL605 miss)
            return True
    if call is None:
        call = origin_call(sem, expr)
    if call is None:
        return False
    q = sem.call_name(call)
    return q in SESSIONS or (default and q in DEFAULT_SESSION)
