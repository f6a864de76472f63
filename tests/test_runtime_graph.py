"""The directed graph the graph findings use (tflint/runtime/graph.py `DiGraph`): the same answers, in the same
orders, as networkx's DiGraph, which it replaces in the findings so that `tflint run` does not import networkx
(0.14 s) after the script has ended. Pure Python, no TensorFlow."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tflint.runtime.graph import DiGraph, Unfeasible

nx = pytest.importorskip("networkx")
ROOT = Path(__file__).resolve().parent.parent


def _random_graphs(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(1, 14)
        names = [f"n{i}" for i in rng.sample(range(40), n)]  # insertion order is not name order
        edges = []
        acyclic = rng.random() < 0.7
        for _ in range(rng.randint(0, 3 * n)):
            a, b = rng.sample(range(n), 2) if n > 1 else (0, 0)
            if acyclic and a > b:
                a, b = b, a
            if a == b and acyclic:
                continue
            edges.append((names[a], names[b], rng.random() < 0.3))  # repeated pairs too (x * x: two inputs)
        yield names, edges


def _both(names, edges):
    ours, theirs = DiGraph(), nx.DiGraph()
    for name in names:
        ours.add_node(name, op="Op" + name)
        theirs.add_node(name, op="Op" + name)
    for a, b, control in edges:
        ours.add_edge(a, b, control=control)
        theirs.add_edge(a, b, control=control)
    return ours, theirs


def test_the_graph_answers_as_networkx_does():
    cyclic = 0
    for names, edges in _random_graphs(7, 300):
        ours, theirs = _both(names, edges)
        try:
            expected = list(nx.topological_sort(theirs))
        except nx.NetworkXUnfeasible:
            cyclic += 1
            with pytest.raises(Unfeasible):
                ours.topological_sort()
        else:
            assert ours.topological_sort() == expected  # the same order, not only a valid one
        for name in names:
            assert list(ours.successors(name)) == list(theirs.successors(name))
            assert list(ours.predecessors(name)) == list(theirs.predecessors(name))
            assert ours.out_degree(name) == theirs.out_degree(name)
            assert ours.ancestors(name) == nx.ancestors(theirs, name)
            assert ours.nodes[name]["op"] == theirs.nodes[name]["op"]
            for other in names:
                assert ours.has_path(name, other) == nx.has_path(theirs, name, other)
        assert ("missing" in ours) is False and all(name in ours for name in names)
    assert 10 < cyclic < 150  # both kinds of graphs were compared


def test_the_findings_module_does_not_import_networkx():
    code = "import sys, tflint.runtime.graph; print('networkx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
