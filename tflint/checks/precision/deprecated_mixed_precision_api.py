"""TFL404 deprecated-mixed-precision-api: the table is the rule's `pattern:` data; this class withholds the
`experimental.LossScaleOptimizer` rename when the call passes the old `loss_scale` argument, which the new
constructor does not take, and keeps the Keras `mixed_precision.experimental` names silent on targets where they
still work."""
from __future__ import annotations

import libcst as cst

from ..declarative import DeclarativeCheck

OLD_LSO = "keras.mixed_precision.experimental.LossScaleOptimizer"
KERAS_EXPERIMENTAL = "keras.mixed_precision.experimental."
# `tf.keras.mixed_precision.experimental` was deprecated in TF 2.4 (when the non-experimental names arrived) and
# removed in TF 2.9 (its release notes; tests/test_keras_tables.py checks it is gone from the installed TF). Before
# 2.9 it works (with a deprecation warning): a project pinned there is not told to change it.
KERAS_EXPERIMENTAL_REMOVED = (2, 9)

# The graph rewrite and the `LossScale` classes are how TF1 graph code (a raw-ops model with a compat.v1 optimizer,
# Horovod) does mixed precision; the Keras policy that replaces them is stable from TF 2.4. On a TF1 file or an
# older target they are the API (mozilla/DeepSpeech on TF 1.15.4, judged false in round 16).
TF1_MIXED_PRECISION = frozenset({"enable_mixed_precision_graph_rewrite", "disable_mixed_precision_graph_rewrite",
                                 "LossScale", "DynamicLossScale", "FixedLossScale"})
KERAS_POLICY_SINCE = (2, 4)


class DeprecatedMixedPrecisionApi(DeclarativeCheck):
    code = "TFL404"
    compat_sensitive = True

    def _symbol(self, node: cst.BaseExpression) -> None:
        q = self.names.qualified_name(node)
        if q and q.startswith(KERAS_EXPERIMENTAL) and self.target_version < KERAS_EXPERIMENTAL_REMOVED:
            return
        if q and q.rsplit(".", 1)[-1] in TF1_MIXED_PRECISION and (self.ctx.target.tf1 or self.target_version < KERAS_POLICY_SINCE):
            return  # TF1 graph code, or TF before the Keras policy API: the graph rewrite and LossScale are its API
        parent = self.index.parent(node)
        if (isinstance(parent, cst.Call) and parent.func is node and len(parent.args) > 1
                and q == OLD_LSO):
            self.report(node, "`mixed_precision.experimental.LossScaleOptimizer(opt, loss_scale)` is "
                              "`mixed_precision.LossScaleOptimizer(opt, dynamic=..., initial_scale=...)` since TF 2.4")
            return
        super()._symbol(node)
