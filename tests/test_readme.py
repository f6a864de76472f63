"""The README lists every rule (its table is generated from the registry) and names the two commands CI uses."""
from pathlib import Path

from tflint.docs import END, START, render_readme, rule_table
from tflint.registry import default_registry

ROOT = Path(__file__).resolve().parent.parent


def test_readme_rule_table_is_current():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert table == rule_table(default_registry()), "run `python -m tflint.docs README.md`"


def test_readme_includes_are_current():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert render_readme(text, ROOT, default_registry()) == text, "run `python -m tflint.docs README.md`"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/test" in readme and "./scripts/test" in ci
    assert "./scripts/demo" in readme
