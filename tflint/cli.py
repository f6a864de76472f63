"""Argument parsing and printing only; the analysis lives in api/engine.

Exit codes: 0 nothing found (or everything fixed); 1 findings remain; 2 usage, config or internal error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _positive_int(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return n


def build_parser() -> argparse.ArgumentParser:
    from .config import MIN_IMPACTS
    from .render import FORMATS

    parser = argparse.ArgumentParser(
        prog="tflint", description="Find (and fix) TensorFlow performance problems in Python source."
    )
    parser.add_argument("--version", action="version", version=f"tflint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("check", help="check files, folders, notebooks or stdin")
    c.add_argument("paths", nargs="*", default=None, help='files or folders (default: "."); "-" reads stdin')
    c.add_argument("--fix", action="store_true", help="apply safe fixes")
    c.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply (and show) unsafe fixes")
    c.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false",
                   help="neither show nor apply unsafe fixes, whatever `unsafe-fixes` says in the configuration")
    c.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    c.add_argument("--select", type=_codes, default=None, help="rules to enable: codes, names, prefixes, ALL")
    c.add_argument("--ignore", type=_codes, action="extend", default=[], help="rules to disable")
    c.add_argument("--extend-select", type=_codes, action="extend", default=[], help="rules to enable on top")
    c.add_argument("--output-format", choices=FORMATS, default=None, help="default: full on a terminal, else concise")
    c.add_argument("--statistics", action="store_true", help="count findings per rule")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    c.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    c.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: CPU count)")
    c.add_argument("--config", type=Path, default=None, help="a TOML file with [tool.tflint] keys at top level")
    c.add_argument("--target-version", default=None, help="TensorFlow version to target, e.g. 2.21")
    c.add_argument("--stdin-filename", default=None, help="the name of the file read from stdin")
    c.add_argument("--rules-dir", action="append", type=Path, default=[], help="an extra folder of YAML rules")
    c.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to every line with a finding")
    c.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
    c.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    c.add_argument("--verbose", "-v", action="store_true", help="also say how many files were checked and excluded")
    c.add_argument("--min-impact", choices=MIN_IMPACTS, default=None,
                   help="report only rules of this impact or more (correctness findings are always reported)")
    c.add_argument("--force-exclude", action="store_true",
                   help="apply `exclude` (and .gitignore) even to paths named on the command line (as Ruff)")

    r = sub.add_parser("rule", help="print a rule's documentation")
    r.add_argument("rule", help="a code (TFL101) or a name (map-without-parallel-calls)")
    r.add_argument("--json", action="store_true")

    rs = sub.add_parser("rules", help="list every rule")
    rs.add_argument("--json", action="store_true")
    for p in (r, rs):  # user rule packs: those of the configuration, and more on the command line
        p.add_argument("--rules-dir", action="append", type=Path, default=[], help="an extra folder of YAML rules")
        p.add_argument("--config", type=Path, default=None, help="a TOML file with [tool.tflint] keys at top level")

    i = sub.add_parser("inspect", help="trace a tf.function or tf.data pipeline and inspect its graph")
    i.add_argument("target", help="FILE::FACTORY")
    i.add_argument("--json", action="store_true")
    i.add_argument("--graph", type=Path, default=None, help="write the graph as .dot, .svg or .graphml")
    i.add_argument("--timeout", type=float, default=300.0, help="seconds the user code may take")
    i.add_argument("--config", type=Path, default=None, help="a TOML file with [tool.tflint] keys at top level")

    v = sub.add_parser("verify", help="benchmark tflint's fixes against the original code")
    v.add_argument("target", help="FILE::FACTORY, or a folder of bench pairs")
    v.add_argument("--rule", type=_codes, action="extend", default=[], help="rules whose fixes to verify")
    v.add_argument("--json", action="store_true")
    v.add_argument("--timeout", type=float, default=300.0, help="seconds each child process may take")
    v.add_argument("--config", type=Path, default=None, help="a TOML file with [tool.tflint] keys at top level")
    v.add_argument("--budget", type=float, default=None, help="seconds of benchmarking per pair")
    v.add_argument("--pairs", type=_positive_int, default=None,
                   help="take exactly N A/B pairs per measurement, whatever the budget (reproducible runs, tests)")

    rn = sub.add_parser("run", help="run a script (as `python SCRIPT ARGS`) and report what TensorFlow did",
                        usage="tflint run [options] SCRIPT [ARGS...]")
    rn.add_argument("--steps", type=_positive_int, default=None,
                    help="stop after N calls of the most-called tf.function (e.g. the train step)")
    rn.add_argument("--seconds", type=float, default=None, help="stop the script after S seconds and report")
    rn.add_argument("--timeout", type=float, default=3600.0,
                    help="kill the script after this many seconds (no report; default 3600)")
    rn.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    rn.add_argument("--output-format", choices=FORMATS, default=None,
                    help="full (default) or concise on stderr; json, sarif, github on stdout")
    rn.add_argument("--config", type=Path, default=None, help="a TOML file with [tool.tflint] keys at top level")
    rn.add_argument("script", help="the Python script to run")
    rn.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")

    sub.add_parser("server", help="run the language server on stdio")

    t = sub.add_parser("test-rules", help="run the examples embedded in a folder of YAML rules")
    t.add_argument("dir", type=Path)
    return parser


def _safe_streams() -> None:
    """A terminal whose encoding cannot show a character (an ASCII locale, a legacy Windows console) gets an escape
    for it, never a UnicodeEncodeError traceback."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    _safe_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command in (None, "check"):
            if args.command is None:
                args = parser.parse_args(["check", *(argv if argv is not None else sys.argv[1:])])
            return cmd_check(args)
        if args.command == "rule":
            return cmd_rule(args)
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "inspect":
            from .runtime.commands import cmd_inspect

            return cmd_inspect(args)
        if args.command == "verify":
            from .runtime.commands import cmd_verify

            return cmd_verify(args)
        if args.command == "run":
            from .runtime.commands import cmd_run

            return cmd_run(args)
        if args.command == "server":
            from .server import main as server_main

            return server_main()
        if args.command == "test-rules":
            from .packs import cmd_test_rules

            return cmd_test_rules(args)
    except KeyboardInterrupt:
        print("tflint: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    parser.error(f"unknown command {args.command}")
    return EXIT_ERROR


# the commands that may leave work to the interpreter's exit (threads, child processes, temporary folders cleaned
# up by finalizers); after any other (`check`, the default) the `tflint` command ends at once
_OTHER_COMMANDS = frozenset({"rule", "rules", "inspect", "verify", "run", "server", "test-rules"})


def entry() -> None:
    """The `tflint` command (console script and `python -m tflint`). After a check, the process ends without freeing
    its objects one by one (every parse tree, module and rule class): the interpreter's teardown was about a tenth of a
    one-file run's CPU time. The output is flushed first, as mypy's `hard_exit` does; `main()` itself (tests, the
    library) returns normally."""
    argv = sys.argv[1:]
    code = main(argv)
    if argv and argv[0] in _OTHER_COMMANDS:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`tflint ... | head`): nothing more can be written
            code = code or EXIT_ERROR
    os._exit(code)


def _error(msg: str) -> int:
    print(f"tflint: error: {msg}", file=sys.stderr)
    return EXIT_ERROR


def load_project(args, start: Optional[Path] = None):
    """The project of a command: `--config`, `--rules-dir` and `--target-version` over the nearest configuration.
    Raises ConfigError/RegistryError."""
    from .project import Project

    return Project.load(args.config, start=start, rules_dirs=getattr(args, "rules_dir", []),
                        target_version=getattr(args, "target_version", None))


def load_settings(args):
    """The project and the selection of a `check` run; raises ConfigError/RegistryError."""
    paths = args.paths or ["."]
    start = None
    if args.stdin_filename:
        start = Path(args.stdin_filename).resolve().parent
    else:
        first = next((p for p in paths if p != "-"), None)
        if first is not None:
            start = Path(first)
    return load_project(args, start).settings(
        select=args.select,
        ignore=args.ignore,
        extend_select=args.extend_select,
        unsafe_fixes=args.unsafe_fixes,
        prefilter=not args.no_prefilter,
        min_impact=args.min_impact,
    )


def cmd_check(args) -> int:
    from .api import check_paths, process_stdin, run_files
    from .config import ConfigError
    from .engine import applicable
    from .findings import Applicability
    from .registry import RegistryError
    from .render import renderer
    from .render.text import statistics, summary, use_color

    try:
        settings = load_settings(args)
    except (ConfigError, RegistryError) as exc:
        return _error(str(exc))
    paths = args.paths or ["."]
    # a path that does not exist is an error (exit 2: a typo in CI must not pass); the other paths are checked
    missing = [p for p in paths if p != "-" and not os.path.lexists(p)]
    fix = args.fix or args.add_noqa
    diff = args.diff
    messages: list[str] = []
    n_excluded = 0
    if paths == ["-"]:
        data = sys.stdin.buffer.read()
        name = args.stdin_filename or "-"
        if args.add_noqa:
            from .noqa import add_noqa_stdin

            return add_noqa_stdin(data, name, settings)
        res = process_stdin(data, name, settings, fix=fix and not args.add_noqa, diff=diff)
        results = [res]
        if fix and not diff and not args.add_noqa:
            if res.new_text is not None:  # bytes in the input's own encoding (and BOM), whatever the terminal's
                from .source import decode

                _, encoding, bom = decode(data, name)
                sys.stdout.flush()
                sys.stdout.buffer.write((b"\xef\xbb\xbf" if bom else b"") + res.new_text.encode(encoding))
                sys.stdout.buffer.flush()
            else:  # nothing fixed: echo the input unchanged (an editor replaces its buffer with this output)
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
    else:
        if "-" in paths:
            return _error('"-" (stdin) cannot be mixed with other paths')
        jobs = args.jobs or os.cpu_count() or 1
        if args.add_noqa:
            from .noqa import add_noqa

            if missing:
                for p in missing:
                    print(f"tflint: error: {p}: no such file or directory", file=sys.stderr)
                return EXIT_ERROR
            return add_noqa(paths, settings)
        use_cache = not args.no_cache and not fix and not diff
        from . import progress as progress_display

        bars: list = []

        def progress(total: int):
            bars.append(progress_display.Progress(total).start())
            return bars[-1].advance

        human = args.output_format or ("full" if use_color(sys.stdout) else "concise")
        show = progress if progress_display.wanted(human, args.quiet) and not args.statistics else None
        try:
            if use_cache:
                try:
                    from .cache import cached_check_paths

                    run, messages = cached_check_paths(paths, settings, jobs=jobs, force_exclude=args.force_exclude,
                                                       progress=show)
                except ImportError:
                    run, messages = check_paths(paths, settings, jobs=jobs, force_exclude=args.force_exclude,
                                                progress=show)
            else:
                run, messages = check_paths(paths, settings, fix=fix, diff=diff, jobs=jobs,
                                            force_exclude=args.force_exclude, progress=show)
        finally:
            for bar in bars:
                bar.stop()
        results = run.files
        n_excluded = run.excluded
        if not results and not missing:
            # as Ruff: a warning, exit 0 (a pre-commit run whose staged files are all excluded is not an error);
            # a path that does not exist is an error (exit 2) above
            hint = "" if args.force_exclude or not n_excluded else f" ({n_excluded} excluded; --verbose for more)"
            messages.append(f"No Python files found under the given path(s){hint}")
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    errors = [f"{p}: no such file or directory" for p in missing] + [e for r in results for e in r.errors]
    messages += [m for r in results for m in r.messages]
    for m in messages:
        print(f"tflint: warning: {m}", file=sys.stderr)
    for e in errors:
        print(f"tflint: error: {e}", file=sys.stderr)
    if args.verbose and paths != ["-"]:
        print(f"tflint: checked {len(results)} file{'s' if len(results) != 1 else ''}, excluded {n_excluded} "
              f"path{'s' if n_excluded != 1 else ''} (`exclude`, `extend-exclude`, .gitignore)", file=sys.stderr)
    if diff:
        for r in results:
            if r.diff:
                sys.stdout.write(r.diff)
        n = sum(r.fixed for r in results)
        if n:
            print(f"Would fix {n} finding{'s' if n != 1 else ''}.", file=sys.stderr)
        return EXIT_ERROR if errors else (EXIT_FINDINGS if n and not args.exit_zero else EXIT_CLEAN)
    stdin_fix_mode = paths == ["-"] and fix
    out = sys.stderr if stdin_fix_mode else sys.stdout
    if not settings.unsafe_fixes:
        # unsafe fixes are shown only when enabled (as Ruff does); the finding stays
        findings = [f.with_changes(fix=None) if f.fix and f.fix.applicability is Applicability.UNSAFE else f for f in findings]
    fmt = args.output_format or ("full" if use_color(out) else "concise")
    if args.statistics:
        out.write(statistics(findings))
    else:
        out.write(renderer(fmt)(findings, color=use_color(out), registry=settings.registry))
    n_fixed = sum(r.fixed for r in results)
    if fmt in ("concise", "full") and not args.quiet and not args.statistics:
        fixable = sum(1 for f in findings if applicable(f, settings))
        hidden: dict[str, int] = {}
        if not settings.unsafe_fixes:
            for r in results:
                for f in r.findings:
                    if f.fix and f.fix.applicability is Applicability.UNSAFE:
                        hidden[f.code] = hidden.get(f.code, 0) + 1
        by_severity: dict[str, int] = {}
        for f in findings:
            sev = settings.registry.severity(f.code)
            by_severity[sev] = by_severity.get(sev, 0) + 1
        text = summary(len(findings), n_fixed, fixable, hidden, fix, by_severity) if results else ""
        if text:
            print(text, file=sys.stderr if fmt != "full" or stdin_fix_mode else out)
    if errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _doc_registry(args):
    """The registry `rule`/`rules` describe: the built-in rules plus the packs of the config and `--rules-dir`.
    Raises RegistryError (ConfigError is turned into one)."""
    from .config import ConfigError
    from .registry import RegistryError

    try:
        return load_project(args).registry
    except ConfigError as exc:
        raise RegistryError(str(exc)) from None


def cmd_rule(args) -> int:
    from .registry import RegistryError

    try:
        reg = _doc_registry(args)
    except RegistryError as exc:
        return _error(str(exc))
    meta = reg.get(args.rule)
    if meta is None:
        return _error(f"unknown rule code or name {args.rule!r}")
    if args.json:
        print(json.dumps(meta.to_json(), indent=2, ensure_ascii=False))
        return EXIT_CLEAN
    from .docs import format_rule_doc

    print(format_rule_doc(meta))
    return EXIT_CLEAN


def _impact_column(meta) -> str:
    """`high`, or `low<2.16,high` for a rule whose impact depends on the target (short: a column)."""
    if isinstance(meta.impact, str):
        return meta.impact
    return ",".join(f"{level}{op}{v[0]}.{v[1]}" if op == "<" else level for op, v, level in meta.impact)


def cmd_rules(args) -> int:
    from .registry import RegistryError

    try:
        reg = _doc_registry(args)
    except RegistryError as exc:
        return _error(str(exc))
    if args.json:
        print(json.dumps([m.to_json() for m in reg], indent=2, ensure_ascii=False))
        return EXIT_CLEAN
    rows = [(m.code, "on" if m.default else "off", m.severity, _impact_column(m), m.name,
             "runtime" if m.runtime else "/".join(m.fix), m.summary) for m in reg]
    header = ("code", "default", "severity", "impact", "name", "fix", "summary")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    return EXIT_CLEAN
