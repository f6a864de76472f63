"""Pure entry points: check or fix a text, a file, or many paths.

    from tflint.api import check_source
    findings = check_source("import tensorflow as tf\\n...", "train.py")
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from .config import Config
from .document import SUFFIXES, Document, DocumentError, open_document
from .engine import CheckResult, FixResult, Settings, check_text, fix_text, syntax_error_finding
from .findings import Finding
from .source import SourceError, SourceFile, decode, read_source, write_atomic

PYTHON_SUFFIXES = SUFFIXES  # the files a folder walk picks up


def default_settings(config: Optional[Config] = None, **kwargs) -> Settings:
    """The settings of a run from Python: `config`'s rule packs loaded and validated as the CLI loads them
    (`kwargs`: select, ignore, extend_select, unsafe_fixes, prefilter)."""
    from .project import Project

    return Project.from_config(config or Config()).settings(**kwargs)


def check_source(text: str, path: str = "<stdin>", settings: Optional[Settings] = None) -> list[Finding]:
    """The findings of one file's text (Python, or a notebook's JSON when `path` ends in .ipynb)."""
    return check_file_text(text, path, settings or default_settings()).findings


def fix_source(text: str, path: str = "<stdin>", settings: Optional[Settings] = None) -> FixResult:
    settings = settings or default_settings()
    return fix_text(text, path, settings)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    fixed: int = 0
    fixed_by_code: dict[str, int] = field(default_factory=dict)
    diff: str = ""
    new_text: Optional[str] = None  # for stdin with --fix
    summary: Optional[dict] = None  # what other modules may ask of the file (first pass only)
    queries: dict[str, str] = field(default_factory=dict)  # what the file asked of the project


def check_file_text(text: str, path: str, settings: Settings) -> CheckResult:
    doc = open_document(text, path)
    if doc.lint_text is None:
        return CheckResult(doc.reported_own(settings))
    res = doc.analyse(lambda text: check_text(text, path, settings))
    return CheckResult(_with_own(doc, res.findings, settings), res.errors, summary=res.summary, queries=res.queries)


def _with_own(doc: Document, engine_findings: list[Finding], settings: Settings) -> list[Finding]:
    own = doc.reported_own(settings)
    mapped = doc.map_findings(engine_findings)
    return sorted([*own, *mapped], key=lambda f: f.sort_key) if own else mapped


def process_text(
    text: str, path: str, settings: Settings, fix: bool = False, diff: bool = False, source: Optional[SourceFile] = None,
    write_roots: Optional[tuple[str, ...]] = None,
) -> FileResult:
    """Check (and with `fix`, fix) one file's text. Writes the file when `fix` and not `diff` and `source`
    names a file on disk and, when `write_roots` is given, the file's real path (symlinks resolved) lies inside one
    of those real paths: a fix never writes outside the paths the user gave."""
    result = FileResult(path)
    if not fix and not diff:
        res = check_file_text(text, path, settings)
        result.findings, result.errors = res.findings, res.errors
        result.summary, result.queries = res.summary, res.queries
        return result
    doc = open_document(text, path)
    if doc.lint_text is None:
        result.findings = doc.reported_own(settings)
        return result
    fixed = doc.analyse(lambda text: fix_text(text, path, settings))
    result.errors = fixed.errors
    result.messages = fixed.messages
    result.fixed = fixed.applied
    result.fixed_by_code = fixed.applied_by_code
    result.findings = _with_own(doc, fixed.findings, settings)
    if fixed.text == doc.lint_text:
        return result
    try:
        new_text = doc.render(fixed.text)
    except DocumentError as exc:
        result.messages.append(f"{path}: {exc}")
        return _not_written(result, text, path, settings)
    if diff:
        import difflib  # only --diff shows one

        result.diff = "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True), new_text.splitlines(keepends=True), fromfile=path, tofile=path
            )
        )
        if result.diff and not result.diff.endswith("\n"):
            result.diff += "\n\\ No newline at end of file\n"
        return result
    result.new_text = new_text
    if source is not None and write_roots is not None and not _inside_roots(path, write_roots):
        result.messages.append(f"{path}: not fixed: it resolves (through a symlink) outside the paths given")
        return _not_written(result, text, path, settings)
    if source is not None and source.raw:
        try:
            write_atomic(path, source.encode(new_text), expected=source.raw)
        except (SourceError, OSError) as exc:
            result.messages.append(str(exc))
            return _not_written(result, text, path, settings)
    return result


def _not_written(result: FileResult, text: str, path: str, settings: Settings) -> FileResult:
    """The fix was computed but not written: nothing was fixed and the file's findings are those of its text."""
    result.fixed = 0
    result.fixed_by_code = {}
    result.new_text = None
    res = check_file_text(text, path, settings)
    result.findings = res.findings
    return result


def _inside_roots(path: str, roots: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def write_roots_for(paths: Iterable[str]) -> tuple[str, ...]:
    """The real paths fixes may write under: each path given, symlinks resolved (a named symlink to a file may be
    fixed; a symlink met while walking a folder may not lead the fix outside that folder)."""
    return tuple(os.path.realpath(p) for p in paths if p != "-")


def process_path(
    path: str, settings: Settings, fix: bool = False, diff: bool = False, write_roots: Optional[tuple[str, ...]] = None
) -> FileResult:
    try:
        src = read_source(path)
    except SourceError as exc:
        msg = str(exc)
        detail = msg[len(path) + 2:] if msg.startswith(path + ": ") else msg
        f = syntax_error_finding(path, f"Cannot check: {detail}", 1, 0)
        r = FileResult(path)
        if "TFL001" in settings.codes_for(path):
            r.findings = [f]
        else:
            r.messages = [msg]
        return r
    try:
        return process_text(src.text, path, settings, fix=fix, diff=diff, source=src, write_roots=write_roots)
    except RecursionError:
        f = syntax_error_finding(path, "Cannot check: too deeply nested", 1, 0)
        return FileResult(path, findings=[f])


def process_stdin(data: bytes, filename: str, settings: Settings, fix: bool, diff: bool) -> FileResult:
    try:
        text, _, _ = decode(data, filename)
    except SourceError as exc:
        return FileResult(filename, findings=[syntax_error_finding(filename, f"Cannot check: {exc}", 1, 0)])
    return process_text(text, filename, settings, fix=fix, diff=diff)


# -- discovery ------------------------------------------------------------------------------------------------
@dataclass
class Discovery:
    files: list[str]
    messages: list[str]
    excluded: int = 0  # paths (files or folders) an exclusion or a .gitignore kept out of the run
    missing: list[str] = field(default_factory=list)  # paths given that do not exist


def discover(paths: Iterable[str], config: Config) -> tuple[list[str], list[str]]:
    """(files to check, messages): see `discover_paths`."""
    found = discover_paths(paths, config)
    return found.files, found.messages + [f"{p}: no such file or directory" for p in found.missing]


def discover_paths(paths: Iterable[str], config: Config, force_exclude: bool = False) -> Discovery:
    """The files to check. Folders are walked respecting .gitignore files and `exclude`/`extend-exclude`. A path
    named explicitly is checked even when an exclusion covers it (a file, or a folder such as one under
    `site-packages`: its contents are then matched against the exclusions relative to it), unless
    `force_exclude`, as Ruff's `--force-exclude`. Symlinked folders are not followed (no loops)."""
    spec: list = []  # the exclusions, compiled on first need (a file named explicitly needs none: pathspec's import
    # is a measurable part of a one-file run)

    def exclusions():
        if not spec:
            import pathspec

            spec.append(pathspec.GitIgnoreSpec.from_lines([*config.exclude, *config.extend_exclude]))
        return spec[0]

    found = Discovery([], [])
    seen: set[str] = set()

    def add(p: str) -> None:
        key = os.path.normpath(p)
        if key not in seen:
            seen.add(key)
            found.files.append(p)

    def count_excluded() -> None:
        found.excluded += 1

    for raw in paths:
        p = Path(raw)
        if not (p.exists() or p.is_symlink()):
            found.missing.append(raw)
            continue
        is_dir = p.is_dir()
        if not is_dir and not p.is_file():
            found.messages.append(f"{raw}: not a regular file (a FIFO, socket or device); skipped")
            continue
        if (is_dir or force_exclude) and _excluded(p, is_dir, config.root, exclusions()):
            if force_exclude:
                found.excluded += 1
                continue
            if is_dir:  # named explicitly: the exclusions apply below it, relative to it
                _walk(p, p, exclusions(), add, count_excluded)
                continue
        if is_dir:
            _walk(p, config.root, exclusions(), add, count_excluded)
        else:
            add(raw)
    return found


def _excluded(path: Path, is_dir: bool, root: Path, exclude_spec) -> bool:
    """Whether a folder walk from the configuration's root would skip `path`: it, or a folder above it (below the
    root), matches `exclude` or a .gitignore on the way."""
    slash = "/" if is_dir else ""
    rel = _rel(path, root)
    if rel == ".":
        return False  # the configuration's own folder (a project inside ~/build/ is not excluded)
    absolute = Path(os.path.abspath(path))
    if exclude_spec.match_file(absolute.name + slash):
        return True
    # as Ruff's --force-exclude: a folder name such as `site-packages` anywhere above (below the root, if inside it)
    above = [d for d in absolute.parents if rel is None or _is_within(d, Path(os.path.abspath(root))) and d != Path(os.path.abspath(root))]
    if any(d.name and exclude_spec.match_file(d.name + "/") for d in above):
        return True
    if rel is None:
        return False
    if exclude_spec.match_file(rel + slash):
        return True
    try:
        resolved_root = root.resolve()
        chain = [d for d in reversed(path.resolve().parents) if _is_within(d, resolved_root)]
    except OSError:
        return False
    for d in chain:
        spec = _gitignore(d)
        if spec is None:
            continue
        below = _rel(path, d)
        if below is not None and spec.match_file(below + slash):
            return True  # `path` or a folder between `d` and it (a listed folder's pattern matches below it)
    return False


def _walk(top: Path, root: Path, exclude_spec, add, on_excluded=lambda: None) -> None:
    import pathspec

    ignore_stack: list[tuple[Path, "pathspec.PathSpec"]] = []
    # .gitignore files from the root down to `top` also apply (for a folder named under an exclusion, its own only)
    try:
        chain = [d for d in [*reversed(top.resolve().parents), top.resolve()] if _is_within(d, root.resolve())]
    except OSError:
        chain = []
    for d in chain:
        spec = _gitignore(d)
        if spec is not None:
            ignore_stack.append((d, spec))

    def ignored(path: Path, is_dir: bool) -> bool:
        rel_root = _rel(path, root)
        name = path.name
        if exclude_spec.match_file(name + ("/" if is_dir else "")) or (
            rel_root is not None and exclude_spec.match_file(rel_root + ("/" if is_dir else ""))
        ):
            return True
        for base, spec in ignore_stack:
            rel = _rel(path, base)
            if rel is not None and spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False

    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        d = Path(dirpath)
        # pop specs that no longer apply
        ignore_stack[:] = [(b, s) for b, s in ignore_stack if _is_within(d.resolve(), b)]
        spec = _gitignore(d)
        if spec is not None and all(b != d.resolve() for b, _ in ignore_stack):
            ignore_stack.append((d.resolve(), spec))
        kept = []
        for n in sorted(dirnames):
            if ignored(d / n, True):
                on_excluded()
            else:
                kept.append(n)
        dirnames[:] = kept
        for name in sorted(filenames):
            f = d / name
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            if ignored(f, False):
                on_excluded()
                continue
            if f.exists() and not f.is_file():
                continue  # a FIFO, socket or device named *.py: reading it could block forever
            add(str(f))


def _gitignore(d: Path):
    import pathspec

    gi = d / ".gitignore"
    if gi.is_file():
        try:
            return pathspec.GitIgnoreSpec.from_lines(gi.read_text(encoding="utf-8", errors="replace").splitlines())
        except Exception:
            return None
    return None


def _is_within(path: Path, base: Path) -> bool:
    try:
        path.relative_to(base)
        return True
    except ValueError:
        return False


def _rel(path: Path, base: Path) -> Optional[str]:
    a, b = os.path.abspath(path), os.path.abspath(base)
    if os.sep == "/":  # the common case as plain strings (abspath has normalised both): one call per file walked
        if a == b:
            return "."
        prefix = b if b.endswith("/") else b + "/"
        if a.startswith(prefix):
            return a[len(prefix):]
    try:
        return Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(base))).as_posix()
    except ValueError:
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except (ValueError, OSError):
            return None


@dataclass
class RunResult:
    files: list[FileResult]
    excluded: int = 0  # paths kept out by an exclusion (`--verbose` shows the count)
    missing: list[str] = field(default_factory=list)  # paths given that do not exist

    @property
    def findings(self) -> list[Finding]:
        return sorted((f for r in self.files for f in r.findings), key=lambda f: f.sort_key)

    @property
    def errors(self) -> list[str]:
        return [e for r in self.files for e in r.errors]


def check_paths(
    paths: Iterable[str], settings: Settings, fix: bool = False, diff: bool = False, jobs: int = 1,
    force_exclude: bool = False, progress=None,
) -> tuple[RunResult, list[str]]:
    """`progress`: called with the number of files to check, returns the callback `run_files` calls per file."""
    paths = list(paths)
    found = discover_paths(paths, settings.config, force_exclude=force_exclude)
    on_file = progress(len(found.files)) if progress else None
    results = run_files(found.files, settings, fix=fix, diff=diff, jobs=jobs,
                        write_roots=write_roots_for(paths) if fix else None, on_file=on_file)
    return RunResult(results, found.excluded, found.missing), found.messages


PARALLEL_THRESHOLD = 16  # below this many files a process pool costs more than it saves


def run_files(
    files: list[str], settings: Settings, fix: bool, diff: bool, jobs: int, write_roots: Optional[tuple[str, ...]] = None,
    on_file: Optional[Callable[[], None]] = None,
) -> list[FileResult]:
    """The results of `files`, in order; `on_file` is called as each file is done (a progress display).

    Files are analysed together: each is checked once with no facts about the others, then the project's facts
    are built from every file's summary and the files whose questions to other modules now have answers are checked
    again with them (`across_modules`). With `fix` or `diff`, the first pass only checks; files with something to
    fix are then fixed with the project's facts."""
    if settings.project is not None or len(files) < 2:
        return run_each(files, settings, fix, diff, jobs, write_roots, on_file)
    first = run_each(files, settings, False, False, jobs, None, on_file)
    return across_modules(first, settings, fix=fix, diff=diff, jobs=jobs, write_roots=write_roots)


def across_modules(
    first: list[FileResult], settings: Settings, fix: bool = False, diff: bool = False, jobs: int = 1,
    write_roots: Optional[tuple[str, ...]] = None,
) -> list[FileResult]:
    """`first` (results of a pass without project facts) with the files that need them analysed again: those
    whose questions to other modules have different answers in the project's facts, and with `fix`/`diff` those
    with something to fix."""
    from dataclasses import replace

    from .engine import applicable
    from .modules import ProjectFacts

    facts = ProjectFacts.build({r.path: r.summary for r in first})
    again = [
        i for i, r in enumerate(first)
        if (facts and r.queries and facts.changed(r.path, r.queries))
        or ((fix or diff) and any(applicable(f, settings) for f in r.findings))
    ]
    if not again:
        return first
    second = replace(settings, project=facts) if facts else settings
    redone = run_each([first[i].path for i in again], second, fix, diff, jobs, write_roots)
    out = list(first)
    for i, r in zip(again, redone):
        r.summary = first[i].summary
        out[i] = r
    return out


def run_each(
    files: list[str], settings: Settings, fix: bool, diff: bool, jobs: int, write_roots: Optional[tuple[str, ...]] = None,
    on_file: Optional[Callable[[], None]] = None,
) -> list[FileResult]:
    """The results of `files`, each analysed with the facts `settings` carries (none: one pass on its own)."""
    tick = on_file or (lambda: None)
    if jobs > 1 and len(files) >= PARALLEL_THRESHOLD:
        from concurrent.futures import ProcessPoolExecutor

        try:
            with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(settings,)) as pool:
                chunk = max(1, len(files) // (jobs * 8))
                out = []
                for res in pool.map(_worker, [(f, fix, diff, write_roots) for f in files], chunksize=chunk):
                    out.append(res)
                    tick()
                return out
        except (OSError, RuntimeError, ImportError):
            pass  # no process support here: fall back to one process
    out = []
    for f in files:
        out.append(process_path(f, settings, fix=fix, diff=diff, write_roots=write_roots))
        tick()
    return out


_WORKER_SETTINGS: Optional[Settings] = None


def _init_worker(settings: Settings) -> None:
    global _WORKER_SETTINGS
    _WORKER_SETTINGS = settings


def _worker(args) -> FileResult:
    path, fix, diff, write_roots = args
    assert _WORKER_SETTINGS is not None
    return process_path(path, _WORKER_SETTINGS, fix=fix, diff=diff, write_roots=write_roots)
