"""Shared static knowledge every rule uses, computed once per file from one traversal.

- `index`: parents, nodes by type, statement order, scoped bindings (`tflint.semantics.index`)
- `names`: qualified names through imports and aliases (`tflint.semantics.names`)
- `functions`: callables, tf.function scopes (`tflint.semantics.functions`)
- `datasets`: tf.data pipelines traced through chains and variables (`tflint.semantics.datasets`)
- `project`: what the file may ask of the project's other modules (`tflint.semantics.crossref`)
"""
from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from .crossref import ProjectView
from .datasets import Datasets, Pipeline, Step
from .functions import Functions
from .index import Index
from .names import Names, canonical, dotted_name, get_arg, literal_value, NOT_LITERAL


class Semantics:
    def __init__(self, module: cst.Module, dataset_functions: Iterable[str] = (), project: Optional[ProjectView] = None) -> None:
        self.module = module
        self.notebook = False  # the module is a notebook's cells (set by the engine)
        self.project = project if project is not None else ProjectView()
        self.index = Index.build(module)
        self.names = Names(self.index)
        self.names.project = self.project
        self.functions = Functions(self.index, self.names, self.project)
        self.datasets = Datasets(self.index, self.names, self.functions, dataset_functions, self.project)
        # one Datasets for the file, with the configured dataset functions, answers Functions' questions too
        self.functions.attach_datasets(self.datasets)

    # Short-hands used by most rules
    def qualified_name(self, node: cst.BaseExpression):
        return self.names.qualified_name(node)

    def call_name(self, call: cst.Call):
        return self.names.call_name(call)

    def pipeline(self, expr: cst.BaseExpression):
        return self.datasets.pipeline(expr)


__all__ = [
    "Semantics", "ProjectView", "Index", "Names", "Functions", "Datasets", "Pipeline", "Step", "canonical", "dotted_name",
    "get_arg", "literal_value", "NOT_LITERAL",
]
