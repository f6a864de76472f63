"""The package's shape: no import cycles (function-level imports included, since they hide cycles rather than
remove them) and no private name imported from another module."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tflint"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    return skip


def _imports(name: str, path: Path):
    """(imported module, imported names, line) for every tflint import in a module, wherever it is written."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("tflint"):
                yield target, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tflint"):
                    yield a.name, [], node.lineno


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        for target, names, line in _imports(name, path):
            targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES] or [target]
            for t in targets:
                if t in MODULES and t != name:
                    g.add_edge(name, t, line=line)
    return g


def test_no_import_cycles():
    g = import_graph()
    cycles = []
    for scc in nx.strongly_connected_components(g):
        if len(scc) > 1:
            edges = [f"{a} -> {b} (line {d['line']})" for a, b, d in g.subgraph(scc).edges(data=True)]
            cycles.append(sorted(edges))
    assert not cycles, "import cycles:\n" + "\n\n".join("\n".join(c) for c in cycles)


def test_the_graph_sees_function_level_imports():
    # the server imports the rule docs inside a function: the edge must be in the graph
    assert import_graph().has_edge("tflint.server", "tflint.docs")


def test_no_private_name_is_imported_from_another_module():
    offenders = []
    for name, path in MODULES.items():
        for target, names, line in _imports(name, path):
            if target.rsplit(".", 1)[-1].startswith("_") and target.rsplit(".", 1)[0] == name.rsplit(".", 1)[0]:
                continue  # a package's own private helper module (checks/function/_graph.py)
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {', '.join(private)} from {target}")
    assert not offenders, offenders
