"""GraphDefs as directed graphs, and the graph findings computed on them (TFL802–TFL805, TFL807, TFL808).

Runs in the child (it needs TensorFlow's op registry to know which ops are stateful). A "graph set" is a dict
{function name: GraphDef}: "" is the main graph, every other key a function of its library (nested
tf.functions, `cond`/`while` branches and bodies), converted with TensorFlow's own `function_def_to_graph_def`.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

PY_FUNC_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
DEBUG_OPS = {"Print", "PrintV2", "Assert", "CheckNumerics", "CheckNumericsV2", "DebugIdentity", "DebugIdentityV2",
             "DebugNanCount", "DebugNumericSummary", "DebugNumericSummaryV2"}
CONTRACTIONS = {"MatMul", "BatchMatMul", "BatchMatMulV2", "Conv2D", "Conv3D", "DepthwiseConv2dNative"}
BIAS_OPS = {"BiasAdd", "Add", "AddV2"}
ACTIVATIONS = {"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "Selu", "Gelu", "Softplus"}
TRIVIAL_OPS = {"Const", "Identity", "IdentityN", "NoOp", "Placeholder", "_Arg", "_Retval", "StopGradient"}
VAR_WRITES_PREFIX = ("Assign", "ResourceApply", "ResourceScatter", "ResourceSparseApply", "DestroyResourceOp")

Location = tuple[str, int]  # (file, 1-based line)


@dataclass
class GraphFinding:
    code: str
    message: str
    graph: str  # "" main graph, else the function's name
    node: str
    location: Optional[Location] = None
    extra: dict[str, Any] = field(default_factory=dict)


def graph_set(graph_def) -> dict[str, Any]:
    """{"" : main GraphDef, fname: GraphDef of each library function}."""
    from tensorflow.core.framework import graph_pb2
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

    main = graph_pb2.GraphDef()
    main.node.extend(graph_def.node)
    out = {"": main}
    for fdef in graph_def.library.function:
        try:
            gd, _ = function_def_to_graph_def(fdef)
        except Exception:  # noqa: BLE001 - a function TensorFlow cannot convert is counted, not analyzed
            continue
        out[fdef.signature.name] = gd
    return out


def input_name(ref: str) -> tuple[str, int, bool]:
    """"node:1" -> ("node", 1, False); "^node" -> ("node", 0, True); "node:out:0" (function style) -> node."""
    control = ref.startswith("^")
    ref = ref.lstrip("^")
    parts = ref.split(":")
    idx = 0
    if len(parts) > 1 and parts[-1].isdigit():
        idx = int(parts[-1])
    return parts[0], idx, control


class Unfeasible(ValueError):
    """A graph with a cycle has no topological order (networkx's NetworkXUnfeasible)."""


class DiGraph:
    """The few directed-graph operations the findings need, with networkx's semantics and orders (a test compares
    them with networkx's `DiGraph` on random graphs). networkx itself takes 0.14 s to import, which every
    `tflint run` that analyses a hot graph paid after the script had ended, for a graph of a few nodes; it stays
    the library of `inspect --graph` (GraphML and DOT), imported there only."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}  # name -> attributes, in insertion order
        self._succ: dict[str, dict[str, dict[str, Any]]] = {}
        self._pred: dict[str, dict[str, dict[str, Any]]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def add_node(self, name: str, **attrs: Any) -> None:
        if name not in self.nodes:
            self.nodes[name] = {}
            self._succ[name] = {}
            self._pred[name] = {}
        self.nodes[name].update(attrs)

    def add_edge(self, src: str, dst: str, **attrs: Any) -> None:
        """One edge per ordered pair (a second one updates its attributes), as in networkx's DiGraph."""
        self.add_node(src)
        self.add_node(dst)
        data = self._succ[src].setdefault(dst, {})
        data.update(attrs)
        self._pred[dst][src] = data

    def successors(self, name: str) -> Iterable[str]:
        return iter(self._succ[name])

    def predecessors(self, name: str) -> Iterable[str]:
        return iter(self._pred[name])

    def out_degree(self, name: str) -> int:
        return len(self._succ[name])

    def topological_sort(self) -> list[str]:
        """networkx's order (Kahn's algorithm by generations, nodes and children in insertion order); raises
        Unfeasible on a cycle."""
        indegree = {v: len(p) for v, p in self._pred.items() if p}
        zero = [v for v, p in self._pred.items() if not p]
        order: list[str] = []
        while zero:
            generation, zero = zero, []
            for node in generation:
                for child in self._succ[node]:
                    indegree[child] -= 1
                    if indegree[child] == 0:
                        zero.append(child)
                        del indegree[child]
            order += generation
        if indegree:
            raise Unfeasible("the graph has a cycle")
        return order

    def _reach(self, start: str, edges: dict[str, dict[str, dict[str, Any]]]) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for nxt in edges[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def ancestors(self, name: str) -> set[str]:
        """Every node with a path to `name`, never `name` itself (as networkx, even on a cycle through it)."""
        return self._reach(name, self._pred) - {name}

    def has_path(self, src: str, dst: str) -> bool:
        return src == dst or dst in self._reach(src, self._succ)


def to_digraph(graph_def) -> DiGraph:
    g = DiGraph()
    for n in graph_def.node:
        g.add_node(n.name, op=n.op)
    for n in graph_def.node:
        for ref in n.input:
            src, idx, control = input_name(ref)
            if src in g:
                g.add_edge(src, n.name, control=control, index=idx)
    return g


def op_counts(graphs: dict[str, Any]) -> Counter:
    c: Counter = Counter()
    for gd in graphs.values():
        c.update(n.op for n in gd.node)
    return c


def graph_stats(graph_def) -> dict[str, Any]:
    graphs = graph_set(graph_def)
    ops = op_counts(graphs)
    return {
        "nodes": sum(len(gd.node) for gd in graphs.values()),
        "main_nodes": len(graph_def.node),
        "functions": len(graph_def.library.function),
        "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def _is_stateful(op: str) -> bool:
    from tensorflow.python.framework import op_def_registry

    od = op_def_registry.get(op)
    return True if od is None else bool(od.is_stateful)


def _attr_key(node) -> tuple:
    items = []
    for k in sorted(node.attr):
        if k.startswith("_"):
            continue
        items.append((k, node.attr[k].SerializeToString(deterministic=True)))
    return tuple(items)


def value_keys(gd) -> dict[str, Any]:
    """A key per node such that equal keys mean "the same pure value" (Grappler's notion of a duplicate, plus
    reads of a variable that nothing in the graph writes). Stateful nodes and inputs get a unique key."""
    nodes = {n.name: n for n in gd.node}
    written: set[str] = set()
    for n in gd.node:
        if n.op.startswith(VAR_WRITES_PREFIX) and n.input:
            written.add(input_name(n.input[0])[0])
    g = to_digraph(gd)
    try:
        order = g.topological_sort()
    except Unfeasible:  # a cycle (v1 while loops): no dedup analysis
        return {name: ("unique", name) for name in nodes}
    keys: dict[str, Any] = {}
    for name in order:
        n = nodes[name]
        data_inputs = [input_name(r) for r in n.input if not r.startswith("^")]
        if n.op == "ReadVariableOp" and data_inputs and data_inputs[0][0] not in written:
            src = data_inputs[0][0]
            keys[name] = hash(("read", keys.get(src, ("unique", src)), _attr_key(n)))
            continue
        if n.op in ("Placeholder", "_Arg") or n.op in PY_FUNC_OPS or _is_stateful(n.op):
            keys[name] = ("unique", name)
            continue
        ins = tuple((keys.get(src, ("unique", src)), idx) for src, idx, _ in data_inputs)
        keys[name] = hash((n.op, _attr_key(n), ins))
    return keys


def find_duplicates(gd) -> list[list[str]]:
    """Groups of nodes computing the same pure value, maximal ones only (a duplicate whose every member feeds
    another duplicate is part of a bigger one), excluding trivial ops (Const, Identity, ...)."""
    keys = value_keys(gd)
    groups: dict[Any, list[str]] = defaultdict(list)
    ops = {n.name: n.op for n in gd.node}
    for name, key in keys.items():
        if isinstance(key, tuple) and key and key[0] == "unique":
            continue
        if ops[name] in TRIVIAL_OPS or ops[name] == "ReadVariableOp":
            continue
        groups[key].append(name)
    dup = {k: v for k, v in groups.items() if len(v) > 1}
    in_dup = {name for v in dup.values() for name in v}
    g = to_digraph(gd)
    out = []
    for members in dup.values():
        if all(any(c in in_dup for c in g.successors(m)) for m in members):
            continue
        out.append(sorted(members))
    return out


def subgraph_size(gd, root: str, dup_nodes: set[str]) -> int:
    g = to_digraph(gd)
    return 1 + sum(1 for a in g.ancestors(root) if g.nodes[a]["op"] not in TRIVIAL_OPS and a in dup_nodes)


def tensor_bytes(node) -> int:
    """Size in bytes of a Const node's value."""
    from tensorflow.python.framework import dtypes, tensor_shape

    t = node.attr["value"].tensor
    if t.tensor_content:
        return len(t.tensor_content)
    try:
        n = tensor_shape.TensorShape(t.tensor_shape).num_elements() or 0
        return n * dtypes.as_dtype(t.dtype).size
    except Exception:  # noqa: BLE001 - strings, unknown dtypes
        return t.ByteSize()


def _describe_const(node) -> str:
    from tensorflow.python.framework import dtypes, tensor_shape

    t = node.attr["value"].tensor
    try:
        return f"{dtypes.as_dtype(t.dtype).name} {tensor_shape.TensorShape(t.tensor_shape).as_list()}"
    except Exception:  # noqa: BLE001
        return "a tensor"


def _dtype_of(node) -> str:
    from tensorflow.python.framework import dtypes

    if "T" in node.attr:
        try:
            return dtypes.as_dtype(node.attr["T"].type).name
        except Exception:  # noqa: BLE001
            return ""
    return ""


# ---------------------------------------------------------------------------------------------------------------
# Findings
# ---------------------------------------------------------------------------------------------------------------

Locate = Callable[[str, str], Optional[Location]]  # (graph name, node name) -> source location


def python_ops(graphs: dict[str, Any], locate: Locate) -> list[GraphFinding]:
    out = []
    for gname, gd in graphs.items():
        for n in gd.node:
            if n.op in PY_FUNC_OPS:
                where = "the graph" if not gname else f"function `{gname}`"
                out.append(GraphFinding(
                    "TFL802",
                    f"`{n.op}` node `{n.name}` in {where} runs Python inside the graph: it holds the GIL, runs on "
                    "one thread, cannot be optimized by Grappler and stops the graph from being serialized; "
                    "write it with TensorFlow ops, or do the work before the graph (static counterpart: TFL105)",
                    gname, n.name, locate(gname, n.name)))
    return out


def duplicates_after_grappler(graphs_after: dict[str, Any], locate: Locate) -> list[GraphFinding]:
    out = []
    for gname, gd in graphs_after.items():
        groups = find_duplicates(gd)
        all_dup = {m for grp in groups for m in grp}
        ops = {n.name: n.op for n in gd.node}
        for members in groups:
            first = members[0]
            size = subgraph_size(gd, first, _dup_closure(gd, all_dup))
            where = "the graph" if not gname else f"function `{gname}`"
            loc = None
            for m in members:
                loc = locate(gname, m)
                if loc:
                    break
            out.append(GraphFinding(
                "TFL803",
                f"{len(members)} copies of the same pure `{ops[first]}` computation ({size} op{'s' if size > 1 else ''}"
                f" each: {', '.join('`' + m + '`' for m in members[:4])}) survive Grappler in {where}; compute it "
                "once into a local and reuse it (static counterpart: TFL601/TFL602)",
                gname, first, loc, {"members": members, "ops_each": size}))
    return out


def _dup_closure(gd, roots: set[str]) -> set[str]:
    """Every node whose value is duplicated somewhere (for sizing the duplicated subgraph)."""
    keys = value_keys(gd)
    count = Counter(k for k in keys.values() if not (isinstance(k, tuple) and k and k[0] == "unique"))
    return {n for n, k in keys.items() if count.get(k, 0) > 1} | roots


def large_constants(graphs: dict[str, Any], locate: Locate, limit_bytes: int) -> list[GraphFinding]:
    out = []
    for gname, gd in graphs.items():
        for n in gd.node:
            if n.op != "Const":
                continue
            size = tensor_bytes(n)
            if size > limit_bytes:
                out.append(GraphFinding(
                    "TFL804",
                    f"a {size / 2**20:.1f} MiB constant ({_describe_const(n)}, node `{n.name}`) is embedded in the "
                    "graph: it is copied into every trace and serialized with the graph (a GraphDef is limited to "
                    "2 GiB); keep it in a tf.Variable or pass it as an argument instead of closing over a NumPy "
                    "array or Python list",
                    gname, n.name, locate(gname, n.name), {"bytes": size}))
    return out


def unfused_patterns(graphs_after: dict[str, Any], locate: Locate) -> list[GraphFinding]:
    """Contraction -> bias add -> activation chains (each intermediate used once) still present after Grappler."""
    out = []
    for gname, gd in graphs_after.items():
        g = to_digraph(gd)
        nodes = {n.name: n for n in gd.node}
        for n in gd.node:
            if n.op not in ACTIVATIONS:
                continue
            data_in = [input_name(r) for r in n.input if not r.startswith("^")]
            if not data_in or data_in[0][0] not in nodes:
                continue
            bias = nodes[data_in[0][0]]
            if bias.op not in BIAS_OPS or g.out_degree(bias.name) != 1:
                continue
            b_in = [input_name(r)[0] for r in bias.input if not r.startswith("^")]
            contraction = next((nodes[s] for s in b_in if s in nodes and nodes[s].op in CONTRACTIONS), None)
            if contraction is None or g.out_degree(contraction.name) != 1:
                continue
            dtype = _dtype_of(contraction)
            why = []
            if bias.op != "BiasAdd":
                why.append(f"the bias is added with `{bias.op}` (`x + b`); `tf.nn.bias_add` is the form the remapper fuses")
            if dtype and dtype not in ("float32", "bfloat16", "float16"):
                why.append(f"the dtype is {dtype}; the fused CPU kernels exist for float32/bfloat16")
            if n.op not in ("Relu", "Relu6", "Elu", "LeakyRelu"):
                why.append(f"`{n.op}` is not among the activations fused on every device (Relu, Relu6, Elu, LeakyRelu)")
            reason = "; ".join(why) if why else (
                f"the remapper did not match it here (its conditions are the device, dtype{f' ({dtype})' if dtype else ''}, "
                "layout and data format of this machine's kernels)")
            loc = locate(gname, n.name) or locate(gname, bias.name) or locate(gname, contraction.name)
            out.append(GraphFinding(
                "TFL805",
                f"{contraction.op} + {bias.op} + {n.op} (`{contraction.name}` -> `{bias.name}` -> `{n.name}`) was "
                f"left unfused by Grappler's remapper: {reason}",
                gname, n.name, loc, {"chain": [contraction.name, bias.name, n.name]}))
    return out


def debug_ops(graphs_after: dict[str, Any], locate: Locate) -> list[GraphFinding]:
    out = []
    for gname, gd in graphs_after.items():
        for n in gd.node:
            if n.op in DEBUG_OPS:
                out.append(GraphFinding(
                    "TFL808",
                    f"`{n.op}` node `{n.name}` is still in the optimized graph (Grappler's debug_stripper is off by "
                    "default): it runs on every call and adds a control dependency that serializes the graph; "
                    "remove it from production code or guard it with a Python flag",
                    gname, n.name, locate(gname, n.name)))
    return out


def unrolled_loops(graphs: dict[str, Any], locate: Locate, min_repeats: int, loop_of: Locate) -> list[GraphFinding]:
    """Long chains of the same op traced from the same source line (or, without source lines, with the same
    input ops), each repetition depending on the previous one: a Python loop unrolled into the graph.
    `loop_of(graph, node)`: the user's loop that ran while the node was created. A chain from a line of the
    user's that no loop of theirs repeated (a Keras `Sequential` called once, its layers repeating) is not one."""
    out = []
    for gname, gd in graphs.items():
        g = to_digraph(gd)
        try:
            order = {name: i for i, name in enumerate(g.topological_sort())}
        except Unfeasible:
            continue
        nodes = {n.name: n for n in gd.node}
        groups: dict[tuple, list[str]] = defaultdict(list)
        for n in gd.node:
            if n.op in TRIVIAL_OPS:
                continue
            loc = locate(gname, n.name)
            if loc:
                key = (n.op, "line", loc)
            else:
                key = (n.op, "inputs", tuple(sorted(nodes[s].op for s in g.predecessors(n.name) if s in nodes)))
            groups[key].append(n.name)
        runs: list[tuple[int, tuple, list[str]]] = []
        for key, members in groups.items():
            if len(members) < min_repeats:
                continue
            members.sort(key=order.get)
            best, cur, best_span, start = 1, 1, (0, 0), 0
            for i in range(1, len(members)):
                if g.has_path(members[i - 1], members[i]):
                    cur += 1
                else:
                    cur, start = 1, i
                if cur > best:
                    best, best_span = cur, (start, i)
            if best >= min_repeats:
                runs.append((best, key, members[best_span[0]: best_span[1] + 1]))
        # One finding per loop: runs from the same loop (same `for` line, or overlapping spans) are merged.
        merged: dict[Any, dict[str, Any]] = {}
        for count, key, members in sorted(runs, key=lambda r: -r[0]):
            loc = key[2] if key[1] == "line" else None
            loops = Counter(filter(None, (loop_of(gname, m) for m in members)))
            for_loc = loops.most_common(1)[0][0] if loops else None
            if loc and for_loc is None:
                continue  # the user's line ran once; the repetition is the library's (layers of a model)
            span = (order[members[0]], order[members[-1]])
            mkey = for_loc or next((k for k, v in merged.items() if v["span"][0] <= span[1] and span[0] <= v["span"][1]),
                                   None) or (gname, span)
            entry = merged.setdefault(mkey, {"span": span, "repeats": count, "ops": [], "loc": for_loc or loc,
                                              "first": members[0], "nodes": 0})
            entry["ops"].append(key[0])
            entry["nodes"] += len(members)
        for entry in merged.values():
            where = "the graph" if not gname else f"function `{gname}`"
            ops = ", ".join(dict.fromkeys(entry["ops"]))
            out.append(GraphFinding(
                "TFL807",
                f"{ops} repeated {entry['repeats']} times in a chain in {where} ({entry['nodes']} of "
                f"{len(gd.node)} nodes): a Python loop was unrolled while tracing; the graph grows with the loop "
                "count and so does trace time; use `tf.range` (a tf.while_loop) when the count is large or "
                "varies (static counterpart: TFL207)",
                gname, entry["first"], entry["loc"], {"repeats": entry["repeats"], "nodes": entry["nodes"]}))
    return out


def mark_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Node names per status for drawing: removed (only before), added (only after), fused (an `_Fused*` op in
    the after graph, or a node whose op changed into one), changed (same name, another op)."""
    b = {(g, n.name): n.op for g, gd in before.items() for n in gd.node}
    a = {(g, n.name): n.op for g, gd in after.items() for n in gd.node}
    status: dict[str, str] = {}
    for k, op in b.items():
        if k not in a:
            status["/".join(filter(None, k))] = "removed"
        elif a[k] != op:
            status["/".join(filter(None, k))] = "fused" if a[k].startswith("_Fused") else "changed"
    for k, op in a.items():
        if k not in b:
            status["/".join(filter(None, k))] = "fused" if op.startswith("_Fused") else "added"
    return status


def export_graph(graphs: dict[str, Any], limit: int = 4000) -> dict[str, Any]:
    """A JSON-able form for drawing: nodes (id, op, graph) and data/control edges, at most `limit` nodes."""
    nodes, edges = [], []
    for gname, gd in graphs.items():
        for n in gd.node:
            if len(nodes) >= limit:
                break
            nid = "/".join(filter(None, (gname, n.name)))
            nodes.append({"id": nid, "op": n.op, "graph": gname, "fused_ops": _fused_ops(n)})
            for ref in n.input:
                src, _, control = input_name(ref)
                edges.append({"source": "/".join(filter(None, (gname, src))), "target": nid, "control": control})
    ids = {n["id"] for n in nodes}
    return {"nodes": nodes, "edges": [e for e in edges if e["source"] in ids and e["target"] in ids]}


def _fused_ops(node) -> list[str]:
    if "fused_ops" in node.attr:
        return [s.decode() if isinstance(s, bytes) else str(s) for s in node.attr["fused_ops"].list.s]
    return []


def iter_nodes(graphs: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    for gname, gd in graphs.items():
        for n in gd.node:
            yield gname, n
