"""TFL605 graph-growth-in-session-loop: TF 1 ops created inside a loop that calls `sess.run`."""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ..base import Check
from ..common import is_small_loop, nodes_under
from ..keras.models import origin_call
from .sessions import is_session

VARIABLES = frozenset({"tensorflow.Variable", "tensorflow.compat.v1.Variable", "tensorflow.get_variable",
                       "tensorflow.compat.v1.get_variable"})

# TensorFlow calls that do not add nodes to the graph.
NO_OP_PREFIXES = (
    "tensorflow.Session", "tensorflow.compat.v1.Session", "tensorflow.InteractiveSession",
    "tensorflow.compat.v1.InteractiveSession", "tensorflow.ConfigProto", "tensorflow.compat.v1.ConfigProto",
    "tensorflow.GPUOptions", "tensorflow.compat.v1.GPUOptions", "tensorflow.RunOptions", "tensorflow.compat.v1.RunOptions",
    "tensorflow.RunMetadata", "tensorflow.compat.v1.RunMetadata", "tensorflow.logging.", "tensorflow.compat.v1.logging.",
    "tensorflow.io.gfile.", "tensorflow.gfile.", "tensorflow.compat.v1.gfile.", "tensorflow.train.Example",
    "tensorflow.train.Feature", "tensorflow.train.BytesList", "tensorflow.train.FloatList", "tensorflow.train.Int64List",
    "tensorflow.compat.v1.train.Example", "tensorflow.compat.v1.train.Feature", "tensorflow.Summary",
    "tensorflow.compat.v1.Summary", "tensorflow.summary.Summary", "tensorflow.compat.v1.summary.Summary",
    "tensorflow.summary.Event", "tensorflow.compat.v1.summary.Event", "tensorflow.summary.FileWriter", "tensorflow.compat.v1.summary.FileWriter",
    "tensorflow.get_default_graph", "tensorflow.compat.v1.get_default_graph", "tensorflow.errors.",
    "tensorflow.TensorShape", "tensorflow.as_dtype", "tensorflow.dtypes.", "tensorflow.train.latest_checkpoint",
    "tensorflow.compat.v1.train.latest_checkpoint", "tensorflow.compat.v1.train.get_global_step",
    "tensorflow.train.get_global_step", "tensorflow.compat.v1.get_collection", "tensorflow.get_collection",
    "tensorflow.compat.v1.trainable_variables", "tensorflow.trainable_variables", "tensorflow.compat.v1.global_variables",
    "tensorflow.global_variables", "tensorflow.test.", "tensorflow.compat.v1.flags", "tensorflow.flags", "tensorflow.app.",
    "tensorflow.compat.v1.app.", "tensorflow.python_io.", "tensorflow.compat.v1.python_io.", "tensorflow.io.TFRecordWriter",
    "tensorflow.io.tf_record_iterator", "tensorflow.compat.v1.io.tf_record_iterator", "tensorflow.make_ndarray",
    "tensorflow.make_tensor_proto", "tensorflow.compat.v1.make_tensor_proto",
    # Python structure helpers: they flatten and pack nested lists and dicts, no op is created
    "tensorflow.nest.", "tensorflow.compat.v1.nest.", "tensorflow.python.util.nest.", "tensorflow.contrib.framework.nest.",
    # session plumbing: a MonitoredSession per checkpoint finds its Scaffold's ops in the graph's collections after
    # the first one (the `evaluate_repeatedly` pattern), so no op is added per iteration
    "tensorflow.train.ChiefSessionCreator", "tensorflow.compat.v1.train.ChiefSessionCreator",
    "tensorflow.train.WorkerSessionCreator", "tensorflow.compat.v1.train.WorkerSessionCreator",
    "tensorflow.train.MonitoredSession", "tensorflow.compat.v1.train.MonitoredSession",
    "tensorflow.train.SingularMonitoredSession", "tensorflow.compat.v1.train.SingularMonitoredSession",
    "tensorflow.train.Scaffold", "tensorflow.compat.v1.train.Scaffold",
    "tensorflow.train.MonitoredTrainingSession", "tensorflow.compat.v1.train.MonitoredTrainingSession",
    # checkpoint files and traces read or written in Python: a `checkpoint` text proto parsed, a checkpoint's
    # variables listed, RunMetadata's step stats formatted as a Chrome trace, a projector config written
    "tensorflow.train.get_checkpoint_state", "tensorflow.compat.v1.train.get_checkpoint_state",
    "tensorflow.train.checkpoint_exists", "tensorflow.compat.v1.train.checkpoint_exists",
    "tensorflow.train.list_variables", "tensorflow.compat.v1.train.list_variables", "tensorflow.train.load_variable",
    "tensorflow.compat.v1.train.load_variable", "tensorflow.train.load_checkpoint", "tensorflow.compat.v1.train.load_checkpoint",
    "tensorflow.train.NewCheckpointReader", "tensorflow.compat.v1.train.NewCheckpointReader",
    "tensorflow.python.client.timeline.", "tensorflow.contrib.tensorboard.plugins.projector.",
    "tensorboard.plugins.projector.", "tensorflow.compat.as_", "tensorflow.compat.v1.compat.as_",
    # reads the existing global-step tensor (`int(sess.run(global_step_tensor))`), adds no op
    "tensorflow.train.global_step", "tensorflow.compat.v1.train.global_step",
)


# lookups of an existing graph element by name: `g.get_tensor_by_name(name)`, `model.get_layer(name)`
GRAPH_LOOKUPS = frozenset({"get_tensor_by_name", "get_operation_by_name", "get_layer", "as_graph_element"})

# calls that list a model's variables: `tf.global_variables()`, `model.get_vars()`, `net.trainable_weights()`
_VARIABLE_LIST = re.compile(r"(^|_)(vars|variables|weights|params|parameters)$", re.I)


def _contrib_getter(qualified: str) -> bool:
    """A `get_*` function of a `tf.contrib` library (`model_pruning`'s `get_masks()`, `framework.get_variables()`):
    these return the graph objects the library built before, read from the graph's collections, and add no op
    (round 21: google-research/rigl recorded its masks with `sess.run(pruning.get_masks())` in the training loop,
    judged false). Creators are spelled `get_or_create_*`; whether another contrib getter builds ops is unknown,
    so it stays silent."""
    if not qualified.startswith(("tensorflow.contrib.", "tensorflow.compat.v1.contrib.")):
        return False
    last = qualified.rsplit(".", 1)[-1]
    return last.startswith("get_") and not last.startswith("get_or_create")


class GraphGrowthInSessionLoop(Check):
    code = "TFL605"

    def __init__(self, ctx, meta) -> None:
        super().__init__(ctx, meta)
        self._reported: set[int] = set()

    def _is_session(self, expr: cst.BaseExpression) -> bool:
        return is_session(self.sem, expr)

    def _fresh_graph_per_iteration(self, loop: cst.CSTNode) -> bool:
        """The loop starts each iteration on a new graph: it calls `tf.reset_default_graph()` (or a same-file helper
        that does, like the book's `reset_graph()`), or builds its ops under `with tf.Graph().as_default():`."""
        for call in nodes_under(loop, cst.Call):
            q = self.sem.call_name(call) or ""
            if q.endswith("reset_default_graph") or q.endswith("Graph.as_default") or (
                    isinstance(call.func, cst.Attribute) and call.func.attr.value == "as_default"
                    and isinstance(call.func.value, cst.Call)
                    and (self.sem.call_name(call.func.value) or "").endswith(".Graph")):
                return True
            fn = self.functions.resolve_callable(call.func)
            if isinstance(fn, cst.FunctionDef) and any(
                    (self.sem.call_name(c) or "").endswith("reset_default_graph") for c in self.functions.calls_in(fn)):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "run" and self._is_session(f.value)):
            return
        loops = [lp for lp in self.index.enclosing_loops(node) if isinstance(lp, (cst.For, cst.While))]
        if not loops:
            return
        loop = loops[-1]
        if id(loop) in self._reported:
            return
        self._reported.add(id(loop))
        if self._fresh_graph_per_iteration(loop):
            return  # `reset_default_graph()` or `with tf.Graph().as_default():` in the loop: no graph outlives an iteration
        if any(is_small_loop(self.sem, lp) for lp in loops):
            return  # at most a handful of copies (a two-setting test, a ten-iteration demo): the graph stays bounded
        if self._finalized_before(node):
            return  # `graph.finalize()` earlier in the function: TensorFlow raises on any op added to it
        if self._per_graph_element(loop):
            return  # one saliency op per layer of the graph, run once each: bounded by the graph it walks
        owner = self.functions.owner(node)
        growing = []
        for call in self.index.nodes(cst.Call):
            if loop not in self.index.ancestors(call) or self.functions.owner(call) is not owner:
                continue
            if not self._op_call(call):
                continue  # `tf.io.gfile.glob`, a proto, `pruning.get_masks()` (a lookup); `self.norm.assign(v)` counts
            if isinstance(loop, cst.For) and (call is loop.iter or loop.iter in self.index.ancestors(call)):
                continue  # the loop's iterable is evaluated once, before the first iteration
            if any(a in growing for a in self.index.ancestors(call)):
                continue  # `tf.reduce_mean(tf.cast(...))`: one expression, reported once
            if self._once_per_outer_iteration(call, owner) or self._over_variables(call, loop):
                continue
            growing.append(call)
        if not growing:
            return
        first = growing[0]
        more = f" (and {len(growing) - 1} more op-creating call{'s' if len(growing) > 2 else ''} in this loop)" \
            if len(growing) > 1 else ""
        self.report(first, f"`{self.code_for(first.func)}` adds new ops to the graph in every iteration of a loop "
                           f"that calls `sess.run`{more}: the graph grows without bound, each run gets slower and memory "
                           "leaks; build the ops once before the loop (and feed values through a placeholder), or "
                           "call `graph.finalize()` to catch this")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A step function: it runs the training op (`sess.run(self.optimizer, feed_dict=...)`, the result of
        `minimize` or `apply_gradients`) once per call, outside any loop of its own, so its caller calls it once per
        step (often from another module: a DQN agent's `train(s, r, a, s_)` called per transition). An op it creates
        unconditionally (`a_ = tf.argmax(list_q_).eval()`) is a new op per step (round 24: princewen's Categorical
        DQN, a miss). Ops under an `if` (a lazy first-call build) are not claimed."""
        run = self._train_op_run(node)
        if run is None or self._fresh_graph_per_iteration(node) or self._finalized_before(run):
            return
        growing = []
        for call in self.functions.calls_in(node):
            if not self._op_call(call) or any(a in growing for a in self.index.ancestors(call)):
                continue
            if any(isinstance(a, (cst.If, cst.IfExp, cst.For, cst.While, cst.Try)) for a in self.index.ancestors(call)
                   if self.index.contains(node, a) and a is not node):
                continue  # built on a first call only (`if self.op is None:`), or in a loop the loop check judges
            growing.append(call)
        if not growing:
            return
        first = growing[0]
        name = node.name.value
        self.report(first, f"`{self.code_for(first.func)}` adds new ops to the graph every time `{name}` runs, and "
                           f"`{name}` runs the training op (`{self.code_for(run.func)}(...)`), so it is called once "
                           "per step: the graph grows without bound, each run gets slower and memory leaks; build the "
                           "op once (in the constructor, fed through a placeholder), or compute the value with NumPy")

    def _train_op_run(self, fn: cst.FunctionDef) -> Optional[cst.Call]:
        """The `sess.run(...)` of `fn`, outside any loop of its own, whose fetches include a training op."""
        for call in self.functions.calls_in(fn):
            f = call.func
            if not (isinstance(f, cst.Attribute) and f.attr.value == "run" and self._is_session(f.value)):
                continue
            if any(isinstance(lp, (cst.For, cst.While)) for lp in self.index.enclosing_loops(call)):
                continue
            fetches = call.args[0].value if call.args and call.args[0].keyword is None else None
            items = [e.value for e in fetches.elements] if isinstance(fetches, (cst.List, cst.Tuple)) else [fetches]
            if any(e is not None and self._train_op(e) for e in items):
                return call
        return None

    def _train_op(self, expr: cst.BaseExpression) -> bool:
        """`expr` holds the result of `optimizer.minimize(loss)` / `apply_gradients(...)` (its only assignments)."""
        values: list = []
        if isinstance(expr, cst.Name):
            b = self.index.lookup(expr.value, expr)
            values = [b.value] if b is not None and b.kind == "assign" and b.value is not None else []
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.index.enclosing_class(expr)
            values = list(self.index.self_assignments(cls).get(expr.attr.value, ())) if cls is not None else []
        return bool(values) and all(isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute)
                                    and v.func.attr.value in ("minimize", "apply_gradients") for v in values)

    def _op_call(self, call: cst.Call) -> bool:
        """`call` adds a node to the graph: a TensorFlow call that is not session plumbing, I/O, a proto or a
        lookup of what was built before, or an `assign` on a TF1 variable."""
        q = self.sem.call_name(call)
        if not q and self._variable_assign(call):
            return True
        if not q or not q.startswith("tensorflow."):
            return False
        if q.startswith(NO_OP_PREFIXES) or ("tensorflow." + q[len("tensorflow.compat.v1."):]).startswith(NO_OP_PREFIXES):
            return False
        return not _contrib_getter(q)

    def _once_per_outer_iteration(self, call: cst.Call, owner) -> bool:
        """`call` sits in an outer (epoch) loop, beside an inner loop that runs the session step by step: the graph
        grows by one op per epoch, a bounded handful next to the steps (round 20: tensornets' YOLOv2 trainer builds
        a regularization-loss op in its per-epoch report; judged not worth acting on)."""
        loops = [lp for lp in self.index.enclosing_loops(call) if isinstance(lp, (cst.For, cst.While))]
        if not loops:
            return False
        own = loops[0]
        for inner in nodes_under(own.body, cst.For) + nodes_under(own.body, cst.While):
            if self.index.contains(inner, call) or self.functions.owner(inner) is not owner:
                continue
            for run in nodes_under(inner, cst.Call):
                f = run.func
                if isinstance(f, cst.Attribute) and f.attr.value == "run" and self._is_session(f.value):
                    return True
        return False

    def _over_variables(self, call: cst.Call, outer: cst.CSTNode) -> bool:
        """A loop over a model's variables between `call` and the session loop (`for var in model.get_vars():
        sess.run(tf.assign(var2, var))`): one op per variable, once, as a conversion script copies weights
        (round 20: cleverhans' checkpoint converter, judged not worth acting on)."""
        for lp in self.index.enclosing_loops(call):
            if isinstance(lp, cst.For):
                for c in nodes_under(lp.iter, cst.Call):  # (the iterable itself included)
                    name = c.func.attr.value if isinstance(c.func, cst.Attribute) else \
                        c.func.value if isinstance(c.func, cst.Name) else ""
                    if _VARIABLE_LIST.search(name):
                        return True
            if lp is outer:
                break
        return False

    def _per_graph_element(self, loop) -> bool:
        """The loop walks the graph's own elements: its body looks up a tensor, operation or layer named by the loop
        variable (`for name in features: layer = g.get_tensor_by_name(name + ':0')`), so each iteration builds
        ops on a different existing tensor, once, and the growth is bounded by the graph it walks (round 22:
        pkmital/CADL's per-layer saliency maps and per-layer dream losses, 10 findings judged false)."""
        if not isinstance(loop, cst.For):
            return False
        targets = {n.value for n in nodes_under(loop.target, cst.Name)}
        for call in nodes_under(loop.body, cst.Call):
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in GRAPH_LOOKUPS and any(
                    n.value in targets for a in call.args for n in nodes_under(a.value, cst.Name)):
                return True
        return False

    def _variable_assign(self, call: cst.Call) -> bool:
        """`v.assign(x)` (or `assign_add`/`assign_sub`) on a TF1 variable this file creates (`v = tf.Variable(...)`,
        `self.v = tf.get_variable(...)`): in graph mode each call adds an assign op (tf_unet's Trainer assigns
        its gradient norms in every step of its Session loop, a round-19 miss)."""
        f = call.func
        if not (isinstance(f, cst.Attribute) and f.attr.value in ("assign", "assign_add", "assign_sub")):
            return False
        origin = origin_call(self.sem, f.value)
        q = self.sem.call_name(origin) if origin is not None else None
        return q in VARIABLES

    def _finalized_before(self, node: cst.CSTNode) -> bool:
        owner = self.functions.owner(node)
        at = self.index.order_of(self.index.statement_of(node))
        for call in self.index.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "finalize" and not call.args \
                    and self.functions.owner(call) is owner \
                    and self.index.order_of(self.index.statement_of(call)) < at:
                return True
        return False
