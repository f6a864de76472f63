"""What a file's own API says about its TensorFlow: a file that already uses a name introduced in release X runs on
X or later, whatever the lower bound of the project's pins says (`tensorflow>=1.15` with
`strategy.distribute_datasets_from_function`, new in 2.4). Renames and fixes then may use names of X.

The table comes from the declarative rules' own entries (`replace-with` / `rename-method` with `since`, read from the
releases), so it grows with them and no version fact is written twice.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import libcst as cst

_TABLES: dict[tuple, list] = {}


def version(text: Any) -> tuple[int, int]:
    """`"2.4"` (a table's `since`) as (2, 4)."""
    major, minor = str(text).split(".")[:2]
    return int(major), int(minor)


def evidence_table(rules: Iterable) -> list[tuple[str, str, tuple[int, int]]]:
    """(kind, name, since) of the new symbols and distinctive new method names of every entry with `since`."""
    out = []
    for meta in rules:
        pattern = getattr(meta, "pattern", None)
        entries = pattern if isinstance(pattern, list) else [pattern] if pattern else []
        for e in entries:
            if not isinstance(e, dict) or "since" not in e:
                continue
            if isinstance(e.get("replace-with"), str):
                out.append(("symbol", e["replace-with"], version(e["since"])))
            method = e.get("rename-method")
            # distinctive enough to be evidence on its own (`distribute_datasets_from_function`, not `run`)
            if isinstance(method, str) and "_" in method and len(method) >= 12:
                out.append(("method", method, version(e["since"])))
    return out


def api_floor(ctx) -> Optional[tuple[int, int]]:
    """The newest release among those that introduced an API the file already uses; None when it uses none."""
    registry = ctx.settings.registry
    key = tuple(m.code for m in registry)  # a run's rules (packs add their own)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = evidence_table(registry)
    best = None
    text = ctx.text
    names = ctx.sem.names
    nodes = None
    for kind, name, since in table:
        tail = name.rsplit(".", 1)[-1]
        if tail not in text or (best is not None and since <= best):
            continue
        if kind == "method":
            if f".{tail}(" in text:
                best = since
            continue
        if nodes is None:
            nodes = [*ctx.sem.index.nodes(cst.Attribute), *ctx.sem.index.nodes(cst.Name)]
        for n in nodes:
            own = n.attr.value if isinstance(n, cst.Attribute) else n.value
            if own == tail and names.qualified_name(n) == name:
                best = since
                break
    return best
