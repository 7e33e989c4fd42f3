"""File-level localization: recall@1/5/10 of our retrieval against plain BM25 over file contents.

    .venv/bin/python bench/localize.py [--checkouts bench/data] [--tasks FILE.jsonl] [--repo sympy/sympy]
    .venv/bin/python bench/localize.py prepare --sympy-git DIR --django-sdists DIR [--checkouts bench/data]
    .venv/bin/python bench/localize.py --smoke   # two tasks on a checkout of this repository's bot/context

Tasks are JSONL rows (instance_id, repo, base_commit, problem_statement, patch_files). Each task is
answered from a checkout already on disk; nothing is downloaded at run time:
  - sympy/sympy: CHECKOUTS/sympy/<base_commit>/ (`prepare` writes them with `git archive` from a
    local clone or mirror),
  - django/django: CHECKOUTS/django/Django-<X.Y>/, the PyPI source release nearest the task's date
    (estimated from its pull-request number; approximate, so django is reported separately).
Test files are excluded from both rankings (gold patches never touch them). A task counts as a hit
at k when every gold file is among the first k files (Agentless/LocAgent Acc@k).

Tasks fall in two halves by a hash of their instance_id: weights may be tuned on the tuning half
only; the held-out half shows whether a change generalises. Figures are given for both and the whole.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from common import add_smoke, machine_load

from bot.context.base import Query
from bot.context.bm25 import bm25_scores
from bot.context.provider import RepoContext
from bot.context.subjects import is_test_path

ROOT = Path(__file__).resolve().parent.parent

KS = (1, 5, 10)
TASKS = Path("/work/shared/fixtures/localization/dev.jsonl")
# Django releases and the pull-request number GitHub had reached around each release date
# (interpolated from PR numbers' dates; good to a few weeks).
DJANGO_RELEASES = [
    ("2.2", 11200),
    ("3.0", 12200),
    ("3.1", 13300),
    ("3.2", 14250),
    ("4.0", 15200),
    ("4.1", 16000),
    ("4.2", 16750),
    ("5.0", 17550),
]
_WORD = re.compile(r"\w+")


def split(instance_id: str) -> str:
    """The task's half: "tuning" or "held-out", fixed by its id (about half each)."""
    return "tuning" if hashlib.sha1(instance_id.encode()).digest()[0] % 2 == 0 else "held-out"


def django_release(instance_id: str) -> str:
    number = int(instance_id.rsplit("-", 1)[1])
    return min(DJANGO_RELEASES, key=lambda release: abs(release[1] - number))[0]


def checkout_for(task: dict, checkouts: Path) -> Path:
    if task["repo"] == "django/django":
        return checkouts / "django" / f"Django-{django_release(task['instance_id'])}"
    return checkouts / task["repo"].split("/")[1] / task["base_commit"]


def hits(ranked: list[str], gold: list[str]) -> dict[int, bool]:
    return {k: all(g in ranked[:k] for g in gold) for k in KS}


class Baseline:
    """Plain BM25 over whole file contents (lower-cased \\w+ tokens), one checkout at a time."""

    def __init__(self) -> None:
        self._root: Path | None = None

    def rank(self, root: Path, text: str) -> list[str]:
        if root != self._root:
            self._load(root)
        query = dict(Counter(_WORD.findall(text.lower())))
        scores = bm25_scores(query, lambda t: self._postings.get(t, {}), self._lengths, len(self._paths), self._total)
        return [self._paths[i] for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], self._paths[kv[0]]))]

    def _load(self, root: Path) -> None:
        self._root = root
        self._paths: list[str] = []
        self._lengths: list[int] = []
        self._postings: dict[str, dict[int, int]] = defaultdict(dict)
        for file in sorted(root.rglob("*.py")):
            rel = file.relative_to(root).as_posix()
            if is_test_path(rel):
                continue
            counts = Counter(_WORD.findall(file.read_text(errors="replace").lower()))
            doc = len(self._paths)
            self._paths.append(rel)
            self._lengths.append(sum(counts.values()))
            for term, count in counts.items():
                self._postings[term][doc] = count
        self._total = sum(self._lengths)


def evaluate(tasks: list[dict], checkouts: Path, cache: Path) -> dict:
    baseline = Baseline()
    results: dict[str, dict] = {}
    contexts: dict[Path, RepoContext] = {}
    by_root = sorted(tasks, key=lambda t: str(checkout_for(t, checkouts)))
    began = time.perf_counter()
    for n, task in enumerate(by_root, 1):
        root = checkout_for(task, checkouts)
        if not root.is_dir():
            print(f"missing checkout {root} for {task['instance_id']}; run `prepare` first", file=sys.stderr)
            continue
        if root not in contexts:
            for context in contexts.values():
                context.close()
            # One cache per repository: checkouts share most blobs, so each new one parses only what differs.
            contexts = {root: RepoContext(root, cache / task["repo"].replace("/", "+"))}
        context = contexts[root]
        ranked = [
            r
            for r in context.rank(Query(text=task["problem_statement"]))
            if not is_test_path(str(context.index.files.paths[r.fid]))
        ]
        ours = [str(context.index.files.paths[r.fid]) for r in ranked]
        theirs = baseline.rank(root, task["problem_statement"])
        gold = task["patch_files"]
        results[task["instance_id"]] = {
            "repo": task["repo"],
            "split": split(task["instance_id"]),
            "ours": hits(ours, gold),
            "baseline": hits(theirs, gold),
            "gold_present": all((root / g).is_file() for g in gold),
            "gold": gold,
            # Each signal of the best candidates, to study the ranking without re-running it.
            "signals": {
                str(context.index.files.paths[r.fid]): (r.lexical, r.direct, r.graph, r.certain, r.subject)
                for r in ranked[:300]
            },
        }
        if n % 10 == 0:
            print(f"  {n}/{len(tasks)} tasks, {time.perf_counter() - began:.0f} s", file=sys.stderr)
    for context in contexts.values():
        context.close()
    return results


def summarise(results: dict) -> list[str]:
    lines = [
        "| repository | tasks | gold file in checkout | method | recall@1 | recall@5 | recall@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for repo in sorted({r["repo"] for r in results.values()}):
        for part in ("tuning", "held-out", "all"):
            rows = [r for r in results.values() if r["repo"] == repo and part in ("all", r["split"])]
            if not rows:
                continue
            present = sum(r["gold_present"] for r in rows)
            for method in ("ours", "baseline"):
                cells = [f"{100 * sum(r[method][k] for r in rows) / len(rows):.1f} %" for k in KS]
                lines.append(f"| {repo} ({part}) | {len(rows)} | {present} | {method} | " + " | ".join(cells) + " |")
    return lines


def prepare(args: argparse.Namespace) -> int:
    """Lay out checkouts from local sources only: a sympy git directory and Django sdist tarballs."""
    tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    for commit in sorted({t["base_commit"] for t in tasks if t["repo"] == "sympy/sympy"}):
        target = args.checkouts / "sympy" / commit
        if target.is_dir() or args.sympy_git is None:
            continue
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", f"--git-dir={args.sympy_git}", "archive", commit, "--", "*.py"], capture_output=True, check=True
        )
        subprocess.run(["tar", "x", "-C", str(target)], input=archive.stdout, check=True)
        print(f"sympy {commit[:12]}", file=sys.stderr)
    for release in sorted({django_release(t["instance_id"]) for t in tasks if t["repo"] == "django/django"}):
        target = args.checkouts / "django"
        sdist = args.django_sdists / f"Django-{release}.tar.gz" if args.django_sdists else None
        if (target / f"Django-{release}").is_dir() or sdist is None:
            continue
        if not sdist.is_file():
            print(f"missing {sdist}: pip download --no-deps --no-binary :all: django=={release}", file=sys.stderr)
            continue
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as tar:
            tar.extractall(target, filter="data")
        print(f"django {release}", file=sys.stderr)
    return 0


SMOKE_TASKS = [
    {
        "instance_id": "smoke__smoke-1",
        "repo": "smoke/context",
        "base_commit": "smoke",
        "problem_statement": "PackedMap.flat() drops the keys whose maps were edited in the overlay",
        "patch_files": ["packed.py"],
    },
    {
        "instance_id": "smoke__smoke-2",
        "repo": "smoke/context",
        "base_commit": "smoke",
        "problem_statement": "bm25_scores gives a negative score when a term is in every document",
        "patch_files": ["bm25.py"],
    },
]
"""--smoke's tasks, answered from a checkout of this repository's own `bot/context` (`smoke_checkouts`)."""


def smoke_checkouts(root: Path) -> Path:
    """CHECKOUTS/context/smoke/: this repository's `bot/context` modules, for SMOKE_TASKS."""
    target = root / "context" / "smoke"
    target.mkdir(parents=True)
    for module in (ROOT / "bot" / "context").glob("*.py"):
        shutil.copyfile(module, target / module.name)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkouts", type=Path, default=ROOT / "bench" / "data")
    parser.add_argument("--tasks", type=Path, default=TASKS)
    parser.add_argument("--repo", help="only tasks of this repository, e.g. sympy/sympy")
    parser.add_argument("--limit", type=int, help="only the first N tasks (quick runs)")
    parser.add_argument("--out", type=Path, help="write per-task results as JSON here")
    parser.add_argument("--sympy-git", type=Path, help="prepare: a local sympy git directory")
    parser.add_argument("--django-sdists", type=Path, help="prepare: folder of Django-X.Y.tar.gz")
    parser.add_argument("command", nargs="?", choices=["run", "prepare"], default="run")
    add_smoke(parser, "two tasks on a checkout of this repository's bot/context")
    args = parser.parse_args()
    if args.command == "prepare":
        return prepare(args)
    print(machine_load())
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="ai-fix-bench-") as tmp:
            checkouts = smoke_checkouts(Path(tmp))
            results = evaluate(SMOKE_TASKS, checkouts, checkouts / ".context-cache")
    else:
        tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
        tasks = [t for t in tasks if args.repo in (None, t["repo"])][: args.limit]
        results = evaluate(tasks, args.checkouts, args.checkouts / ".context-cache")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(summarise(results)))
    print(f"at the end: {machine_load()}")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
