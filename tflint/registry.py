"""code/name -> rule, and selection by code, name, prefix or ALL.

A rule's metadata (and its prose) lives once, in `rules/<family>/<name>.yaml`; its detection logic is a
`Check` subclass in `tflint/checks/` with the same `code`, or, for declarative rules, a pattern in the YAML
itself read by one generic matcher. Unknown codes or names are errors.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Optional

from . import __version__

DOC_SECTIONS = ("what", "why", "example", "use-instead", "fix-safety", "limitations", "references")
FIX_KINDS = ("none", "safe", "unsafe", "display")
# How much a finding matters, one per rule (its YAML's `severity`): `error` for code that is wrong or breaks (a
# frozen augmentation, an API the target removed), `warning` for performance advice, `info` for an opt-in style
# preference. Every output says the same: text, JSON, SARIF `level` (error/warning/note), GitHub (::error/
# ::warning/::notice), the language server's DiagnosticSeverity (Error/Warning/Information).
SEVERITIES = ("error", "warning", "info")
DEFAULT_SEVERITY = "warning"
# How much acting on a finding is worth, one per rule (its YAML's `impact`), from the rule's own measurements:
# `correctness` (the code is wrong: silently wrong results, a crash on the target, unbounded memory), `high`
# (measured >= 1.5x on the target TensorFlow, or a removed API that breaks), `medium` (1.1-1.5x, or a large effect
# only in conditions the docs name: GPU, TPU, network storage), `low` (within noise on today's TensorFlow, a rename
# of a still-working alias, style). Required in the shipped rules; a rule pack's rule may omit it (`medium`). A
# rule whose effect changed with a release maps versions to levels: `impact: {"<2.16": low, ">=2.16": high}`.
# `--min-impact` / `min-impact` drops findings of rules below a level; `correctness` is always kept.
IMPACTS = ("low", "medium", "high", "correctness")  # in rising order
DEFAULT_IMPACT = "medium"
_VERSION_SPEC = re.compile(r"^\s*(<|>=)\s*(\d+)\.(\d+)\s*$")


class RegistryError(Exception):
    """A malformed rule file or an unknown rule selector."""


@dataclass
class RuleMeta:
    code: str
    name: str
    summary: str
    default: bool
    fix: tuple[str, ...]
    bench: bool = False
    runtime: bool = False
    severity: str = DEFAULT_SEVERITY
    # a level (IMPACTS), or ((op, version, level), ...) for a rule whose effect changed with a release
    impact: Any = DEFAULT_IMPACT
    docs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    path: Optional[Path] = None
    check: Optional[type] = None  # the Check subclass
    pattern: Optional[dict[str, Any]] = None  # declarative rules
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def fixable(self) -> bool:
        return any(k in ("safe", "unsafe", "display") for k in self.fix)

    @property
    def family(self) -> str:
        return self.path.parent.name if self.path else ""

    def impact_for(self, version: Optional[tuple[int, int]] = None) -> str:
        """The rule's impact on TensorFlow `version` (None: the newest, DEFAULT_TARGET)."""
        return impact_at(self.impact, version)

    @property
    def impact_levels(self) -> set[str]:
        """Every level the rule can have, whatever the target."""
        return {self.impact} if isinstance(self.impact, str) else {level for _, _, level in self.impact}

    @property
    def impact_text(self) -> str:
        """`high`, or `low on TF < 2.16, high on TF >= 2.16` for a rule whose impact depends on the target."""
        if isinstance(self.impact, str):
            return self.impact
        return ", ".join(f"{level} on TF {op} {v[0]}.{v[1]}" for op, v, level in self.impact)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "summary": self.summary,
            "default": self.default,
            "fix": list(self.fix),
            "bench": self.bench,
            "runtime": self.runtime,
            "severity": self.severity,
            "impact": self.impact if isinstance(self.impact, str) else {
                f"{op}{v[0]}.{v[1]}": level for op, v, level in self.impact},
            "options": self.options,
            "docs": {k: self.docs.get(k) for k in DOC_SECTIONS},
        }


def rules_dir() -> Path:
    """The shipped rules/ folder: inside the installed package, or beside it in a checkout."""
    here = Path(__file__).resolve().parent
    packaged = here / "_rules"
    if packaged.is_dir():
        return packaged
    return here.parent / "rules"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """tflint's own code and shipped rules: a development checkout invalidates the cache when either changes."""
    # Every run computes this (the rule registry's cache is keyed by it), so it is kept cheap: an os.walk rather than
    # pathlib (whose objects cost more than the stat calls), and two zlib checksums rather than hashlib (whose import
    # loads OpenSSL, a few ms of a one-file run). It only has to change when a file does: 64 bits are plenty.
    import zlib

    here = Path(__file__).resolve().parent
    parts = [__version__]
    for base in (str(here), str(rules_dir())):
        for folder, dirs, names in os.walk(base):
            dirs.sort()
            rel = os.path.relpath(folder, base)
            for name in sorted(names):
                if name.endswith((".py", ".yaml", ".json")):
                    try:
                        st = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue
                    parts.append(f"{os.path.join(rel, name)}:{st.st_size}:{st.st_mtime_ns}")
    data = "\n".join(parts).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _load_yaml_rule(path: Path) -> dict[str, Any]:
    import yaml

    try:
        # LibYAML's safe loader when PyYAML has it (about ten times faster: start-up matters for pre-commit)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise RegistryError(f"{path}{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise RegistryError(f"{path}:1: a rule file must be a mapping")
    return data


def impact_at(impact: Any, version: Optional[tuple[int, int]] = None) -> str:
    """A rule's `impact` (a level, or a parsed version mapping) on TensorFlow `version` (None: the newest)."""
    if isinstance(impact, str):
        return impact
    if version is None:
        from .config import DEFAULT_TARGET

        version = DEFAULT_TARGET
    for op, v, level in impact:
        if (version < v) if op == "<" else (version >= v):
            return level
    return DEFAULT_IMPACT  # unreachable for a validated mapping (it covers every version)


def impact_rank(level: str) -> int:
    return IMPACTS.index(level)


def parse_impact(value: Any, where: str) -> Any:
    """`impact` as a rule file writes it: a level, or a mapping `{"<2.16": low, ">=2.16": high}` whose version
    ranges cover every release exactly once. Raises RegistryError naming the file and the key."""
    levels = ", ".join(IMPACTS)
    if isinstance(value, str):
        if value in IMPACTS:
            return value
        raise RegistryError(f"{where}: `impact` must be one of {levels} (or a mapping of TensorFlow versions to them, "
                            f"like {{\"<2.16\": low, \">=2.16\": high}}), not {value!r}")
    if not isinstance(value, dict) or not value:
        raise RegistryError(f"{where}: `impact` must be one of {levels}, or a mapping of TensorFlow versions to them "
                            f"like {{\"<2.16\": low, \">=2.16\": high}}, not {value!r}")
    entries = []
    for spec, level in value.items():
        m = _VERSION_SPEC.match(str(spec))
        if m is None:
            raise RegistryError(f"{where}: `impact.{spec}`: a version range is `<X.Y` or `>=X.Y`, like \"<2.16\"")
        if level not in IMPACTS:
            raise RegistryError(f"{where}: `impact.{spec}` must be one of {levels}, not {level!r}")
        entries.append((m.group(1), (int(m.group(2)), int(m.group(3))), level))
    # every version must fall in exactly one range: the answers only change at the versions named
    for probe in sorted({(0, 0), *(v for _, v, _ in entries)}):
        hits = [e for e in entries if ((probe < e[1]) if e[0] == "<" else (probe >= e[1]))]
        if len(hits) != 1:
            what = "no range" if not hits else "several ranges"
            raise RegistryError(f"{where}: `impact`: TF {probe[0]}.{probe[1]} falls in {what}; the ranges must cover "
                                f"every version once, like {{\"<2.16\": low, \">=2.16\": high}}")
    return tuple(entries)


def meta_from_yaml(data: dict[str, Any], path: Optional[Path], require_impact: bool = False) -> RuleMeta:
    """A rule's metadata from its YAML, validated. `require_impact`: the shipped rules must say their impact (a rule
    pack's rule may leave it out: DEFAULT_IMPACT)."""
    where = str(path) if path else "<rule>"
    for key in ("code", "name", "summary"):
        if not isinstance(data.get(key), str) or not data.get(key):
            raise RegistryError(f"{where}: missing or empty `{key}`")
    fix = data.get("fix", "none")
    fix_t = tuple(fix) if isinstance(fix, list) else (fix,)
    for f in fix_t:
        if f not in FIX_KINDS:
            raise RegistryError(f"{where}: `fix` must be one of {', '.join(FIX_KINDS)} (or a list of them), not {f!r}")
    severity = data.get("severity", DEFAULT_SEVERITY)
    if severity not in SEVERITIES:
        raise RegistryError(f"{where}: `severity` must be one of {', '.join(SEVERITIES)}, not {severity!r}")
    if "impact" not in data and require_impact:
        raise RegistryError(f"{where}: missing `impact` (one of {', '.join(IMPACTS)}): every shipped rule says how "
                            "much its findings matter, from the measurements in its `why`")
    impact = parse_impact(data["impact"], where) if "impact" in data else DEFAULT_IMPACT
    pattern = data.get("pattern")
    if pattern is not None:
        from .checks.declarative import PatternError, validate_entries

        try:
            validate_entries(pattern)
        except PatternError as exc:
            raise RegistryError(f"{where}: {exc}") from None
    return RuleMeta(
        code=data["code"],
        name=data["name"],
        summary=data["summary"],
        default=bool(data.get("default", True)),
        fix=fix_t,
        bench=bool(data.get("bench", False)),
        runtime=bool(data.get("runtime", False)),
        severity=severity,
        impact=impact,
        docs={k: data.get(k) for k in DOC_SECTIONS},
        options=dict(data.get("options") or {}),
        path=path,
        pattern=data.get("pattern"),
        raw=data,
    )


def check_classes() -> dict[str, type]:
    """Every Check subclass under tflint/checks, by code."""
    return _import_checks()


def _import_checks() -> dict[str, type]:
    from . import checks
    from .checks.base import Check

    for info in pkgutil.walk_packages(checks.__path__, prefix="tflint.checks."):
        importlib.import_module(info.name)
    found: dict[str, type] = {}

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            code = getattr(sub, "code", None)
            if code and sub.__module__.startswith("tflint.checks."):
                if code in found and found[code] is not sub:
                    raise RegistryError(f"two checks claim {code}: {found[code].__module__} and {sub.__module__}")
                found[code] = sub
            walk(sub)

    walk(Check)
    return found


class Registry:
    def __init__(self, rules: Iterable[RuleMeta]) -> None:
        self.rules: dict[str, RuleMeta] = {}
        self.by_name: dict[str, RuleMeta] = {}
        for r in rules:
            self.add(r)

    def add(self, r: RuleMeta) -> None:
        if r.code in self.rules:
            raise RegistryError(f"{r.path}: code {r.code} is already used by {self.rules[r.code].path}")
        if r.name in self.by_name:
            raise RegistryError(f"{r.path}: name {r.name} is already used by {self.by_name[r.name].path}")
        self.rules[r.code] = r
        self.by_name[r.name] = r

    def __iter__(self):
        return iter(sorted(self.rules.values(), key=lambda r: r.code))

    def severity(self, code: str) -> str:
        """A finding's severity: its rule's (a code the registry does not know: the default)."""
        meta = self.rules.get(code)
        return meta.severity if meta is not None else DEFAULT_SEVERITY

    def impact(self, code: str, version: Optional[tuple[int, int]] = None) -> str:
        """A finding's impact: its rule's on TensorFlow `version` (a code the registry does not know: the default)."""
        meta = self.rules.get(code)
        return meta.impact_for(version) if meta is not None else DEFAULT_IMPACT

    def at_least(self, codes: Iterable[str], min_impact: Optional[str]) -> set[str]:
        """`codes` without the rules below `min_impact` on every target (a rule whose level depends on the target
        stays while one of its levels reaches it; the engine decides per file). Correctness rules always stay."""
        if not min_impact:
            return set(codes)
        floor = impact_rank(min_impact)
        return {c for c in codes if c not in self.rules
                or max(impact_rank(level) for level in self.rules[c].impact_levels) >= floor}

    def get(self, code_or_name: str) -> Optional[RuleMeta]:
        return self.rules.get(code_or_name.upper()) or self.by_name.get(code_or_name)

    def resolve(self, selector: str) -> set[str]:
        """Codes matched by a code, a name, a prefix (`TFL1`) or ALL. Unknown selectors raise."""
        s = selector.strip()
        if s == "ALL":
            return set(self.rules)
        r = self.get(s)
        if r is not None:
            return {r.code}
        up = s.upper()
        matched = {c for c in self.rules if c.startswith(up)}
        if matched and up[:1].isalpha():
            return matched
        raise RegistryError(f"unknown rule code or name: {selector!r}")

    def is_known(self, selector: str) -> bool:
        try:
            self.resolve(selector)
            return True
        except RegistryError:
            return False

    def select(
        self, select: Optional[Iterable[str]] = None, ignore: Iterable[str] = (), extend_select: Iterable[str] = ()
    ) -> set[str]:
        if select is None:
            codes = {c for c, r in self.rules.items() if r.default}
        else:
            codes = set()
            for s in select:
                codes |= self.resolve(s)
        for s in extend_select:
            codes |= self.resolve(s)
        for s in ignore:
            codes -= self.resolve(s)
        return codes


REGISTRY_CACHE_VERSION = 1


def registry_cache_file() -> Path:
    """Where the shipped rules' cache lives: JSON only, keyed by the code fingerprint. Reading it runs no code (it
    held a pickle once: a cache folder restored in CI from an untrusted branch must never be a way in)."""
    import os

    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tflint"
    return base / f"registry-{code_fingerprint()}.json"


def _builtin_rules() -> list[RuleMeta]:
    """The shipped rules, from the JSON cache when it is there and valid (parsing ~60 YAML files is a fifth of a
    one-file run's start-up), else from rules/ and tflint/checks (and the cache is rewritten)."""
    cache_file = registry_cache_file()
    checks = _import_checks()
    if cache_file.exists():
        try:
            return _rules_from_cache(cache_file, checks)
        except (OSError, ValueError, RegistryError) as exc:  # corrupt, truncated, tampered or from another layout
            import sys

            print(f"tflint: warning: ignoring the rule cache {cache_file} ({exc}); rebuilding it", file=sys.stderr)
    rules = []
    for path in sorted(rules_dir().rglob("*.yaml")):
        meta = meta_from_yaml(_load_yaml_rule(path), path, require_impact=True)
        meta.check = checks.get(meta.code)
        rules.append(meta)
    _write_cache(cache_file, rules)
    return rules


def _rules_from_cache(cache_file: Path, checks: dict[str, type]) -> list[RuleMeta]:
    """Rebuild the rules from the cache's plain data, validating every entry as a rule file is validated; a check
    class is looked up among the shipped checks by the rule's code, never imported by a name the file gives."""
    import json

    with open(cache_file, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or data.get("version") != REGISTRY_CACHE_VERSION:
        raise ValueError("not a rule cache of this version")
    entries = data.get("rules")
    if not isinstance(entries, list) or not entries:
        raise ValueError("no rules in it")
    base = rules_dir()
    rules = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("rule"), dict) or not isinstance(entry.get("path"), str):
            raise ValueError("an entry is not a rule")
        rel = Path(entry["path"])
        if rel.is_absolute() or ".." in rel.parts or rel.suffix != ".yaml":
            raise ValueError(f"an entry names a path outside the shipped rules: {entry['path']}")
        meta = meta_from_yaml(entry["rule"], base / rel, require_impact=True)
        meta.check = checks.get(meta.code)
        rules.append(meta)
    return rules


KEEP_OTHER_CACHES = 3  # other builds' registry caches kept beside this build's


def _write_cache(cache_file: Path, rules: list[RuleMeta]) -> None:
    import json
    import os
    import tempfile

    base = rules_dir()
    try:
        entries = [{"path": str(Path(m.path).relative_to(base)), "rule": m.raw} for m in rules]
        text = json.dumps({"version": REGISTRY_CACHE_VERSION, "rules": entries})
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=str(cache_file.parent), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, cache_file)
        # the pickles of old releases go (a pickle can run code when loaded); of other builds' JSON caches (another
        # checkout, another virtualenv's tflint) the KEEP_OTHER_CACHES most recently written stay, so that two
        # installs used in turn do not rebuild each other's cache on every run
        others = []
        for old in cache_file.parent.glob("registry-*"):
            if old == cache_file:
                continue
            if old.suffix == ".pickle":
                old.unlink(missing_ok=True)
            elif old.suffix == ".json":
                others.append((old.stat().st_mtime, old))
        for _, old in sorted(others, reverse=True)[KEEP_OTHER_CACHES:]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError, TypeError):
        pass  # no writable cache directory (or a rule that is not plain data): build it every time


def build_registry() -> Registry:
    """A new registry of the shipped rules (a check without its YAML is not registered: tests/test_registry.py
    asserts there is none). Rule packs are added by tflint.packs (`registry_with_packs`)."""
    return Registry(_builtin_rules())


@lru_cache(maxsize=None)
def default_registry() -> Registry:
    return build_registry()
