"""TFL604 tensor-growth-in-loop: `acc = tf.concat([acc, x], axis)` in a Python loop."""
from __future__ import annotations

import libcst as cst

from ...semantics import get_arg
from ..base import Check

CONCAT = frozenset({
    "tensorflow.concat", "tensorflow.experimental.numpy.concatenate", "tensorflow.experimental.numpy.append",
    "tensorflow.experimental.numpy.vstack", "tensorflow.experimental.numpy.hstack", "keras.ops.concatenate",
    "keras.ops.append", "keras.backend.concatenate",
})


# constructors of layers and variables: a loop that calls them builds a model
LAYER_PREFIXES = ("keras.layers.", "tensorflow.layers.", "tensorflow.compat.v1.layers.", "tensorflow.contrib.layers.",
                  "tensorflow.keras.layers.")


class TensorGrowthInLoop(Check):
    code = "TFL604"

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        name = node.targets[0].target.value
        call = node.value
        if not isinstance(call, cst.Call) or self.sem.call_name(call) not in CONCAT:
            return
        values = get_arg(call, "values", 0) or get_arg(call, "arrays", 0) or get_arg(call, "xs", 0) or get_arg(call, "tensors", 0)
        if values is None or not isinstance(values.value, (cst.List, cst.Tuple)):
            return
        if not any(isinstance(e.value, cst.Name) and e.value.value == name for e in values.value.elements):
            return
        loops = [lp for lp in self.index.enclosing_loops(node) if isinstance(lp, (cst.For, cst.While))]
        if not loops or not self._only_grown(name, node, loops[0]) or self._fed_back(name, node, loops[0]):
            return
        if self._builds_layers(loops[0]):
            return  # one layer per iteration (a CBHG bank of K convolutions): its compute outweighs the copy
        self.report(call, f"`{name}` grows by concatenation in a loop: every iteration copies everything gathered so "
                          "far (O(n²) copies in total); append the pieces to a Python list and concatenate once after "
                          "the loop (or use `tf.TensorArray` inside a tf.function)")

    def _builds_layers(self, loop: cst.CSTNode) -> bool:
        """Each iteration builds a layer: it opens a variable scope (`with tf.variable_scope('num_%d' % k):`) or
        constructs a Keras/TF1 layer or variable. The pieces are the architecture's (K banks, N branches), a
        fixed count, and each iteration's layer computes more than its output's copy costs (round 23:
        huseinzol05's Tacotron CBHG banks, 5 findings judged not worth acting on)."""
        body = getattr(loop, "body", None)
        if body is None:
            return False
        owner = self.functions.owner(loop)
        for call in self.index.nodes_inside(body, cst.Call):
            if self.functions.owner(call) is not owner:
                continue
            q = self.sem.call_name(call) or ""
            if q.endswith(("variable_scope", ".get_variable")) or q.startswith(LAYER_PREFIXES):
                return True
        return False

    def _fed_back(self, name: str, assign: cst.Assign, loop: cst.CSTNode) -> bool:
        """The loop reads the accumulated tensor for more than growing it (autoregressive generation feeds the
        sequence so far back to the model each step): the growth is the algorithm, a list cannot replace it."""
        body = getattr(loop, "body", None)
        if body is None:
            return False
        # the concatenation's own mentions of `name`: its target and the bare accumulator among the values. A
        # piece computed from the accumulator (`concat([out, tf.zeros_like(out)], i)` doubles it along an axis per
        # iteration: compare_gan's unpool, round 24, judged false) is a read: each step builds on the whole
        call = assign.value
        values = get_arg(call, "values", 0) or get_arg(call, "arrays", 0) or get_arg(call, "xs", 0) \
            or get_arg(call, "tensors", 0) if isinstance(call, cst.Call) else None
        bare = [e.value for e in values.value.elements] if values is not None and isinstance(
            values.value, (cst.List, cst.Tuple)) else []
        own = {id(t.target) for t in assign.targets} | {id(e) for e in bare if isinstance(e, cst.Name)}
        return any(n.value == name and id(n) not in own for n in self.index.nodes_inside(body, cst.Name)
                   if not (isinstance(self.index.parent(n), cst.AssignTarget)))

    def _only_grown(self, name: str, assign: cst.Assign, loop: cst.CSTNode) -> bool:
        """`name` is an accumulator: set before the loop and, inside it, only rebound by this concatenation (a
        U-Net style `x = concat([x, skip])` after `x = upsample(x)` transforms `x`, it does not accumulate)."""
        scope = self.index.scope_of(assign)
        inside = before = 0
        for b in scope.bindings.get(name, ()):
            if b.node is assign:
                continue
            if loop in self.index.ancestors(b.node) or b.node is loop:
                inside += 1
            elif b.order < self.index.order_of(loop):
                before += 1
        return inside == 0 and before > 0

