"""Rules written as YAML data: reading and validating rule files, user rule packs, and `tflint test-rules`.

A rule file is one YAML mapping (see docs/rule-packs.md and tflint/schema/rule.schema.json): the metadata every
rule has (`code`, `name`, `summary`, prose sections, `default`, `fix`), a `pattern:` read by the one generic
matcher (tflint/checks/declarative.py) and `examples:` that `tflint test-rules` runs. Built-in rules (rules/) and
user packs (`rules-dirs` in the config, `--rules-dir` on the command line) share this format and end in the same
`registry.meta_from_yaml`; a pack's rules then run, suppress, render and fix exactly like built-in ones.

Errors name the file and the line: the YAML is composed into nodes (which keep their marks) before it is turned
into Python values, and each schema error's path is walked back through those nodes.
"""
from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from .registry import Registry, RegistryError, RuleMeta, build_registry, meta_from_yaml, rules_dir
from .schema import SchemaError, rule_schema, validator

RULE_SUFFIXES = (".yaml", ".yml")
RESERVED_PREFIX = "TFL"
FIX_ACTIONS = ("replace-with", "rename-keyword", "rename-method", "rename-to", "add-arg")
BUILTIN_ONLY = ("table", "since")  # data that a built-in rule's own Python check reads
_CODE = re.compile(r"^([A-Z]+)([0-9]+)$")


class PackError(RegistryError):
    """A malformed rule file or pack: the message starts with `file:line:`."""


@dataclass
class RuleFile:
    """One parsed rule file: its values and the YAML node tree they came from (for line numbers)."""

    path: Path
    data: Any
    node: Any  # yaml.Node

    def line(self, path: Iterable[Any] = (), key: Optional[str] = None) -> int:
        """1-based line of the value at `path` (a sequence of keys/indices); with `key`, of that key itself."""
        node = self.node
        for step in path:
            child = _child(node, step)
            if child is None:
                break
            node = child
        if key is not None:
            k = _key_node(node, key)
            if k is not None:
                return k.start_mark.line + 1
        return node.start_mark.line + 1 if node is not None else 1

    def error(self, message: str, path: Iterable[Any] = (), key: Optional[str] = None) -> PackError:
        return PackError(f"{self.path}:{self.line(path, key)}: {message}")


def _key_node(node: Any, key: str) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return k
    return None


def _child(node: Any, step: Any) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode) and isinstance(step, str):
        found = None
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == step:
                found = v  # the last one wins, as in the constructed value
        return found
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
        return node.value[step]
    return None


# -- reading ---------------------------------------------------------------------------------------------------
def read_rule_file(path: Path) -> RuleFile:
    """Parse one YAML rule file, keeping its nodes. Raises PackError (file:line: what) on invalid YAML,
    several documents, duplicate keys or anything but a mapping at the top."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}:1: cannot read the rule file: {exc}") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # libyaml when present: ~10x faster
    try:
        node = loader.get_single_node()
        if node is None:
            raise PackError(f"{path}:1: the rule file is empty")
        _check_duplicate_keys(path, node)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = exc.problem or exc.context or "invalid YAML"
        raise PackError(f"{path}:{line}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise PackError(f"{path}:1: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return RuleFile(path, data, node)


def _check_duplicate_keys(path: Path, node: Any) -> None:
    import yaml

    stack = [node]
    seen_nodes: set[int] = set()  # aliases share nodes (and may even be recursive): visit each once
    while stack:
        n = stack.pop()
        if id(n) in seen_nodes:
            continue
        seen_nodes.add(id(n))
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int] = {}
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen:
                        raise PackError(
                            f"{path}:{k.start_mark.line + 1}: duplicate key `{k.value}` "
                            f"(first given on line {seen[k.value]})"
                        )
                    seen[k.value] = k.start_mark.line + 1
                stack.append(v)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)


# -- validation ------------------------------------------------------------------------------------------------
def schema() -> dict[str, Any]:
    """The JSON Schema every rule file (built-in or pack) must satisfy; it ships inside the package."""
    return rule_schema()


def schema_errors(rf: RuleFile) -> list[PackError]:
    """Every schema violation of one file, each as `file:line: message`, in file order."""
    out: list[tuple[int, int, PackError]] = []
    for n, top in enumerate(validator().iter_errors(rf.data)):
        err, hint = _refine(top, None)
        path = list(err.path)
        message, key = _describe(err, hint)
        line = rf.line(path, key)
        out.append((line, n, PackError(f"{rf.path}:{line}: {_where(path)}{message}")))
    out.sort(key=lambda t: t[:2])
    return [e for _, _, e in out]


def _where(path: list[Any]) -> str:
    if not path:
        return ""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return f"`{text}`: "


def _refine(err: SchemaError, hint: Optional[str]) -> tuple[SchemaError, Optional[str]]:
    """Descend into a `oneOf` whose alternatives differ by type (a name or a list of names; an entry or a list of
    entries) to the alternative the value has the type of, so the error points inside it. Returns the error and
    the nearest `x-message` on the way down."""
    hint = err.schema.get("x-message", hint)
    if err.validator in ("oneOf", "anyOf") and err.context:
        branches: dict[Any, list[SchemaError]] = {}
        for sub in err.context:
            branches.setdefault(sub.branch, []).append(sub)

        def mismatch(errs: list[SchemaError], kinds: tuple[str, ...]) -> bool:
            return any(e.validator in kinds and e.path == err.path for e in errs)

        viable = [errs for errs in branches.values() if not mismatch(errs, ("type", "enum"))]
        if not viable:  # e.g. a bad enum value: the alternative that is not a type mismatch
            viable = [errs for errs in branches.values() if not mismatch(errs, ("type",))]
        if len(viable) == 1 and len(branches) > 1:
            return _refine(viable[0][0], hint)
    return err, hint


def _describe(err: SchemaError, hint: Optional[str] = None) -> tuple[str, Optional[str]]:
    """A message for one schema error (and the key to point at, when the problem is a key)."""
    schema_ = err.schema
    if "x-message" not in schema_ and hint and err.validator not in ("additionalProperties", "required"):
        schema_ = {**schema_, "x-message": hint}
    instance = err.instance
    if err.validator == "additionalProperties" and err.names:
        known = sorted(schema_.get("properties", {}))
        return f"unknown key `{err.names[0]}` (known: {', '.join(known)})", err.names[0]
    if err.validator == "required":
        return f"missing `{err.names[0]}`", None
    if err.validator == "dependentRequired":
        return f"`{err.key}` needs `{err.names[0]}` in the same entry", err.key
    if err.validator == "oneOf" and isinstance(instance, dict) and "entry" in str(schema_.get("x-message", "")):
        from .checks.declarative import MATCH_KEYS

        kinds = [k for k in MATCH_KEYS if k in instance]
        if len(kinds) > 1:
            return f"an entry has exactly one of {', '.join(MATCH_KEYS)}; this one has {' and '.join(kinds)}", None
        if not kinds:
            return f"an entry needs one of {', '.join(MATCH_KEYS)}", None
    if err.validator == "oneOf" and isinstance(instance, dict) and "add-arg" in str(schema_.get("x-message", "")):
        return "`add-arg` takes either `value` (source text) or `symbol` (a qualified name), exactly one", None
    if "x-message" in schema_:
        return f"{schema_['x-message']} (got {_short(instance)})", None
    return err.message, None


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    except ValueError:  # a recursive value built with YAML anchors
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_rule_file(path: Path, *, pack: bool = True) -> tuple[RuleMeta, RuleFile]:
    """Read, validate (schema, then the checks a schema cannot express) and build one rule's metadata."""
    rf = read_rule_file(path)
    errors = schema_errors(rf)
    if errors:
        raise errors[0]
    data = rf.data
    code = data["code"]
    m = _CODE.match(code)
    if pack:
        if m is None or m.group(1).startswith(RESERVED_PREFIX):
            raise rf.error(
                f"code {code}: the prefix {RESERVED_PREFIX} is reserved for tflint's built-in rules; "
                "choose your own letters, like ACME001", ["code"]
            )
        for key in BUILTIN_ONLY:
            if key in data:
                raise rf.error(f"`{key}` is read only by built-in Python rules; a pack rule has its `pattern:`",
                               key=key)
        if not data.get("pattern"):
            raise rf.error(
                "a rule in a pack needs a `pattern:` (rules that need control flow are written in Python, "
                "inside tflint)", key="summary"
            )
    _check_pattern_values(rf)
    _check_examples(rf)
    try:
        meta = meta_from_yaml(data, rf.path)
    except RegistryError as exc:  # declarative.validate_entries: kept in sync with the schema, but say where
        msg = str(exc).split(": ", 1)[-1]
        idx = re.match(r"pattern\[(\d+)\]", msg)
        raise rf.error(msg, ["pattern", int(idx.group(1))] if idx else []) from None
    return meta, rf


def _entries(data: dict[str, Any]) -> list[tuple[list[Any], dict[str, Any]]]:
    pattern = data.get("pattern")
    if isinstance(pattern, dict):
        return [(["pattern"], pattern)]
    if isinstance(pattern, list):
        return [(["pattern", i], e) for i, e in enumerate(pattern) if isinstance(e, dict)]
    return []


def _check_pattern_values(rf: RuleFile) -> None:
    """What the schema cannot say: an `add-arg` value must be a Python expression, and a rule that says
    `fix: none` offers no fix."""
    import libcst as cst

    fix = rf.data.get("fix", "none")
    no_fix = (fix if isinstance(fix, list) else [fix]) == ["none"]
    for where, e in _entries(rf.data):
        action = next((a for a in FIX_ACTIONS if a in e), None)
        if no_fix and action:
            raise rf.error(f"`{action}` is a fix, but the rule says `fix: none` (say safe, unsafe or display)",
                           where, key=action)
        spec = e.get("add-arg")
        if isinstance(spec, dict) and isinstance(spec.get("value"), str):
            try:
                cst.parse_expression(spec["value"])
            except Exception:
                raise rf.error(
                    f"`add-arg.value` must be a Python expression (source text), not {spec['value']!r}",
                    [*where, "add-arg", "value"],
                ) from None


def _check_examples(rf: RuleFile) -> None:
    examples = rf.data.get("examples") or {}
    for kind in ("should-flag", "should-not-flag"):
        for i, snippet in enumerate(examples.get(kind) or []):
            _check_parses(rf, snippet, ["examples", kind, i])
    for i, pair in enumerate(examples.get("fixed") or []):
        _check_parses(rf, pair["before"], ["examples", "fixed", i, "before"])


def _check_parses(rf: RuleFile, snippet: str, where: list[Any]) -> None:
    try:
        compile(snippet, "<example>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise rf.error(f"this example is not valid Python: {exc.msg} (its line {exc.lineno})", where) from None


# -- packs -----------------------------------------------------------------------------------------------------
def rule_files(directory: Path) -> list[Path]:
    """The rule files of a folder, recursively, in a stable order; hidden folders are skipped."""
    out = []
    for p in sorted(Path(directory).rglob("*")):
        rel = p.relative_to(directory).parts
        if p.suffix in RULE_SUFFIXES and p.is_file() and not any(part.startswith(".") for part in rel):
            out.append(p)
    return out


def registry_with_packs(directories: Iterable[Path]) -> Registry:
    """The shipped rules and the rules of each pack folder, in order."""
    reg = build_registry()
    for d in directories:
        load_pack(reg, Path(d))
    return reg


def load_pack(reg: Registry, directory: Path) -> list[RuleMeta]:
    """Add the rules of a user pack to `reg`. Raises PackError on a missing folder, a malformed file, a
    reserved prefix, or a code or name that is already taken. Loading the same folder twice is harmless."""
    return [meta for meta, _ in _load_files(reg, _pack_files(Path(directory)))]


def _pack_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise PackError(f"{directory}: rules directory not found")
    files = rule_files(directory)
    if not files:
        raise PackError(f"{directory}: no rule files (*.yaml) in this rules directory")
    return files


def _load_files(reg: Registry, files: list[Path]) -> list[tuple[RuleMeta, RuleFile]]:
    added = []
    for path in files:
        meta, rf = load_rule_file(path, pack=True)
        same = reg.rules.get(meta.code)
        if same is not None and same.path is not None and same.path.resolve() == path.resolve():
            continue
        if same is not None:
            raise rf.error(f"code {meta.code} is already used by {same.path}", ["code"])
        other = reg.by_name.get(meta.name)
        if other is not None:
            raise rf.error(f"name {meta.name} is already used by {other.code} ({other.path})", ["name"])
        reg.add(meta)
        added.append((meta, rf))
    return added


# -- tflint test-rules -----------------------------------------------------------------------------------------
@dataclass
class Outcome:
    meta: RuleMeta
    label: str  # should-flag[0], should-not-flag[1], fixed[0]
    line: int  # where the example is in the rule file
    problem: Optional[str] = None  # None: passed
    snippet: str = ""


@dataclass
class TestRun:
    outcomes: list[Outcome] = field(default_factory=list)
    without_examples: list[RuleMeta] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problem is not None]


def _error_rows(snippet: str) -> set[int]:
    return {i for i, line in enumerate(snippet.splitlines(), start=1) if re.search(r"#\s*error\b", line)}


def _example_settings(reg: Registry, meta: RuleMeta, rf: RuleFile, examples: dict[str, Any]):
    from .config import Config, parse_version
    from .engine import Settings

    cfg = Config(target_explicit=True)  # an example's target is its own (or today's), not the pins around it
    if examples.get("target-version"):
        cfg.target_version = parse_version(examples["target-version"], str(meta.path))
    extra = list(examples.get("select") or [])
    for i, sel in enumerate(extra):
        if not reg.is_known(sel):
            raise rf.error(f"unknown rule code or name {sel!r} in `examples.select`", ["examples", "select", i])
    return Settings.create(reg, cfg, select=[meta.code, *extra], unsafe_fixes=True)


def _describe_findings(findings) -> str:
    return "; ".join(f"line {f.location.row}: {f.code} {f.message}" for f in findings) or "none"


def run_examples(reg: Registry, meta: RuleMeta, rf: RuleFile) -> list[Outcome]:
    """Check one rule's `examples:`: every should-flag snippet gets a finding of this rule (on exactly the lines
    marked `# error`, when some are), no should-not-flag snippet does, and every `fixed` pair's `before`, fixed
    with this rule's fixes (unsafe included), becomes `after`, which a second pass leaves alone."""
    from .engine import check_text, fix_text

    examples = rf.data.get("examples") or {}
    settings = _example_settings(reg, meta, rf, examples)
    name = examples.get("path") or f"{meta.path.stem if meta.path else meta.name}_example.py"
    out: list[Outcome] = []

    codes = settings.selected
    label = meta.code if codes == {meta.code} else "/".join(sorted(codes))

    def mine(text: str):
        res = check_text(text, name, settings)
        return [f for f in res.findings if f.code in codes], res.errors

    for i, snippet in enumerate(examples.get("should-flag") or []):
        o = Outcome(meta, f"should-flag[{i}]", rf.line(["examples", "should-flag", i]), snippet=snippet)
        found, errors = mine(snippet)
        marked = _error_rows(snippet)
        rows = {f.location.row for f in found}
        if errors:
            o.problem = "internal error:\n" + "\n".join(errors)
        elif not found:
            o.problem = f"expected a finding of {label}, got none"
        elif marked and rows != marked:
            o.problem = (f"expected {label} on the lines marked `# error` ({', '.join(map(str, sorted(marked)))}), "
                         f"got: {_describe_findings(found)}")
        out.append(o)
    for i, snippet in enumerate(examples.get("should-not-flag") or []):
        o = Outcome(meta, f"should-not-flag[{i}]", rf.line(["examples", "should-not-flag", i]), snippet=snippet)
        found, errors = mine(snippet)
        if errors:
            o.problem = "internal error:\n" + "\n".join(errors)
        elif found:
            o.problem = f"expected no finding of {label}, got: {_describe_findings(found)}"
        out.append(o)
    for i, pair in enumerate(examples.get("fixed") or []):
        before, after = pair["before"], pair["after"]
        o = Outcome(meta, f"fixed[{i}]", rf.line(["examples", "fixed", i]), snippet=before)
        out.append(o)
        found, errors = mine(before)
        if errors:
            o.problem = "internal error:\n" + "\n".join(errors)
            continue
        if not found:
            o.problem = f"`before` gets no finding of {label}, so there is nothing to fix"
            continue
        fixed = fix_text(before, name, settings)
        if fixed.errors or fixed.messages:
            o.problem = "the fix did not apply cleanly:\n" + "\n".join([*fixed.errors, *fixed.messages])
            continue
        if fixed.text.rstrip("\n") != after.rstrip("\n"):
            o.problem = "the fixed source differs from `after`:\n" + _diff(after, fixed.text)
            continue
        again = fix_text(fixed.text, name, settings)
        if again.text != fixed.text:
            o.problem = "a second fix pass changed the source again:\n" + _diff(fixed.text, again.text)
    return out


def _diff(expected: str, got: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        expected.rstrip("\n").splitlines(), got.rstrip("\n").splitlines(), "after (expected)", "fixed (got)",
        lineterm="",
    )
    return "\n".join(lines)


def collect(target: Path) -> tuple[Registry, list[tuple[RuleMeta, RuleFile]]]:
    """The registry to test with and the rules of `target`: a pack folder, one rule file, or (part of) tflint's
    own rules/ folder. Every file is validated against the schema either way."""
    target = Path(target)
    if target.is_file():
        files = [target]
    elif target.is_dir():
        files = _pack_files(target)
    else:
        raise PackError(f"{target}: no such rules directory or rule file")
    builtin_root = rules_dir().resolve()
    resolved = target.resolve()
    reg = build_registry()
    if resolved == builtin_root or builtin_root in resolved.parents:
        rules = []
        for path in files:
            meta, rf = load_rule_file(path, pack=False)
            if meta.code not in reg.rules:
                raise rf.error(f"{meta.code} is not a rule of this tflint", ["code"])
            rules.append((reg.rules[meta.code], rf))
        return reg, rules
    return reg, _load_files(reg, files)


def test_rules(directory: Path) -> TestRun:
    reg, rules = collect(directory)
    run = TestRun()
    for meta, rf in rules:
        if not rf.data.get("examples"):
            run.without_examples.append(meta)
            continue
        run.outcomes += run_examples(reg, meta, rf)
    return run


def cmd_test_rules(args) -> int:
    """`tflint test-rules DIR`: exit 0 when every example passes, 1 when one fails, 2 on a malformed pack."""
    from .config import ConfigError

    start = time.perf_counter()
    out = sys.stdout
    try:
        run = test_rules(args.dir)
    except (RegistryError, ConfigError) as exc:
        print(f"tflint: error: {exc}", file=sys.stderr)
        return 2
    width = 80
    n_rules = len({o.meta.code for o in run.outcomes})
    out.write(f"collected {len(run.outcomes)} examples from {n_rules} rule{'s' if n_rules != 1 else ''} "
              f"in {args.dir}\n\n")
    by_rule: dict[str, list[Outcome]] = {}
    for o in run.outcomes:
        by_rule.setdefault(o.meta.code, []).append(o)
    for code, outcomes in sorted(by_rule.items()):
        meta = outcomes[0].meta
        marks = "".join("." if o.problem is None else "F" for o in outcomes)
        out.write(f"{code} {meta.name} {marks}\n")
    if run.without_examples:
        codes = ", ".join(sorted(m.code for m in run.without_examples))
        out.write(f"(no examples: {codes})\n")
    failed = run.failed
    if failed:
        out.write("\n" + " FAILURES ".center(width, "=") + "\n")
        for o in failed:
            where = f"{o.meta.path}:{o.line}"
            out.write(f" {o.meta.code} {o.meta.name} {o.label} ".center(width, "_") + "\n")
            out.write(f"{where}\n{o.problem}\n")
            out.write("example:\n" + "".join(f"    {line}\n" for line in o.snippet.rstrip("\n").splitlines()) + "\n")
    elapsed = time.perf_counter() - start
    passed = len(run.outcomes) - len(failed)
    parts = [f"{len(failed)} failed"] if failed else []
    parts.append(f"{passed} passed")
    if run.without_examples:
        parts.append(f"{len(run.without_examples)} rule{'s' if len(run.without_examples) != 1 else ''} without examples")
    out.write(f" {', '.join(parts)} in {elapsed:.2f}s ".center(width, "=") + "\n")
    if failed:
        for o in failed:
            out.write(f"FAILED {o.meta.path}:{o.line} {o.meta.code} {o.label}\n")
        return 1
    return 0
