"""Real projects as they come: how many of the corpus's suites ai-fix's detected setup and baseline reproduce, and
what setup costs a repository's first job and its second.

    .venv/bin/python bench/corpus.py [--kind bwrap|podman] [--jobs 2] [NAME ...]
    .venv/bin/python bench/corpus.py --smoke          # idna alone on bwrap, as CI runs it

Each project (`tests/support/corpus.py`) is made a git repository afresh and prepared twice as two jobs of the same
repository would be, with a fresh work folder (no package cache to start with): on bwrap the second job runs setup
again with the repository's package caches; on podman (in the test image) it restores the first job's setup snapshot.
Prints a line per project (for one with a lock file, how many packages came from it, at the locked version, and older
than the newest), then the count of green suites and the median setup times, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from common import add_smoke  # noqa: E402

from bot.sandbox.engine import run_engine  # noqa: E402
from tests.support.corpus import CORPUS, Project, Reproduced, reproduce  # noqa: E402
from tests.support.locks import FromLock  # noqa: E402

SMOKE = "idna"
"""The smoke run's one project: small, pure Python, its suite quick."""


def two_jobs(project: Project, root: Path, kind: str) -> tuple[Reproduced, Reproduced]:
    work = root / "work"
    first = reproduce(project, root / "job-1", kind=kind, work=work)
    second = reproduce(project, root / "job-2", kind=kind, work=work)
    for done in (first, second):
        if kind == "podman" and done.setup.snapshot and done.setup.status == "ran":
            run_engine("podman", "rmi", "-f", done.setup.snapshot)
    return first, second


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="bwrap", choices=("bwrap", "podman"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("names", nargs="*")
    add_smoke(parser, SMOKE)
    args = parser.parse_args()
    if args.smoke:
        args.kind, args.names = "bwrap", [SMOKE]
    chosen = [p for p in CORPUS if (not args.names or p.name in args.names)]
    if args.kind == "podman":
        chosen = [p for p in chosen if p.ecosystem == "python"]  # the test image has the host's Python only
    began, load = time.monotonic(), os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda p: two_jobs(p, Path(tmp) / p.name, args.kind), chosen))
    for first, second in done:
        print(f"{first.line()} | second job: setup {second.setup.status} in {second.setup_s:.1f} s")
        if first.project.lock:
            got = FromLock.read(first.workspace, first.project.lock)
            wrong = sum(got.locked[name] != version for name, version in got.installed.items())
            print(
                f"  {first.project.lock}: {len(got.installed)} packages installed from it, {wrong} not at the locked "
                f"version, {len(got.older())} older than what pip resolves for the same requirements today"
            )
    green = sum(first.green and second.green for first, second in done)
    all_pass = sum(all(r.status == "pass" for r in first.baseline.results) for first, _ in done)
    firsts = [first.setup_s for first, _ in done]
    seconds = [second.setup_s for _, second in done]
    print(
        f"{args.kind}: {green} of {len(done)} suites green ({all_pass} with every detected check passing); "
        f"setup median {statistics.median(firsts):.1f} s first job, {statistics.median(seconds):.1f} s second job "
        f"({statistics.median(f / max(s, 0.01) for f, s in zip(firsts, seconds)):.1f}x); "
        f"{time.monotonic() - began:.0f} s in all; load average {load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
