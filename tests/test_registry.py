"""Registry and catalog consistency: codes/names unique and well-formed, every check has its YAML, every rule has
every documentation heading, every static rule has fixtures with a hit and a non-hit, and the fix kinds a rule
declares are the ones its fixtures show."""
from __future__ import annotations

import re

import pytest

from harness import FIXTURES, all_fixtures, load_fixture
from tflint.engine import check_text
from tflint.registry import DOC_SECTIONS, RegistryError, Registry, check_classes, default_registry, meta_from_yaml

REG = default_registry()
STATIC = [m for m in REG if not m.runtime]


def test_every_check_has_yaml():
    missing = sorted(set(check_classes()) - set(REG.rules))
    assert not missing, f"checks without rules/*.yaml: {missing}"


def test_codes_and_names_well_formed():
    for m in REG:
        assert re.fullmatch(r"TFL\d{3}", m.code), m.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", m.name), m.name


def test_duplicate_code_is_an_error():
    m = next(iter(REG))
    with pytest.raises(RegistryError, match="already used"):
        Registry([m, m])


@pytest.mark.parametrize("meta", list(REG), ids=lambda m: m.code)
def test_docs_have_every_heading(meta):
    missing = [k for k in DOC_SECTIONS if not meta.docs.get(k)]
    assert not missing, f"{meta.path}: missing {missing}"


@pytest.mark.parametrize("meta", [m for m in STATIC if m.check or m.pattern], ids=lambda m: m.code)
def test_fixtures_have_hit_and_non_hit(meta):
    folder = FIXTURES / meta.name
    files = sorted(folder.glob("*.py"))
    assert files, f"no fixtures in {folder}"
    fixtures = [load_fixture(p) for p in files]
    assert any(meta.name in names for fx in fixtures for names in fx.expected.values()), "no `# error` hit"
    assert any(fx.ok_rows for fx in fixtures), "no `# ok` non-hit"


@pytest.mark.parametrize("meta", [m for m in STATIC if m.check or m.pattern], ids=lambda m: m.code)
def test_declared_fix_kinds_match_fixtures(meta):
    seen: set[str] = set()
    for path in sorted((FIXTURES / meta.name).glob("*.py")):
        fx = load_fixture(path)
        for f in check_text(fx.text, str(path), fx.settings()).findings:
            if f.code == meta.code:
                seen.add(f.fix.applicability.value if f.fix else "none")
    declared = set(meta.fix)
    fixable = declared - {"none"}
    assert fixable <= seen, f"declares {sorted(fixable)} fixes; fixtures show {sorted(seen)}"
    assert seen - {"none"} <= fixable, f"fixtures show {sorted(seen - {'none'})} fixes; the YAML declares {sorted(declared)}"
    if declared == {"none"}:
        assert seen <= {"none"}, f"declares no fix; fixtures show {sorted(seen)}"


def test_selection_by_code_name_prefix_all():
    assert REG.resolve("TFL101") == {"TFL101"}
    assert REG.resolve("map-without-parallel-calls") == {"TFL101"}
    assert "TFL101" in REG.resolve("TFL1") and "TFL001" not in REG.resolve("TFL1")
    assert REG.resolve("ALL") == set(REG.rules)
    with pytest.raises(RegistryError, match="unknown"):
        REG.resolve("TFL999x")
    with pytest.raises(RegistryError, match="unknown"):
        REG.resolve("no-such-rule")


def test_malformed_rule_yaml_names_the_problem(tmp_path):
    with pytest.raises(RegistryError, match="fix"):
        meta_from_yaml({"code": "TFL900", "name": "x", "summary": "s", "fix": "sometimes"}, tmp_path / "x.yaml")
    with pytest.raises(RegistryError, match="summary"):
        meta_from_yaml({"code": "TFL900", "name": "x"}, tmp_path / "x.yaml")
