"""The base class of every rule.

A rule is a class with a `code` and `visit_<NodeType>` methods. The engine calls each method once for every
node of that type in the file, in source order (from the shared index: no second traversal), then `finish()`.
A rule reports a node and, optionally, a fix as data: a replacement node for a target node, or text edits
anchored on nodes. The engine turns those into minimal text edits, positions and applicability.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

import libcst as cst

from ..findings import Applicability

if TYPE_CHECKING:  # pragma: no cover
    from ..engine import FileContext
    from ..registry import RuleMeta


@dataclass
class NodeEdit:
    """An edit anchored on a node: `replace` its text (with a node or text), `insert_before`/`insert_after`
    it, or `delete` it (for a statement, its whole line(s))."""

    target: cst.CSTNode
    mode: str = "replace"
    node: Optional[cst.CSTNode] = None
    text: Optional[str] = None


@dataclass
class Report:
    code: str
    node: cst.CSTNode
    message: str
    start_node: Optional[cst.CSTNode] = None
    fix_message: Optional[str] = None
    applicability: Optional[Applicability] = None
    edits: list[NodeEdit] = field(default_factory=list)


class Check:
    code: ClassVar[str] = ""
    # A rule about renamed or removed API: code written for several versions on purpose (a `try/except
    # AttributeError` fallback, an `if hasattr(...)`/version branch, `isinstance(x, (Old, New))`) is not reported.
    compat_sensitive: ClassVar[bool] = False
    # A claim about a dataset that feeds training (its input time, its order, its randomness): not reported where
    # every read of the dataset that the file shows is a look at a few elements (`for x in ds.take(1): print(x)`,
    # `next(iter(ds))`, a plot, `sess.run(next_element)` three times). See `checks/data/consumption.py`.
    training_input: ClassVar[bool] = False
    # Messages: the YAML summary is used when a report gives no message.

    def __init__(self, ctx: "FileContext", meta: "RuleMeta") -> None:
        self.ctx = ctx
        self.meta = meta
        self.sem = ctx.sem
        self.index = ctx.sem.index
        self.names = ctx.sem.names
        self.functions = ctx.sem.functions
        self.datasets = ctx.sem.datasets
        self.options: dict[str, Any] = {**meta.options, **ctx.rule_options(meta.name)}

    # -- helpers rules use -------------------------------------------------------------------------------
    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        *,
        start_node: Optional[cst.CSTNode] = None,
        replacement: Union[cst.CSTNode, str, None] = None,
        target: Optional[cst.CSTNode] = None,
        edits: Optional[list[NodeEdit]] = None,
        fix_message: Optional[str] = None,
        applicability: Union[Applicability, str, None] = None,
    ) -> None:
        """Report `node`. A fix is `replacement` (a node or text) for `target` (default: `node`), or `edits`.
        `start_node` moves the start of the reported range (e.g. to the method name of a long chain)."""
        all_edits = list(edits or [])
        if replacement is not None:
            t = target if target is not None else node
            if isinstance(replacement, str):
                all_edits.append(NodeEdit(t, "replace", text=replacement))
            else:
                all_edits.append(NodeEdit(t, "replace", node=replacement))
        if all_edits and applicability is None:
            raise ValueError(f"{self.code}: a fix needs an applicability")
        if self.compat_sensitive:
            from .common import in_compat_code

            if in_compat_code(self.sem, node):
                return
        if self.training_input:
            from .data.consumption import preview_only

            if preview_only(self.sem, node):
                return
        self.ctx.reports.append(
            Report(
                code=self.code,
                node=node,
                message=message or self.meta.summary,
                start_node=start_node,
                fix_message=fix_message,
                applicability=Applicability(applicability) if applicability else None,
                edits=all_edits,
            )
        )

    def code_for(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)

    @property
    def target_version(self) -> tuple[int, int]:
        return self.ctx.target_version

    @property
    def oldest_version(self) -> tuple[int, int]:
        return self.ctx.oldest_version

    def finish(self) -> None:
        """Called after every visit; rules that need the whole file report here."""
