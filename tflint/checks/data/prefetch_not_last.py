"""TFL103 prefetch-not-last: work added after `prefetch` runs outside the overlap it buys."""
from __future__ import annotations

import libcst as cst

from ...findings import Applicability
from ...semantics.datasets import DATASET_METHODS
from ..base import Check, NodeEdit
from .chain import chain_top, link_index, rechain, same_block, single_use, unchain

# Steps that may follow `prefetch` without undoing it: they add no per-element work of their own.
# `cache` after `prefetch` serves later epochs from memory: nothing left to overlap.
HARMLESS_AFTER = frozenset({"prefetch", "with_options", "repeat", "take", "skip", "distribute", "save",
                            "apply", "enumerate", "rebatch", "cache"})


class PrefetchNotLast(Check):
    code = "TFL103"
    training_input = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method in HARMLESS_AFTER or method not in DATASET_METHODS:
            return
        p = self.datasets.pipeline(func.value)
        if p is None:
            return
        prefetch = None
        for s in reversed(p.steps):
            if s.method == "prefetch":
                prefetch = s
                break
            if s.method not in HARMLESS_AFTER:
                return
        if prefetch is None or prefetch.call is None:
            return
        if self._prefetched_later(node):
            return  # a later `prefetch` overlaps this work with training: prefetching after every stage is fine
        message = (f"`.{method}()` after `prefetch`: its work runs on the consumer's thread, after the prefetch "
                   "buffer, so it does not overlap with training; move `prefetch` to the end of the pipeline")
        fix = self._move(prefetch.call, node)
        if fix is None:
            self.report(node, message, start_node=func.attr)
            return
        edits, text, same_chain = fix
        # safe only when nothing but the place changes: an AUTOTUNE buffer (a literal `prefetch(n)` moved after
        # `batch` would hold n batches instead of n elements) in one chain (a move through a variable may cross
        # a branch: `if is_training:`)
        safe = same_chain and self._autotune(prefetch.call)
        self.report(node, message, start_node=func.attr, edits=edits,
                    fix_message=f"Move `{text}` after `.{method}()`",
                    applicability=Applicability.SAFE if safe else Applicability.UNSAFE)

    def _prefetched_later(self, node: cst.Call) -> bool:
        for call in self.index.nodes(cst.Call):
            f = call.func
            if call is node or not (isinstance(f, cst.Attribute) and f.attr.value == "prefetch"):
                continue
            later = self.datasets.pipeline(f.value)
            if later is not None and any(s.call is node for s in later.steps):
                return True
        return False

    def _autotune(self, prefetch: cst.Call) -> bool:
        arg = prefetch.args[0].value if prefetch.args else None
        q = self.names.qualified_name(arg) if arg is not None else None
        return q in ("tensorflow.data.AUTOTUNE", "tensorflow.data.experimental.AUTOTUNE")

    def _move(self, prefetch: cst.Call, node: cst.Call):
        """Edits that move the prefetch link just after `node` (the fix loop moves it on, step by step, while
        work still follows it)."""
        pf_text = "." + self.code_for(prefetch.func.attr) + self.code_for(prefetch)[len(self.code_for(prefetch.func)):]
        top = chain_top(self.sem, node)
        root, links = unchain(top)
        i, j = link_index(links, prefetch), link_index(links, node)
        if i >= 0 and j > i:
            moved = links[i]
            rest = links[:i] + links[i + 1:]
            new = rest[:j] + [moved] + rest[j:]  # `node` is rest[j - 1]: the prefetch goes right after it
            return [NodeEdit(top, "replace", node=rechain(root, new, top))], pf_text.strip(), True
        # through a variable: `ds = ds.prefetch(n)` ... `ds = ds.map(f)`
        recv = node.func.value
        if not isinstance(recv, cst.Name):
            return None
        b = self.index.lookup(recv.value, recv)
        if b is None or b.kind != "assign" or b.value is not prefetch:
            return None
        stmt = b.node
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name)):
            return None
        inner = prefetch.func.value
        line = self.index.parent(stmt)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not single_use(self.sem, recv, stmt):
            return None
        if not same_block(self.sem, stmt, node):
            return None  # into an `if is_training:` branch: the other path would lose its prefetch
        if isinstance(inner, cst.Name) and inner.value == stmt.targets[0].target.value:
            removal = NodeEdit(line, "delete")  # `ds = ds.prefetch(n)` goes away
        else:
            removal = NodeEdit(prefetch, "replace", node=inner)  # `ds2 = ds.prefetch(n)` -> `ds2 = ds`
        appended = cst.Call(func=cst.Attribute(value=node, attr=cst.Name("prefetch")), args=prefetch.args)
        return [removal, NodeEdit(node, "replace", node=appended)], pf_text.strip(), False
