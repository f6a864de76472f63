"""Output formats: pure functions list[Finding] -> str."""
from __future__ import annotations

from typing import Callable

FORMATS = ("concise", "full", "json", "sarif", "github")


def renderer(name: str) -> Callable:
    if name == "concise":
        from .text import concise as fn
    elif name == "full":
        from .text import full as fn
    elif name == "json":
        from .json import render as fn
    elif name == "sarif":
        from .sarif import render as fn
    elif name == "github":
        from .github import render as fn
    else:  # pragma: no cover - argparse restricts the choice
        raise ValueError(name)
    return fn
