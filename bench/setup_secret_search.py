"""How long the search for setup secrets takes after a setup that was given some, on real environments.

    .venv/bin/python bench/setup_secret_search.py [--runs 5] [--folder PATH ...]
    .venv/bin/python bench/setup_secret_search.py --smoke   # 2 runs over 50 files written as if by setup

The project: structlog 24.4.0's source release (tests/support/pypi_project.py) with the environment its
detected setup makes, a venv in `.ai-fix-env` and `pip install -e '.[tests]'` from the local wheel
directory, made on the host once. Timed is what `prepare_environment` does after such a setup: the paths
created or changed since the stamps taken before it (`touched`), then the search of each of them for two
40-character secrets (`secret_files`). `--folder PATH`: the same over an existing folder, as if setup had
just made all of it (this checkout's own `.venv`, say). The first run reads the files from disk, the others
from the page cache; prints the first run and the median of the others.
"""

from __future__ import annotations

import argparse
import os
import secrets
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import add_smoke, machine_load

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from bot.checks.setup_leaks import SEARCHED_BYTES, Stamp, secret_files, stamps, touched  # noqa: E402
from bot.envdir import VENV  # noqa: E402
from tests.support.pypi_project import fetch, project_repo  # noqa: E402
from tests.support.repos import make_repo  # noqa: E402

SECRETS = {"INDEX_TOKEN": secrets.token_urlsafe(30), "NPM_TOKEN": secrets.token_hex(20)}


def project(root: Path, smoke: bool) -> tuple[Path, dict[str, Stamp]]:
    """The structlog repository with its environment made, and the stamps taken before it was (--smoke: a tiny
    repository and 50 small files in its environment folder)."""
    if smoke:
        repo = make_repo(root / "tiny", {"README.md": "bench/setup_secret_search.py --smoke\n"})
        before = stamps(repo)
        for n in range(50):
            (repo / VENV / f"lib{n % 5}").mkdir(parents=True, exist_ok=True)
            (repo / VENV / f"lib{n % 5}" / f"module_{n}.py").write_text(f"VALUE = {n}\n" * 200)
        return repo, before
    repo = project_repo(root)
    before = stamps(repo)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(fetch() / "wheels")}
    python = repo / VENV / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", str(repo / VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", ".[tests]"], cwd=repo, env=env, check=True)
    return repo, before


def measure(name: str, workspace: Path, before: dict[str, Stamp], runs: int) -> None:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        wrote = touched(workspace, before)
        found = secret_files(workspace, wrote, SECRETS)
        times.append(time.perf_counter() - began)
        assert not found, found
    files = [s for s in wrote.values() if stat.S_ISREG(s[0])]
    read = sum(min(s[2], SEARCHED_BYTES) for s in files) / 1e6
    rest = statistics.median(times[1:]) if runs > 1 else times[0]
    print(
        f"{name}: {len(wrote)} paths ({len(files)} files, {read:.0f} MB read): first {times[0]:.2f} s, then {rest:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folder", type=Path, action="append", default=[])
    add_smoke(parser, "2 runs over 50 small files written as if by setup")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2
    print(machine_load())
    with tempfile.TemporaryDirectory(prefix="ai-fix-bench-") as tmp:
        repo, before = project(Path(tmp), args.smoke)
        measure("50 small files" if args.smoke else "structlog's environment", repo, before, args.runs)
    for folder in args.folder:
        measure(str(folder), folder.resolve(), {}, args.runs)
    print(f"at the end: {machine_load()}")


if __name__ == "__main__":
    main()
