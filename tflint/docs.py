"""Generated documentation: the README's rule table comes from the registry (`python -m tflint.docs`)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def rule_table(registry) -> str:
    rows = ["| code | name | default | fix | what |", "|---|---|---|---|---|"]
    for m in registry:
        kind = "runtime (`inspect`)" if m.runtime else "/".join(m.fix)
        summary = m.summary.replace("|", "\\|")
        rows.append(f"| {m.code} | `{m.name}` | {'on' if m.default else 'off'} | {kind} | {summary} |")
    return "\n".join(rows)


def update_readme(path: Path, registry) -> bool:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    new = pattern.sub(START + "\n" + rule_table(registry) + "\n" + END, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def main() -> int:
    from .registry import default_registry

    readme = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("README.md")
    changed = update_readme(readme, default_registry())
    print(f"{readme}: {'updated' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
