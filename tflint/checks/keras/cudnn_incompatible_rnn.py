"""TFL306 cudnn-incompatible-rnn: a Keras `LSTM`/`GRU` built with an argument that rules out the cuDNN kernel on a
GPU, so the layer runs the generic step-by-step loop.

Keras (2.x on TF >= 2.0, and 3) uses the fused cuDNN kernel only when `activation` is tanh, `recurrent_activation`
is sigmoid, `recurrent_dropout` is 0, `unroll` is False, `use_bias` is True and, for `GRU`, `reset_after` is True
(keras/src/backend/tensorflow/rnn.py `cudnn_ok`, keras/src/layers/rnn/lstm.py `inner_loop`). Only literal (or
constant-name) arguments are judged; `use_cudnn=False` is an explicit choice and silent. The cells (`LSTMCell`,
`GRUCell` inside `keras.layers.RNN`) never use cuDNN and are not reported.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ...semantics import get_arg, literal_value, NOT_LITERAL
from ..base import Check

LAYERS = {"keras.layers.LSTM": "LSTM", "keras.layers.GRU": "GRU", "keras.layers.recurrent_v2.LSTM": "LSTM",
          "keras.layers.recurrent_v2.GRU": "GRU"}
TANH = frozenset({"tanh", "tensorflow.tanh", "tensorflow.math.tanh", "tensorflow.nn.tanh", "keras.activations.tanh",
                  "keras.ops.tanh"})
SIGMOID = frozenset({"sigmoid", "tensorflow.sigmoid", "tensorflow.math.sigmoid", "tensorflow.nn.sigmoid",
                     "keras.activations.sigmoid", "keras.ops.sigmoid"})


class CudnnIncompatibleRnn(Check):
    code = "TFL306"

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.target.tf1 or self.target_version < (2, 0):
            return  # TF 1.x: `keras.layers.LSTM` never used cuDNN (`CuDNNLSTM` was a separate layer)
        kind = LAYERS.get(self.sem.call_name(node) or "")
        if kind is None:
            return
        use_cudnn = get_arg(node, "use_cudnn")
        if use_cudnn is not None and self._constant(use_cudnn.value) is False:
            return  # opted out explicitly
        reason = self._reason(node, kind)
        if reason is None:
            return
        arg, why = reason
        shown = f"{arg.keyword.value}={self.code_for(arg.value)}" if arg.keyword is not None else self.code_for(arg.value)
        cpu = (" (measured on a CPU too: an epoch about 2x slower with `recurrent_dropout=0.2`)"
               if arg.keyword is not None and arg.keyword.value == "recurrent_dropout" else "")
        self.report(arg, f"`{shown}` {why}: this `{kind}` cannot use the fused cuDNN kernel on a GPU and runs Keras' "
                         f"generic loop, one time step at a time{cpu}. cuDNN needs activation tanh, "
                         f"recurrent_activation sigmoid, recurrent_dropout 0, unroll False, use_bias True"
                         f"{' and reset_after True' if kind == 'GRU' else ''}")

    def _reason(self, call: cst.Call, kind: str) -> Optional[tuple[cst.Arg, str]]:
        act = get_arg(call, "activation", 1)
        if act is not None and self._function_name(act.value) not in (None, *TANH):
            return act, "is not tanh"
        rec = get_arg(call, "recurrent_activation", 2)
        if rec is not None and self._function_name(rec.value) not in (None, *SIGMOID):
            return rec, "is not sigmoid"
        drop = get_arg(call, "recurrent_dropout")
        v = self._constant(drop.value) if drop is not None else None
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return drop, "is above 0"
        for kw, bad, why in (("unroll", True, "unrolls the loop"), ("use_bias", False, "drops the bias")) + (
                (("reset_after", False, "is the Keras 1 GRU variant"),) if kind == "GRU" else ()):
            arg = get_arg(call, kw)
            if arg is not None and self._constant(arg.value) is bad:
                return arg, why
        return None

    def _function_name(self, expr: cst.BaseExpression) -> Optional[str]:
        """`"relu"` -> "relu"; `tf.nn.relu` -> its qualified name; None when not known (a variable, a call)."""
        v = self._constant(expr)
        if isinstance(v, str):
            return v
        if v is None and isinstance(expr, cst.Name) and expr.value == "None":
            return "linear"  # activation=None: linear
        if isinstance(expr, (cst.Name, cst.Attribute)):
            q = self.names.qualified_name(expr)
            if q and (q.startswith(("tensorflow.", "keras.")) or q in ("tanh", "sigmoid")):
                return q
        return None

    def _constant(self, expr: cst.BaseExpression):
        """A literal, or a name whose one binding in its scope is a literal (`DROPOUT = 0.2`)."""
        v = literal_value(expr)
        if v is not NOT_LITERAL or not isinstance(expr, cst.Name):
            return v if v is not NOT_LITERAL else NOT_LITERAL
        b = self.index.lookup(expr.value, expr)
        if b is None or b.kind not in ("assign", "annassign") or b.value is None or b.scope is None:
            return NOT_LITERAL
        scope = self.index.scopes.get(id(b.scope))
        if scope is None or len(scope.bindings.get(expr.value, ())) != 1:
            return NOT_LITERAL
        return literal_value(b.value)
