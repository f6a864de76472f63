"""`--output-format json`: a JSON array in the shape of Ruff's JSON output."""
from __future__ import annotations

import json

from ..findings import Finding


def render(findings: list[Finding], **_: object) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2, ensure_ascii=False) + "\n"
