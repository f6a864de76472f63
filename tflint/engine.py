"""Parse once, run every selected rule over one shared index, filter suppressions, and fix in passes.

`check_text` returns findings for one text; `fix_text` applies fixes in passes until nothing changes (edits that
overlap an accepted edit wait for the next pass; a pass that would make the text unparseable is refused and
reported; at most MAX_PASSES passes).
"""
from __future__ import annotations

import ast
import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import libcst as cst

from .checks.base import NodeEdit, Report
from .config import Config
from .findings import Applicability, Edit, Finding, Fix, Position
from .registry import Registry, RuleMeta, impact_rank
from .parsing import parse_module, release_memory, top_level_statements
from .positions import Positions
from .semantics import ProjectView, Semantics
from .semantics.index import derives
from .semantics.summary import outline, summarize
from .source import LineIndex, common_affixes
from .suppress import Directive, Suppressions, parse_directives, remove_codes

MAX_PASSES = 10
SYNTAX_ERROR = "TFL001"
UNUSED_SUPPRESSION = "TFL002"
# A file that cannot contain TensorFlow code is not parsed by libcst (only checked for syntax).
_TF_HINT = re.compile(r"tensorflow|keras|\btf\b|tfds|tf_keras")
_ESTIMATOR = re.compile(r"\b(?:tf|tensorflow)\.(?:compat\.v1\.)?estimator\.|^\s*(?:from|import)\s+tensorflow_estimator\b|"
                        r"^\s*from\s+tensorflow(?:\.compat\.v1)?\s+import\s+estimator\b", re.M)
_LEGACY_KERAS = re.compile(r"""TF_USE_LEGACY_KERAS['"]?\s*(?:\]\s*=|,|=)\s*['"]?(?:1|true|True|TRUE)\b""")
_TF_KERAS = re.compile(r"\btf\.keras\b|\btensorflow\.keras\b|from\s+tensorflow\s+import\s+[^\n]*\bkeras\b|\btf_keras\b")


@dataclass
class Settings:
    """Everything a run decides once: the registry, config and the selected/fixable codes."""

    registry: Registry
    config: Config
    selected: set[str]
    fixable: set[str]
    unsafe_fixes: bool = False
    prefilter: bool = True
    extra_hints: tuple[str, ...] = ()
    dataset_functions: tuple[str, ...] = ()  # from config and `dataset-function` pattern entries
    min_impact: Optional[str] = None  # rules below it are not selected (per file for target-dependent impacts)
    project: Optional[Any] = None  # the project's facts across modules (tflint.modules.ProjectFacts), if built

    @classmethod
    def create(
        cls,
        registry: Registry,
        config: Optional[Config] = None,
        select: Optional[Iterable[str]] = None,
        ignore: Iterable[str] = (),
        extend_select: Iterable[str] = (),
        unsafe_fixes: Optional[bool] = None,
        prefilter: bool = True,
        min_impact: Optional[str] = None,
    ) -> "Settings":
        """`min_impact` (the command line's) over the configuration's `min-impact`."""
        config = config or Config()
        if select is not None:  # a selection given by the caller (the command line) replaces the configuration's
            selected = registry.select(list(select), ignore, extend_select)
        else:
            selected = registry.select(config.select, config.ignore, config.extend_select)
            selected = registry.select(sorted(selected), ignore, extend_select)
        min_impact = min_impact or config.min_impact
        selected = registry.at_least(selected, min_impact)
        dataset_functions = list(config.dataset_functions)
        hints = ()
        for meta in registry:
            if meta.pattern:
                from .checks.declarative import dataset_functions as declared

                dataset_functions += declared(meta.pattern)
                if meta.code in selected:
                    hints += tuple(_pattern_roots(meta.pattern))
        hints += tuple(q.split(".")[0] for q in dataset_functions)
        return cls(
            registry=registry,
            config=config,
            selected=selected,
            fixable=config.fixable_codes(registry),
            unsafe_fixes=config.unsafe_fixes if unsafe_fixes is None else unsafe_fixes,
            prefilter=prefilter,
            extra_hints=hints,
            dataset_functions=tuple(dataset_functions),
            min_impact=min_impact,
        )

    def codes_for(self, path: Optional[str]) -> set[str]:
        return self.config.codes_for(self.registry, path, self.selected)

    def target_for(self, path: str, text: str) -> "Target":
        """The TensorFlow (and Keras) a file runs on: `target-version` when configured; else what the project pins
        (tflint.pins), lowered to TF 1.15 for a file written against TF1 (tf.contrib or sessions without
        compat.v1 cannot run on TF2; a compat.v1 file is TF1 unless the project pins TF2)."""
        from .pins import header_pins, keras2_style, pins_for, standalone_keras_import, tf1_style

        style = tf1_style(text)
        if self.config.target_explicit:
            v = self.config.target_version
            return Target(v, v < (2, 16) or bool(_LEGACY_KERAS.search(text)), "target-version",
                          tf1=style is not None or v < (2, 0))
        k2_modules = keras2_style(text)
        old_keras = k2_modules and standalone_keras_import(text)
        pins = header_pins(text) or pins_for(path)  # the file's own "written for TensorFlow 1.15" first
        version = pins.tensorflow if pins is not None and pins.tensorflow else self.config.target_version
        keras2 = (pins is not None and pins.keras2) or version < (2, 16) or k2_modules
        source = pins.source if pins is not None else ""
        if not keras2 and _LEGACY_KERAS.search(text):
            # `os.environ["TF_USE_LEGACY_KERAS"] = "1"` before TensorFlow is imported: tf.keras is tf_keras (Keras 2)
            keras2, source = True, (source + "; " if source else "") + "TF_USE_LEGACY_KERAS=1 in the file"
        if version >= (2, 16) and _ESTIMATOR.search(text):
            # `tf.estimator` left with TF 2.16 (its last tensorflow-estimator is 2.15.0; 2.15.1 requires
            # `tensorflow-estimator<2.16`, 2.16.1 does not and requires `keras>=3`): a file using it runs on 2.15 or
            # older, with Keras 2 (TensorFlow's migration guides: 3 TFL302 findings judged false, round 27 re-judging)
            version, keras2, source = (2, 15), True, (source + "; " if source else "") + "tf.estimator in the file"
        if style == "tf1-runtime" or (style == "tf1-api" and (pins is None or not pins.tensorflow
                                                              or pins.tensorflow < (2, 0))):
            if version > (1, 15):
                version, keras2, source = (1, 15), True, (source + "; " if source else "") + "TF1 code in the file"
        # multi-backend Keras (standalone `keras` before 2.4, as a notebook printed it) runs TF1-style graphs
        # (a file that spells no `tf.keras` runs the project's Keras: `from pkg.backend import keras` in bert4keras)
        multi_backend = (pins is not None and pins.keras_version is not None and pins.keras_version < (2, 4)
                         and (standalone_keras_import(text) or not _TF_KERAS.search(text)))
        floor = pins.oldest if pins is not None and pins.tensorflow else None
        return Target(version, keras2, source, tf1=style is not None or version < (2, 0) or old_keras or multi_backend,
                      floor=floor)

    def may_contain_tf(self, text: str) -> bool:
        if not self.prefilter:
            return True
        if _TF_HINT.search(text):
            return True
        return any(h and h in text for h in self.extra_hints)


_HINT_KEYS = ("symbol", "call", "dataset-function")  # pattern keys that name what a file must mention to match


def _pattern_roots(pattern: Any) -> list[str]:
    """The top-level modules the `pattern:` entries match (`mypkg` of `call: mypkg.data.make_reader`): a file that
    mentions none of them (nor TensorFlow) cannot match."""
    out = []
    for entry in pattern if isinstance(pattern, list) else [pattern]:
        if not isinstance(entry, dict):
            continue
        for key in _HINT_KEYS:
            names = entry.get(key)
            for name in names if isinstance(names, list) else [names]:
                if isinstance(name, str) and "." in name:
                    out.append(name.split(".")[0])
    return out


@dataclass(frozen=True)
class Target:
    version: tuple[int, int]  # TensorFlow (major, minor)
    keras2: bool  # the file's Keras is Keras 2 (TF < 2.16, keras<3 or tf-keras pinned)
    source: str  # where it came from, for messages
    tf1: bool = False  # the file is written against the TF1 API (compat.v1, sessions, tf.contrib) or runs TF 1.x
    floor: Optional[tuple[int, int]] = None  # the oldest TensorFlow the pins allow (`tensorflow>=1.15`: 1.15)


@dataclass
class FileContext:
    path: str
    text: str
    module: cst.Module
    sem: Semantics
    settings: Settings
    reports: list[Report] = field(default_factory=list)

    _target: Optional[Target] = None
    _oldest: Optional[tuple[int, int]] = None
    _known: Optional[tuple] = None  # (known_floor,) once computed

    @property
    def target(self) -> Target:
        if self._target is None:
            self._target = self.settings.target_for(self.path, self.text)
        return self._target

    @property
    def target_version(self) -> tuple[int, int]:
        return self.target.version

    @property
    def oldest_version(self) -> tuple[int, int]:
        """The oldest TensorFlow the project supports: its pins' lower bound (`tensorflow>=2.4` on a 2.21 target:
        2.4), raised by API the file already uses (tflint.checks.evidence), else the target. A name a fix inserts
        must exist there too, or the fix breaks a supported release."""
        if self._oldest is None:
            floor = self.target.floor
            if floor is None:
                self._oldest = self.target_version
            else:
                from .checks.evidence import api_floor

                used = api_floor(self)  # the file already uses a name that release introduced
                self._oldest = min(max(floor, used) if used is not None else floor, self.target_version)
        return self._oldest

    @property
    def known_floor(self) -> Optional[tuple[int, int]]:
        """The oldest TensorFlow the project is known to run, or None when nothing says: `target-version`, the
        pins' lower bound (a notebook's printed version included), raised by API the file already uses; with no
        pins, the API the file uses alone."""
        if self._known is None:
            if self.settings.config.target_explicit:
                known = self.target_version
            elif self.target.floor is not None:
                known = self.oldest_version
            else:
                from .checks.evidence import api_floor

                known = api_floor(self)
            self._known = (known,)
        return self._known[0]

    def rule_options(self, name: str) -> dict[str, Any]:
        return self.settings.config.rule_options_for(name)


@dataclass
class CheckResult:
    findings: list[Finding]
    errors: list[str] = field(default_factory=list)  # internal errors (a rule crashed): exit code 2
    syntax_error: Optional[Finding] = None  # why the text could not be analysed (whether or not TFL001 is selected)
    summary: Optional[dict] = None  # what other modules may ask of this file (tflint.semantics.summary)
    queries: dict[str, str] = field(default_factory=dict)  # what it asked of them (tflint.semantics.crossref)


_VISIT_CACHE: dict[type, list[tuple[str, type]]] = {}


def _visit_methods(check_cls: type) -> list[tuple[str, type]]:
    cached = _VISIT_CACHE.get(check_cls)
    if cached is None:
        cached = []
        for attr in dir(check_cls):
            if attr.startswith("visit_"):
                typ = getattr(cst, attr[len("visit_"):], None)
                if isinstance(typ, type) and derives(typ, (cst.CSTNode,)):
                    cached.append((attr, typ))
        _VISIT_CACHE[check_cls] = cached
    return cached


def syntax_error_finding(path: str, message: str, row: int, col: int, text: str = "") -> Finding:
    row = max(row, 1)
    line = LineIndex(text).line(row) if text else ""
    return Finding(
        code=SYNTAX_ERROR,
        name="syntax-error",
        message=message,
        filename=path,
        location=Position(row, max(col, 0) + 1),
        end_location=Position(row, max(col, 0) + 1),
        source_line=line,
    )


def _parse(text: str, path: str, tops=None) -> tuple[Optional[cst.Module], Optional[Finding]]:
    """libcst's tree of the text (in pieces when it is large and `tops`, from CPython's parse of it, says where the
    top-level statements are: see tflint.parsing), or the syntax-error finding."""
    try:
        return parse_module(text, tops), None
    except cst.ParserSyntaxError as exc:
        msg = str(exc.message).strip().splitlines()[0] if exc.message else "invalid syntax"
        return None, syntax_error_finding(path, f"SyntaxError: {msg}", exc.raw_line, exc.raw_column, text)
    except RecursionError:
        return None, syntax_error_finding(path, "SyntaxError: too deeply nested to parse", 1, 0, text)
    except Exception as exc:  # libcst may raise other errors on exotic input
        return None, syntax_error_finding(path, f"SyntaxError: could not parse: {type(exc).__name__}: {exc}", 1, 0, text)


@dataclass
class _CPythonVerdict:
    finding: Optional[Finding]  # the TFL001 CPython's parser gives (None: it parses)
    limit: bool = False  # a parser limit (nesting, size), not a mistake in the code
    tops: Optional[list] = None  # where the top-level statements are, when it parses (tflint.parsing)
    outline: Optional[dict] = None  # the summary of a file with no TensorFlow in it (its defs and re-exports)


def _cpython_syntax(text: str, path: str) -> _CPythonVerdict:
    """CPython's own parser's verdict on the text (`finding` None when it parses, with its tree)."""
    import warnings

    try:
        with warnings.catch_warnings():  # no SyntaxWarning (invalid escapes, ...) may reach the user's terminal
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
            return _CPythonVerdict(None, tops=top_level_statements(text, tree), outline=outline(tree))
    except SyntaxError as exc:
        f = syntax_error_finding(path, f"SyntaxError: {exc.msg}", exc.lineno or 1, (exc.offset or 1) - 1, text)
        return _CPythonVerdict(f, limit="too many nested" in (exc.msg or ""))
    except (RecursionError, MemoryError, ValueError) as exc:
        f = syntax_error_finding(path, f"SyntaxError: could not parse: {type(exc).__name__}", 1, 0, text)
        return _CPythonVerdict(f, limit=True)


def _keras_questions(outline: Optional[dict]) -> list[str]:
    """The project questions a file without TensorFlow in its text asks: does a name it imports from the project
    stand for Keras (a model class, a function that returns a model, a TensorFlow alias)?"""
    if not outline:
        return []
    return [f"k:{q}" for q in sorted(set(outline.get("imports", {}).values()))]


def _keras_through_project(settings: Settings, path: str, outline: Optional[dict]) -> bool:
    """In the project's pass: a file with no TensorFlow in its text imports a project name that stands for Keras
    (bubbliiiing/unet-tf2's `unet.py` builds `self.model = unet(...)` from `nets/unet.py` and predicts with it)."""
    facts = settings.project
    return facts is not None and any(facts.answer(path, key) for key in _keras_questions(outline))


def check_text(text: str, path: str, settings: Settings) -> CheckResult:
    codes = settings.codes_for(path)

    def report(f: Optional[Finding]) -> CheckResult:
        return CheckResult([f] if f is not None and SYNTAX_ERROR in codes else [], syntax_error=f)

    if "\x00" in text:
        return report(syntax_error_finding(path, "Cannot check: the file contains NUL bytes (binary?)", 1, 0))
    # libcst's native parser crashes the process (SIGSEGV) on a few thousand nested brackets and takes minutes on
    # very long operator chains; CPython's own parser rejects both cleanly, so it is asked first. Other syntax
    # errors are left to libcst, whose grammar may be newer than the running Python's.
    verdict = _cpython_syntax(text, path)
    tops, cpython = verdict.tops, (verdict if verdict.finding is not None else None)
    if tops is not None:
        release_memory()  # CPython's tree of a large text is gone: its memory back before libcst's parse
    if cpython is not None and cpython.limit:
        f = cpython.finding
        return report(f.with_changes(message=f"SyntaxError: too deeply nested to check ({f.message.split(': ', 1)[-1]})"))
    if not settings.may_contain_tf(text) and not (UNUSED_SUPPRESSION in codes and ("noqa" in text or "tflint" in text)) \
            and not _keras_through_project(settings, path, verdict.outline):
        # only a syntax check (unused suppressions still need the full path)
        if cpython is not None and _parse(text, path)[0] is not None:
            return report(None)  # syntax newer than the running Python's (`type X = int` on 3.11): libcst has it
        result = report(cpython.finding if cpython else None)
        if settings.project is None and not cpython:
            result.summary = verdict.outline  # a package's `__init__.py` re-exporting a dataset function
            # what it imports from the project may stand for Keras (`from nets.unet import Unet`): asked in the
            # project's pass, which analyses the file after all when one does
            result.queries = {key: "" for key in _keras_questions(verdict.outline)}
        return result
    module, error = _parse(text, path, tops)
    if module is None:
        # CPython's parser places the error where the user made it (libcst's native parser often points a line
        # or more later). When CPython accepts the text, the code runs (tabs and spaces mixed the way CPython
        # allows; syntax newer than this Python's): it is left unanalysed, with no TFL001 claiming it does not
        # (a notebook still leaves out the one cell, through `syntax_error`)
        if cpython is None:
            return CheckResult([], syntax_error=error)
        return report(cpython.finding)
    return _check_module(text, path, module, settings, codes)


def _check_module(text: str, path: str, module: cst.Module, settings: Settings, codes: set[str]) -> CheckResult:
    errors: list[str] = []
    try:
        sem = Semantics(module, settings.dataset_functions, ProjectView(settings.project, path))
        sem.notebook = path.endswith(".ipynb")  # its functions are local: the cells are the whole program
    except RecursionError:
        f = syntax_error_finding(path, "SyntaxError: too deeply nested to analyse", 1, 0, text)
        return CheckResult([f] if SYNTAX_ERROR in codes else [], syntax_error=f)
    ctx = FileContext(path, text, module, sem, settings)
    codes = _at_least_here(ctx, codes)
    for code in sorted(codes):
        meta = settings.registry.rules.get(code)
        if meta is None:
            continue
        check_cls = meta.check
        if check_cls is None and meta.pattern:
            from .checks.declarative import DeclarativeCheck

            check_cls = DeclarativeCheck
        if check_cls is None:
            continue
        try:
            check = check_cls(ctx, meta)
            if getattr(check, "skip_file", False):
                continue  # the check proved from the text alone that it cannot fire here
            for attr, typ in _visit_methods(check_cls):
                method = getattr(check, attr)
                for node in sem.index.nodes(typ):
                    method(node)
            check.finish()
        except RecursionError:
            errors.append(f"{path}: {meta.code} ({meta.name}) gave up: the file is too deeply nested")
        except Exception:
            tb = traceback.format_exc(limit=6)
            errors.append(f"{path}: internal error in {meta.code} ({meta.name}); please report it:\n{tb}")
    summary = None
    if settings.project is None:  # the first pass of a run: what other modules may ask of this one
        try:
            summary = summarize(sem)
        except RecursionError:
            summary = None
    queries = sem.project.queries
    directives = parse_directives(text)
    if not ctx.reports and not (UNUSED_SUPPRESSION in codes and directives):
        return CheckResult([], errors, summary=summary, queries=queries)
    return CheckResult(_materialize(ctx, directives, codes), errors, summary=summary, queries=queries)


def _at_least_here(ctx: FileContext, codes: set[str]) -> set[str]:
    """`codes` without the rules whose impact on this file's target is below `min-impact` (only rules whose impact
    depends on the target are left to decide here: Settings.create dropped the others)."""
    settings = ctx.settings
    if not settings.min_impact:
        return codes
    floor = impact_rank(settings.min_impact)
    rules = settings.registry.rules
    return {c for c in codes if c not in rules or isinstance(rules[c].impact, str)
            or impact_rank(rules[c].impact_for(ctx.target_version)) >= floor}


def _materialize(ctx: FileContext, directives: list[Directive], codes: set[str]) -> list[Finding]:
    registry = ctx.settings.registry
    positions = Positions(ctx.module, ctx.text, ctx.sem.index)
    lines = LineIndex(ctx.text)
    supp = Suppressions.for_text(ctx.text, registry.resolve, directives)
    findings: list[Finding] = []
    for rep in ctx.reports:
        meta = registry.rules[rep.code]
        rng = positions.syntactic(rep.node)
        if rng is None:
            continue
        start = rng.start
        if rep.start_node is not None:
            srng = positions.syntactic(rep.start_node)
            if srng is not None:
                start = srng.start
        if supp.suppressing(meta.code, meta.name, start.line):
            continue
        fix = _build_fix(ctx, rep, positions, lines) if rep.edits else None
        findings.append(
            Finding(
                code=meta.code,
                name=meta.name,
                message=rep.message,
                filename=ctx.path,
                location=Position(start.line, start.column + 1),
                end_location=Position(rng.end.line, rng.end.column + 1),
                fix=fix,
                source_line=_source_lines(lines, start.line, rng.end.line),
                impact=None if isinstance(meta.impact, str) else meta.impact_for(ctx.target_version),
            )
        )
    if UNUSED_SUPPRESSION in codes:
        meta = registry.rules[UNUSED_SUPPRESSION]
        def judged(selector: str) -> bool:
            # only codes this run checks: a suppression for a rule that is not selected may still be needed
            return registry.is_known(selector) and bool(supp.resolve(selector) & codes)

        for d, unused in supp.unused(judged):
            findings.append(_unused_finding(ctx, meta, d, unused, lines))
    findings.sort(key=lambda f: f.sort_key)
    return _dedupe(findings)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    out = []
    for f in findings:
        key = (f.code, f.location, f.end_location, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _source_lines(lines: LineIndex, start: int, end: int) -> str:
    end = min(end, start + 4)
    return "\n".join(lines.line(r) for r in range(start, end + 1))


def _build_fix(ctx: FileContext, rep: Report, positions: Positions, lines: LineIndex) -> Optional[Fix]:
    edits: list[Edit] = []
    for e in rep.edits:
        edit = _node_edit(ctx, e, positions, lines)
        if edit is None:
            return None
        if edit.start == edit.end and not edit.content:
            continue
        edits.append(edit)
    if not edits:
        return None
    edits.sort(key=lambda x: (x.start, x.end))
    for a, b in zip(edits, edits[1:]):
        if b.start < a.end:
            return None  # a rule produced overlapping edits: offer no fix rather than a wrong one
    return Fix(rep.applicability or Applicability.DISPLAY, rep.fix_message or "Apply the suggested fix", tuple(edits))


def _edit(lines: LineIndex, start: int, end: int, content: str) -> Edit:
    sr, sc = lines.position(start)
    er, ec = lines.position(end)
    return Edit(content, Position(sr, sc + 1), Position(er, ec + 1), start, end)


def _reindent(code: str, indent: str) -> str:
    first, *rest = code.split("\n")
    return "\n".join([first] + [indent + r if r.strip() else r for r in rest])


def _node_edit(ctx: FileContext, e: NodeEdit, positions: Positions, lines: LineIndex) -> Optional[Edit]:
    text = ctx.text
    if e.mode == "replace" and e.node is not None:
        rng = positions.inclusive(e.target)
        if rng is None:
            return None
        s = lines.offset(rng.start.line, rng.start.column)
        t = lines.offset(rng.end.line, rng.end.column)
        old = ctx.module.code_for_node(e.target)
        new = ctx.module.code_for_node(e.node)
        # inside an indented block, code_for_node leaves out the block's indentation on continuation lines (of the
        # target and of a multi-line replacement); put it back when that reproduces the file's text
        stmt = ctx.sem.index.statement_of(e.target)
        stmt_rng = positions.syntactic(stmt) if stmt is not None else None
        row = stmt_rng.start.line if stmt_rng is not None else rng.start.line
        line = lines.line(row)
        indent = line[: len(line) - len(line.lstrip())]
        if indent and text[s:t] == _reindent(old, indent):
            old, new = _reindent(old, indent), _reindent(new, indent)
        elif text[s:t] != old:
            return None
        p, q = common_affixes(old, new)  # the minimal edit
        return _edit(lines, s + p, t - q, new[p: len(new) - q])
    if e.mode == "delete":
        rng = positions.inclusive(e.target)
        if rng is None:
            return None
        s = lines.offset(rng.start.line, rng.start.column)
        t = lines.offset(rng.end.line, rng.end.column)
        return _edit(lines, s, t, "")
    rng = positions.syntactic(e.target)
    if rng is None:
        return None
    s = lines.offset(rng.start.line, rng.start.column)
    t = lines.offset(rng.end.line, rng.end.column)
    content = e.text if e.text is not None else (ctx.module.code_for_node(e.node) if e.node is not None else "")
    if e.mode == "replace":
        return _edit(lines, s, t, content)
    if e.mode == "insert_before":
        return _edit(lines, s, s, content)
    if e.mode == "insert_after":
        return _edit(lines, t, t, content)
    raise ValueError(f"unknown edit mode {e.mode!r}")


def _unused_finding(ctx: FileContext, meta: RuleMeta, d: Directive, unused: list[str], lines: LineIndex) -> Finding:
    row = d.row
    line = lines.line(row)
    start = lines.offset(row, d.column)
    end = lines.offset(row, d.end_column)
    remaining = remove_codes(d.text, unused)
    if remaining:
        edit = _edit(lines, start, end, remaining)
    elif d.own_line:
        line_start = lines.offset(row, 0)
        next_start = lines.starts[row] if row < len(lines.starts) else len(ctx.text)
        edit = _edit(lines, line_start, next_start, "")
    else:
        code_end = len(line[: d.column].rstrip())
        edit = _edit(lines, lines.offset(row, code_end), end, "")
    what = ", ".join(unused)
    return Finding(
        code=meta.code,
        name=meta.name,
        message=f"Unused suppression of {what}: nothing here is reported by {'it' if len(unused) == 1 else 'them'}",
        filename=ctx.path,
        location=Position(row, d.column + 1),
        end_location=Position(row, d.end_column + 1),
        fix=Fix(Applicability.SAFE, f"Remove unused suppression of {what}", (edit,)),
        source_line=line,
    )


# -- fixing ------------------------------------------------------------------------------------------------
@dataclass
class FixResult:
    text: str
    findings: list[Finding]  # what remains after fixing
    applied: int = 0
    applied_by_code: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)  # refused fixes, non-convergence
    errors: list[str] = field(default_factory=list)
    syntax_error: Optional[Finding] = None  # the original text could not be analysed (nothing was fixed)


def applicable(f: Finding, settings: Settings) -> bool:
    if f.fix is None or f.code not in settings.fixable:
        return False
    if f.fix.applicability is Applicability.SAFE:
        return True
    return f.fix.applicability is Applicability.UNSAFE and settings.unsafe_fixes


def apply_edits(text: str, edits: list[Edit]) -> str:
    out = []
    pos = 0
    for e in sorted(edits, key=lambda x: (x.start, x.end)):
        out.append(text[pos: e.start])
        out.append(e.content)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def _select_non_overlapping(fixes: list[Finding]) -> list[Finding]:
    chosen: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for f in sorted(fixes, key=lambda f: (f.fix.edits[0].start, f.code)):
        spans = [(e.start, e.end) for e in f.fix.edits]
        clash = False
        for s, t in spans:
            for a, b in taken:
                if s < b and a < t or (s == t == a == b):
                    clash = True
                    break
                if s == t and a < s < b:
                    clash = True
                    break
            if clash:
                break
        if not clash:
            chosen.append(f)
            taken.extend(spans)
    return chosen


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
        return True
    except Exception:
        return False


def fix_text(text: str, path: str, settings: Settings) -> FixResult:
    result = FixResult(text, [])
    refused: set[tuple[str, int, int]] = set()
    for pass_no in range(MAX_PASSES):
        checked = check_text(text, path, settings)
        result.errors = checked.errors
        if pass_no == 0:
            result.syntax_error = checked.syntax_error
        candidates = [
            f for f in checked.findings
            if applicable(f, settings) and (f.code, f.location.row, f.location.column) not in refused
        ]
        if not candidates:
            result.findings = checked.findings
            break
        chosen = _select_non_overlapping(candidates)
        new_text = apply_edits(text, [e for f in chosen for e in f.fix.edits])
        if not _parses(new_text):
            # find the culprits one by one; keep the others
            good: list[Finding] = []
            for f in chosen:
                trial = apply_edits(text, [e for g in good + [f] for e in g.fix.edits])
                if _parses(trial):
                    good.append(f)
                else:
                    refused.add((f.code, f.location.row, f.location.column))
                    result.messages.append(
                        f"{path}:{f.location.row}:{f.location.column}: {f.code} fix refused: it would make the file unparseable"
                    )
            chosen = good
            new_text = apply_edits(text, [e for f in chosen for e in f.fix.edits])
        if new_text == text:
            result.findings = checked.findings
            break
        for f in chosen:
            result.applied += 1
            result.applied_by_code[f.code] = result.applied_by_code.get(f.code, 0) + 1
        text = new_text
    else:
        checked = check_text(text, path, settings)
        result.findings = checked.findings
        if any(applicable(f, settings) for f in checked.findings):
            result.messages.append(f"{path}: fixes did not converge after {MAX_PASSES} passes; the file is left as the last pass wrote it")
    result.text = text
    return result
