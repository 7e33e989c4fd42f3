"""Setup time of a repository's first and second job, on a real project: structlog 24.4.0's PyPI sdist.

    .venv/bin/python bench/setup_cache.py [--runs 3] [--backends podman,bwrap]
    .venv/bin/python bench/setup_cache.py --smoke   # one run on a tiny repository whose setup writes one file

Each run makes the repository afresh from the sdist (no `.github/ai-fix.yml` but, for podman, the test
image), builds its contract (setup detected: a venv in `.ai-fix-env`, `pip install -e '.[tests]'`,
then ruff and mypy, which the wheel directory does not have), then prepares the environment of two jobs,
each in a fresh clone, through the same toolkit `ai-fix serve` uses. Dependencies come from the local
wheel directory `.cache/test-projects/wheels` (`python -m tests.support.pypi_project` fills it), so the
figures measure installing, not downloading. On podman the second job restores the first job's setup
snapshot; on bwrap it runs setup again with the repository's pip cache. Prints the median of the runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import add_smoke, machine_load

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from bot.checks.bound import SandboxChecks  # noqa: E402
from bot.checks.models import SetupReport  # noqa: E402
from bot.checks.setup import setup_key  # noqa: E402
from bot.commands.toolkit import toolkit  # noqa: E402
from bot.contract.build import build_contract, snapshot_from_markdown  # noqa: E402
from bot.contract.files import LocalRepoFiles  # noqa: E402
from bot.model.scripted import ScriptedModel  # noqa: E402
from bot.sandbox.base import SandboxJob  # noqa: E402
from bot.sandbox.engine import run_engine  # noqa: E402
from bot.settings import load_settings  # noqa: E402
from tests.support.pypi_project import fetch, project_repo  # noqa: E402
from tests.support.repos import commit, make_repo  # noqa: E402
from tests.support.sandbox import TEST_IMAGE, build_test_image, skip_reason  # noqa: E402

ISSUE = "# warn is not warning\n\n## Acceptance criteria\n- `map_method_name('warn')` returns `'warning'`\n"
TINY_CONFIG = (
    "setup:\n  - mkdir -p .ai-fix-env && echo ready > .ai-fix-env/ready\n"
    "checks:\n  - name: tests\n    run: test -f .ai-fix-env/ready\n"
)
"""--smoke's repository has only this config: the same path through setup and its snapshot, in a second."""


def one_run(kind: str, root: Path, smoke: bool) -> list[SetupReport]:
    """The setup of the repository's first and second job."""
    config = TINY_CONFIG if smoke else ""
    if smoke:
        repo, env, ro_paths = make_repo(root / "tiny", {".github/ai-fix.yml": config}), {}, []
    else:
        repo = project_repo(root)
        wheels = fetch() / "wheels"
        env, ro_paths = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}, [wheels]
    if kind == "podman":
        build_test_image()
        commit(repo, {".github/ai-fix.yml": f"{config}sandbox:\n  image: {TEST_IMAGE}\n"}, "the test image")
        base = Path(sys.base_prefix).resolve()
        env["PATH"] = f"{base}/bin:/usr/local/bin:/usr/bin:/bin"
        ro_paths += [Path("/usr"), base]
    settings = load_settings(work_dir=root / "work", sandbox_env=env, sandbox_ro_paths=ro_paths)
    kit = toolkit(settings, model=lambda _choice: ScriptedModel([]), sandbox=kind)
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    reports = []
    for n in (1, 2):
        workspace = root / f"job-{n}"
        subprocess.run(["git", "clone", "-q", str(repo), str(workspace)], check=True)
        job = SandboxJob(
            repo=str(repo),
            commands=(*contract.setup, *(c.run for c in contract.checks)),
            setup_key=setup_key(contract, workspace),
        )
        sandbox = kit.open_sandbox(workspace, contract.sandbox, job)
        try:
            reports.append(SandboxChecks(sandbox, contract, []).setup())
        finally:
            sandbox.close()
    for report in reports:
        if report.snapshot:
            run_engine("podman", "rmi", report.snapshot)
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backends", default="podman,bwrap")
    add_smoke(parser, "one run on a repository whose setup writes one file")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    print(f"before: {machine_load()}")
    rows = []
    for kind in args.backends.split(","):
        if reason := skip_reason(kind):
            print(f"{kind}: skipped ({reason})")
            continue
        runs = []
        for i in range(args.runs):
            root = Path(tempfile.mkdtemp(prefix=f"ai-fix-bench-setup-{kind}-"))
            try:
                first, second = one_run(kind, root, args.smoke)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            for report in (first, second):
                assert report.status in ("ran", "reused"), report.describe()
            print(f"{kind} run {i + 1}: first job {first.describe()}; second job {second.describe()}")
            runs.append((first.duration_s, second.duration_s, second.status))
        rows.append((kind, runs))
    print(f"after: {machine_load()}")
    print("\n| backend | first job: setup ran | second job | how | ratio |\n|---|---:|---:|---|---:|")
    for kind, runs in rows:
        first_s = statistics.median(r[0] for r in runs)
        second_s = statistics.median(r[1] for r in runs)
        how = "snapshot reused" if all(r[2] == "reused" for r in runs) else "setup ran (pip cache)"
        print(f"| {kind} | {first_s:.1f} s | {second_s:.1f} s | {how} | {first_s / second_s:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
