"""Every fixture: findings exactly where the expectations say; a findings snapshot pinning each finding's code,
position, message and fix (as Ruff's snapshots do); fixed snapshots; idempotent fixes. Both snapshots are rewritten
by `pytest tests/test_fixtures.py --update-snapshots`, never by hand."""
from __future__ import annotations

import json

import pytest

from harness import all_fixtures, load_fixture
from tflint.engine import check_text, fix_text

FIXTURE_PATHS = all_fixtures()


def _id(p):
    return f"{p.parent.name}/{p.name}"


@pytest.mark.parametrize("path", FIXTURE_PATHS, ids=_id)
def test_expectations(path):
    fx = load_fixture(path)
    settings = fx.settings()
    result = check_text(fx.text, str(path), settings)
    assert not result.errors, result.errors
    got: dict[int, set[str]] = {}
    for f in result.findings:
        got.setdefault(f.location.row, set()).add(f.name)
    problems = []
    for row in sorted(set(got) | set(fx.expected)):
        want = fx.expected.get(row, set())
        have = got.get(row, set())
        for name in sorted(have - want):
            if name in fx.todo.get(row, set()):
                problems.append(f"line {row}: `# todo: [{name}]` is now reported; make it `# error`")
            else:
                problems.append(f"line {row}: unexpected {name}")
        for name in sorted(want - have):
            problems.append(f"line {row}: expected {name}, not reported")
    assert not problems, "\n".join(problems)


def render_findings(findings) -> str:
    """One block per finding: position, code, name and message, then its fix and each edit."""
    out = []
    for f in findings:
        out.append(f"{f.location.row}:{f.location.column}-{f.end_location.row}:{f.end_location.column} "
                   f"{f.code} [{f.name}] {f.message}")
        if f.fix is not None:
            out.append(f"    fix ({f.fix.applicability.value}): {f.fix.message}")
            for e in f.fix.edits:
                out.append(f"    edit {e.location.row}:{e.location.column}-{e.end_location.row}:{e.end_location.column}"
                           f" {json.dumps(e.content)}")
    return "\n".join(out) + "\n" if out else ""


@pytest.mark.parametrize("path", FIXTURE_PATHS, ids=_id)
def test_findings_snapshot(path, request):
    fx = load_fixture(path)
    text = render_findings(check_text(fx.text, str(path), fx.settings()).findings)
    snap = path.with_name(path.name + ".findings")
    if request.config.getoption("--update-snapshots"):
        if text:
            snap.write_text(text, encoding="utf-8")
        elif snap.exists():
            snap.unlink()
    if not text:
        assert not snap.exists(), f"{snap.name} exists but the fixture has no findings any more"
        return
    assert snap.exists(), f"missing snapshot {snap.name}; run pytest --update-snapshots"
    assert text == snap.read_text(encoding="utf-8"), f"{snap.name} differs: a message, position or fix changed"


@pytest.mark.parametrize("path", FIXTURE_PATHS, ids=_id)
def test_fixed_snapshot(path, request):
    fx = load_fixture(path)
    settings = fx.settings()
    fixed = fix_text(fx.text, str(path), settings)
    snap = fx.snapshot
    if fixed.text == fx.text:
        if request.config.getoption("--update-snapshots") and snap.exists():
            snap.unlink()
        assert not snap.exists(), f"{snap.name} exists but no fix applies any more"
        return
    if request.config.getoption("--update-snapshots"):
        snap.write_text(fixed.text, encoding="utf-8")
    assert snap.exists(), f"missing snapshot {snap.name}; run pytest --update-snapshots"
    assert fixed.text == snap.read_text(encoding="utf-8"), f"{snap.name} differs from the fixed source"
    compile(fixed.text, str(snap), "exec")  # the fixed file still compiles
    again = fix_text(fixed.text, str(path), settings)
    assert again.text == fixed.text, "a second --fix pass changed the file again"
    assert not fixed.messages, fixed.messages
