"""The real-code ledger: run tflint on public TensorFlow repositories at the judged commits and score it against
the verdicts recorded here.

    python bench/ledger/score.py CORPUS                 # precision, recall, and the findings not judged yet
    python bench/ledger/score.py CORPUS --repo owner/name --unjudged out.jsonl   # one repository; dump unjudged
    python bench/ledger/score.py CORPUS --findings DIR  # also save each repository's raw findings (JSON)

CORPUS is a folder holding one exported snapshot per repository, named `owner+name` (the `fetch` tool brings a
bare git directory; export it with `git --git-dir=DIR archive COMMIT | tar -x -C CORPUS/owner+name`). Corpora are
never committed. Each judged repository has a folder here, `bench/ledger/owner+name/`, with `repo.toml` (`name`,
`commit`, `kind`, what the project pins, the tflint commit of its first score and that score), `verdicts.jsonl`
(one judged finding per line: repo, path, cell, row, code, verdict, reason, message) and `misses.jsonl` (problems the
catalog covers found by reading files by hand: repo, path, cell, row, code, reason), for recall.

A finding is matched to a verdict by (repository, path, cell, row, code). Verdicts: `true` (right, worth acting
on), `not-worth` (right by the letter, not worth a user's time), `false` (wrong). Precision = true / (true +
false); the not-worth share is reported beside it (`strict precision` counts not-worth against precision).
Recall = hand-found problems that tflint reports / all hand-found problems.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VERDICTS = ("true", "not-worth", "false")


def load_repos(base: Path = HERE) -> list[dict]:
    repos = []
    for path in sorted(base.glob("*/repo.toml")):
        with open(path, "rb") as fh:
            repo = tomllib.load(fh)
        repo["folder"] = path.parent
        repos.append(repo)
    return repos


def load_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{n}: not JSON: {exc}") from None
    return out


def key(repo: str, path: str, cell, row: int, code: str) -> tuple:
    return (repo, path, cell, int(row), code)


def run_tflint(tree: Path, extra: list[str]) -> list[dict]:
    """Default rules, no cache, JSON; paths relative to the repository's root."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run(
        [sys.executable, "-m", "tflint", "check", "--no-cache", "--exit-zero", "--output-format", "json", *extra, "."],
        cwd=tree, capture_output=True, text=True, env=env,
    )
    if p.returncode not in (0, 1):
        raise SystemExit(f"tflint failed in {tree} (exit {p.returncode}):\n{p.stderr[-2000:]}")
    internal = [ln for ln in p.stderr.splitlines() if "internal error" in ln]
    if internal:
        print(f"warning: {tree.name}: {len(internal)} internal errors", file=sys.stderr)
    findings = json.loads(p.stdout or "[]")
    for f in findings:
        f["filename"] = os.path.relpath(os.path.join(tree, f["filename"]), tree)
    return findings


def score(findings_by_repo: dict[str, list[dict]], verdicts: list[dict], misses: list[dict]) -> dict:
    judged = {key(v["repo"], v["path"], v.get("cell"), v["row"], v["code"]): v for v in verdicts}
    per_repo: dict[str, Counter] = defaultdict(Counter)
    per_rule: dict[str, Counter] = defaultdict(Counter)
    unjudged: list[dict] = []
    reported = set()
    for repo, findings in findings_by_repo.items():
        for f in findings:
            k = key(repo, f["filename"], f.get("cell"), f["location"]["row"], f["code"])
            reported.add(k)
            v = judged.get(k)
            if v is None:
                per_repo[repo]["unjudged"] += 1
                unjudged.append({"repo": repo, "path": f["filename"], "cell": f.get("cell"),
                                 "row": f["location"]["row"], "code": f["code"], "message": f["message"]})
                continue
            per_repo[repo][v["verdict"]] += 1
            per_rule[f["code"]][v["verdict"]] += 1
    found_misses = Counter()
    for m in misses:
        if m["repo"] not in findings_by_repo:
            continue
        hit = key(m["repo"], m["path"], m.get("cell"), m["row"], m["code"]) in reported
        found_misses["reported" if hit else "missed"] += 1
    return {"per_repo": per_repo, "per_rule": per_rule, "unjudged": unjudged, "recall": found_misses}


def precision(c: Counter) -> str:
    t, f, n = c["true"], c["false"], c["not-worth"]
    if t + f == 0:
        return "-"
    strict = t / (t + f + n) if t + f + n else 0.0
    return f"{t / (t + f):.2f} (strict {strict:.2f}, not-worth {n / (t + f + n):.0%})"


def report(result: dict) -> str:
    lines = ["| repository | true | not-worth | false | unjudged | precision |", "|---|---|---|---|---|---|"]
    total = Counter()
    for repo, c in sorted(result["per_repo"].items()):
        total.update(c)
        lines.append(f"| {repo} | {c['true']} | {c['not-worth']} | {c['false']} | {c['unjudged']} | {precision(c)} |")
    lines.append(f"| **all** | {total['true']} | {total['not-worth']} | {total['false']} | {total['unjudged']} "
                 f"| {precision(total)} |")
    lines += ["", "| rule | true | not-worth | false | precision |", "|---|---|---|---|---|"]
    for code, c in sorted(result["per_rule"].items()):
        lines.append(f"| {code} | {c['true']} | {c['not-worth']} | {c['false']} | {precision(c)} |")
    r = result["recall"]
    n = r["reported"] + r["missed"]
    lines += ["", f"recall: {r['reported']}/{n} hand-found problems reported" + (f" = {r['reported'] / n:.2f}" if n else "")]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--repo", action="append", default=[], help="only these repositories (owner/name)")
    ap.add_argument("--unjudged", type=Path, help="write the findings not judged yet here (JSON lines)")
    ap.add_argument("--findings", type=Path, help="save each repository's raw findings in this folder")
    ap.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = ap.parse_args(argv)
    repos = [r for r in load_repos() if not args.repo or r["name"] in args.repo]
    findings: dict[str, list[dict]] = {}
    for r in repos:
        tree = args.corpus / r["name"].replace("/", "+")
        if not tree.is_dir():
            print(f"skipped {r['name']}: {tree} not found (fetch it and export commit {r['commit']})", file=sys.stderr)
            continue
        findings[r["name"]] = run_tflint(tree, r.get("args", []))
        if args.findings:
            args.findings.mkdir(parents=True, exist_ok=True)
            (args.findings / f"{r['name'].replace('/', '+')}.json").write_text(json.dumps(findings[r["name"]], indent=1))
    verdicts = [v for r in repos for v in load_jsonl(r["folder"] / "verdicts.jsonl")]
    misses = [m for r in repos for m in load_jsonl(r["folder"] / "misses.jsonl")]
    result = score(findings, verdicts, misses)
    if args.unjudged:
        args.unjudged.write_text("".join(json.dumps(u) + "\n" for u in result["unjudged"]))
    if args.json:
        print(json.dumps({"per_repo": result["per_repo"], "per_rule": result["per_rule"], "recall": result["recall"],
                          "unjudged": len(result["unjudged"])}, indent=1))
    else:
        print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
