"""TFL404 deprecated-mixed-precision-api: the table is the rule's `pattern:` data; this class only withholds
the `experimental.LossScaleOptimizer` rename when the call passes the old `loss_scale` argument, which the new
constructor does not take."""
from __future__ import annotations

import libcst as cst

from ..declarative import DeclarativeCheck

OLD_LSO = "keras.mixed_precision.experimental.LossScaleOptimizer"


class DeprecatedMixedPrecisionApi(DeclarativeCheck):
    code = "TFL404"
    compat_sensitive = True

    def _symbol(self, node: cst.BaseExpression) -> None:
        parent = self.index.parent(node)
        if (isinstance(parent, cst.Call) and parent.func is node and len(parent.args) > 1
                and self.names.qualified_name(node) == OLD_LSO):
            self.report(node, "`mixed_precision.experimental.LossScaleOptimizer(opt, loss_scale)` is "
                              "`mixed_precision.LossScaleOptimizer(opt, dynamic=..., initial_scale=...)` since TF 2.4")
            return
        super()._symbol(node)
