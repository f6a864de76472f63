"""`[tool.tflint]` loading and validation.

Configuration comes from the nearest pyproject.toml with a `[tool.tflint]` table (searched upward from the
first path given, else the working directory), or from `--config FILE` (the same keys at top level). An unknown
key, code or rule name is an error that names it and where it was found.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Optional


DEFAULT_TARGET = (2, 21)
KNOWN_KEYS = {
    "select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude", "fixable", "unfixable",
    "unsafe-fixes", "target-version", "rules-dirs", "rules", "dataset-functions", "min-impact", "test-files",
}
# `test-files`: what is reported in unit tests (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`): "correctness"
# (the default: the input-pipeline rules whose findings are bugs, and tool rules; a test's speed is not worth a
# finding, and a test builds variables in a function or a model outside a strategy scope on purpose) or "all"
TEST_FILES = ("correctness", "all")
_TEST_DIRS = frozenset({"tests", "test", "testing"})
# `min-impact`: findings of rules below this level are dropped (tflint.registry.IMPACTS; correctness always stays)
MIN_IMPACTS = ("low", "medium", "high")
DEFAULT_EXCLUDE = [
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist", "node_modules",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tflint_cache", "site-packages", ".ipynb_checkpoints",
]


class ConfigError(Exception):
    pass


def parse_version(value: Any, where: str, written: Optional[str] = None) -> tuple[int, int]:
    """A TensorFlow version written as a string "X.Y" (or "X.Y.Z"). A TOML number is refused: `2.10` unquoted is
    the float 2.1, and reading it as TensorFlow 2.1 would silently change which rules apply. `written`: the value
    as the file spells it (for the hint), when known."""
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = written or f"{value}"
            if "." not in text:
                text += ".0"  # a major version alone is not a target: "X.Y"
            hint = f' (quote it: `target-version = "{text}"`)'
        else:
            hint = ""
        raise ConfigError(f"{where}: `target-version` must be a quoted string such as \"2.21\", not the "
                          f"{_toml_type(value)} {written or value}{hint}")
    text = value.strip()
    parts = text.split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ConfigError(f"{where}: `target-version` must look like \"2.21\", not {value!r}")
    return int(parts[0]), int(parts[1])


def _written_value(source: Optional[Path], key: str) -> Optional[str]:
    """How a bare (unquoted) value of `key` is spelled in the TOML file: `2.10`, which TOML reads as 2.1."""
    if source is None:
        return None
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    import re

    m = re.search(rf"^\s*{re.escape(key)}\s*=\s*([0-9][0-9._]*)\s*(?:#.*)?$", text, re.M)
    return m.group(1) if m else None


def _toml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float):
        return "number"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "table"
    return type(value).__name__


@dataclass
class Config:
    select: Optional[list[str]] = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    fixable: Optional[list[str]] = None
    unfixable: list[str] = field(default_factory=list)
    unsafe_fixes: bool = False
    target_version: tuple[int, int] = DEFAULT_TARGET
    target_explicit: bool = False  # set by `target-version` (or --target-version): the project's pins are not read
    rules_dirs: list[Path] = field(default_factory=list)
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_functions: list[str] = field(default_factory=list)
    min_impact: Optional[str] = None  # None: every finding, whatever its rule's impact
    test_files: str = "correctness"  # what unit tests get (TEST_FILES)
    root: Path = field(default_factory=Path.cwd)
    source: Optional[Path] = None

    # -- loading -------------------------------------------------------------------------------------------
    @classmethod
    def from_table(cls, table: dict[str, Any], root: Path, source: Optional[Path], where: str) -> "Config":
        unknown = sorted(set(table) - KNOWN_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key `{unknown[0]}` (known keys: {', '.join(sorted(KNOWN_KEYS))})")
        cfg = cls(root=root, source=source)

        def str_list(key: str) -> list[str]:
            v = table.get(key, [])
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ConfigError(f"{where}: `{key}` must be a list of strings")
            return list(v)

        if "select" in table:
            cfg.select = str_list("select")
        cfg.extend_select = str_list("extend-select")
        cfg.ignore = str_list("ignore")
        if "exclude" in table:
            cfg.exclude = str_list("exclude")
        cfg.extend_exclude = str_list("extend-exclude")
        if "fixable" in table:
            cfg.fixable = str_list("fixable")
        cfg.unfixable = str_list("unfixable")
        cfg.dataset_functions = str_list("dataset-functions")
        cfg.rules_dirs = [(root / p) for p in str_list("rules-dirs")]
        if "unsafe-fixes" in table:
            if not isinstance(table["unsafe-fixes"], bool):
                raise ConfigError(f"{where}: `unsafe-fixes` must be true or false")
            cfg.unsafe_fixes = table["unsafe-fixes"]
        if "target-version" in table:
            cfg.target_version = parse_version(table["target-version"], where,
                                               written=_written_value(source, "target-version"))
            cfg.target_explicit = True
        if "min-impact" in table:
            cfg.min_impact = parse_min_impact(table["min-impact"], f"{where}: `min-impact`")
        if "test-files" in table:
            if table["test-files"] not in TEST_FILES:
                raise ConfigError(f"{where}: `test-files` must be one of {', '.join(repr(t) for t in TEST_FILES)}, "
                                  f"not {table['test-files']!r}")
            cfg.test_files = table["test-files"]
        pfi = table.get("per-file-ignores", {})
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of pattern = [codes]")
        for pattern, codes in pfi.items():
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                raise ConfigError(f"{where}: `per-file-ignores.{pattern}` must be a list of codes")
            cfg.per_file_ignores[pattern] = list(codes)
        rules = table.get("rules", {})
        if not isinstance(rules, dict) or not all(isinstance(v, dict) for v in rules.values()):
            raise ConfigError(f"{where}: `rules` must hold one table per rule: [tool.tflint.rules.<name>]")
        cfg.rule_options = {k: dict(v) for k, v in rules.items()}
        cfg._where = where
        return cfg

    @classmethod
    def load(cls, config_file: Optional[Path] = None, start: Optional[Path] = None) -> "Config":
        if config_file is not None:
            path = Path(config_file)
            table = _read_toml(path)
            if path.name == "pyproject.toml":
                table = table.get("tool", {}).get("tflint", {})
                where = f"{path} [tool.tflint]"
            else:
                where = str(path)
            return cls.from_table(table, path.resolve().parent, path, where)
        found = find_pyproject(start or Path.cwd())
        if found is None:
            return cls(root=Path.cwd())
        table = _read_toml(found).get("tool", {}).get("tflint", {})
        return cls.from_table(table, found.resolve().parent, found, f"{found} [tool.tflint]")

    # -- validation against the registry ---------------------------------------------------------------------
    def validate(self, registry) -> None:
        where = getattr(self, "_where", "configuration")
        lists = {
            "select": self.select or [], "extend-select": self.extend_select, "ignore": self.ignore,
            "fixable": self.fixable or [], "unfixable": self.unfixable,
        }
        for key, values in lists.items():
            for v in values:
                if not registry.is_known(v):
                    raise ConfigError(f"{where}: unknown rule code or name {v!r} in `{key}`")
        for pattern, codes in self.per_file_ignores.items():
            for v in codes:
                if not registry.is_known(v):
                    raise ConfigError(f"{where}: unknown rule code or name {v!r} in `per-file-ignores.{pattern}`")
        by_name: dict[str, dict[str, Any]] = {}
        for name, opts in self.rule_options.items():
            meta = registry.get(name)
            if meta is None:
                raise ConfigError(f"{where}: unknown rule {name!r} in `rules.{name}`")
            for k, v in opts.items():
                if k not in meta.options:
                    known = ", ".join(sorted(meta.options)) or "none"
                    raise ConfigError(f"{where}: unknown option `{k}` for rule {meta.name} (options: {known})")
                check_option_type(v, meta.options[k], f"{where}: `rules.{meta.name}.{k}`")
            by_name.setdefault(meta.name, {}).update(opts)  # `rules.TFL504` and `rules.<its name>` are one table
        self.rule_options = by_name

    # -- queries -------------------------------------------------------------------------------------------
    def selected(self, registry) -> set[str]:
        return registry.select(self.select, self.ignore, self.extend_select)

    def codes_for(self, registry, path: Optional[str], base: set[str]) -> set[str]:
        if path and self.test_files == "correctness" and is_test_file(path):
            base = {c for c in base if c.startswith("TFL0") or (c.startswith("TFL1")
                                                                  and registry.rules[c].impact_levels == {"correctness"})}
        if not self.per_file_ignores or not path:
            return base
        rel = relative_path(path, self.root)
        codes = set(base)
        for pattern, selectors in self.per_file_ignores.items():
            if path_matches(rel, pattern):
                for s in selectors:
                    codes -= registry.resolve(s)
        return codes

    def fixable_codes(self, registry) -> set[str]:
        codes = set(registry.rules) if self.fixable is None else set().union(*[registry.resolve(s) for s in self.fixable]) if self.fixable else set()
        for s in self.unfixable:
            codes -= registry.resolve(s)
        return codes

    def rule_options_for(self, name: str) -> dict[str, Any]:
        return self.rule_options.get(name, {})

    def fingerprint(self) -> str:
        data = {
            "select": self.select, "extend": self.extend_select, "ignore": self.ignore, "pfi": self.per_file_ignores,
            "fixable": self.fixable, "unfixable": self.unfixable, "target": self.target_version,
            "explicit": self.target_explicit, "min_impact": self.min_impact, "tests": self.test_files,
            "rules": self.rule_options, "dsf": self.dataset_functions, "dirs": [str(p) for p in self.rules_dirs],
        }
        import hashlib  # only the result cache asks (hashlib loads OpenSSL: a few ms of every start-up)

        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def is_test_file(path: str) -> bool:
    """A unit test or a test's helper module: `test_*.py`, `*_test.py`/`*_tests.py`, `conftest.py`,
    `*testing_utils.py`/`test_util.py`/`*_test_utils.py` (the fixtures tests share: tensorflow/estimator's
    `linear_testing_utils.py`, two findings on tiny test inputs judged false in round 17), or a file under a
    `tests`/`test` folder."""
    parts = re.split(r"[\\/]", path)
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    if stem.startswith("test_") or stem.endswith(("_test", "_tests")) or stem == "conftest":
        return True
    if _TEST_HELPER.search(stem):
        return True
    return any(p in _TEST_DIRS for p in parts[:-1])


_TEST_HELPER = re.compile(r"(^|_)(testing|test)_?(util|utils|helper|helpers|lib|base|case|cases)(_v\d+)?$")


def parse_min_impact(value: Any, where: str) -> str:
    """A `min-impact` level: low, medium or high (correctness findings are always kept, so it is no threshold)."""
    if isinstance(value, str) and value.strip().lower() in MIN_IMPACTS:
        return value.strip().lower()
    hint = " (correctness findings are always kept: use high)" if value == "correctness" else ""
    raise ConfigError(f"{where} must be one of {', '.join(MIN_IMPACTS)}, not {value!r}{hint}")


def check_option_type(value: Any, default: Any, where: str) -> None:
    """A per-rule option has the type of its default (an integer where a number is expected is fine)."""
    if default is None:
        return
    if isinstance(default, bool) or isinstance(value, bool):
        ok = isinstance(value, bool) and isinstance(default, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float))
    elif isinstance(default, int):
        ok = isinstance(value, int)
    elif isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(x, str) for x in value) if all(isinstance(x, str) for x in default) else isinstance(value, list)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{where} must be {_expected(default)} like the default {default!r}, not the "
                          f"{_toml_type(value)} {value!r}")


def _expected(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, list):
        return "a list"
    if isinstance(default, str):
        return "a string"
    return f"a {_toml_type(default)}"


def _read_toml(path: Path) -> dict[str, Any]:
    # imported here: a run with no configuration file reads none (tomllib and its imports are a measurable part of a
    # one-file run's start-up)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None


def find_pyproject(start: Path) -> Optional[Path]:
    p = Path(start).resolve()
    if p.is_file():
        p = p.parent
    for d in [p, *p.parents]:
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                table = _read_toml(candidate)
            except ConfigError:
                raise
            if "tflint" in table.get("tool", {}):
                return candidate
    return None


def relative_path(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).as_posix()


def path_matches(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch(rel, pattern) or fnmatch(rel, pattern + "/*"):
        return True
    # a pattern without a slash matches a file name anywhere (as Ruff does)
    if "/" not in pattern:
        return fnmatch(rel.rsplit("/", 1)[-1], pattern)
    return False
