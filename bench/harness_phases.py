"""A job's harness overhead, phase by phase, on real projects: everything a job costs but the model's time.

    .venv/bin/python bench/harness_phases.py                       # every shipped real project, one job each
    .venv/bin/python bench/harness_phases.py --projects releases --jobs 2   # a second job per project too
    .venv/bin/python bench/harness_phases.py --projects toolz,parse-1.20.1
    .venv/bin/python bench/harness_phases.py --projects corpus.jsonl       # a task file of `ai-fix eval`'s format
    .venv/bin/python bench/harness_phases.py --projects corpus             # CI's corpus of real projects
    .venv/bin/python bench/harness_phases.py --projects corpus:toolz       # one of them
    .venv/bin/python bench/harness_phases.py --smoke                 # the sample repository, one job

Each project is a real repository served by a fake GitHub (on loopback, checked against GitHub's OpenAPI) to
a real `ai-fix serve` (SQLite, one worker, the bwrap sandbox), whose model is a fake Messages API replaying
the project's own fix: the whole job runs as on GitHub (the issue labelled, the clone, the contract, setup,
the baseline, the loop with its checks, the push, the draft PR, the check run and the progress comment), and
the model answers at once, so the job's wall time is the harness's. The phases are read from the job's own
record (the history `/tasks/<id>` shows, with the time of each event) and its trace:

- clone: from the job being claimed until setup starts (the sender's permission, the issue's snapshot, the
  clone, the contract and its comment);
- setup: setup ran, or its snapshot was restored (the job's `setup` event says which), or there was none;
- baseline: the contract's checks on the base commit;
- checks: the checks the loop's steps ran (each step's `checks_s` in the trace; the finishing step's hold
  the final checks its verification ran);
- loop: the rest of the steps' time (prompts, the patch gate, checkpoints, the index), the model's excluded;
- model: the fake model's answers (HTTP on loopback), shown apart and counted in no phase;
- publish: from the loop's last line until the job is done (the push, the PR, the check run, the comment).

The projects (`--projects`, comma-separated names, sets or task files):
- `releases`: toolz, iniconfig and inflection, the PyPI releases tests/e2e/test_pypi_releases.py fixes
  (tests/support/pypi_releases.py: each scripted with the next release's own change, sha256-pinned);
- `pypi-fixes`: the seven tasks of `ai-fix eval`'s shipped set (bot/eval/sets/pypi-fixes.jsonl), each
  played by the eval's oracle (the fixing release's change and tests);
- `corpus`: the real projects CI reproduces the own test suites of with no `.github/ai-fix.yml`
  (tests/support/corpus.py: PyPI releases, an npm package, a Debian crate and Go module), each at the PyPI of its
  release date (the operator's sandbox environment, one service per environment); there is no fix to replay, so
  the model plans, writes a note, runs the checks and finishes (the job ends unverified: no test shows anything,
  and every phase, the pull request included, runs);
- a path to a JSONL task file in `ai-fix eval`'s format (`pypi` or `repo` tasks), played the same way.
A project's `--jobs 2` runs a second job on the same repository: with a podman sandbox its setup is a
snapshot restored; on bwrap it runs again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import add_smoke, machine_load

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from bot.eval.policies import Oracle  # noqa: E402
from bot.eval.pypi import SdistCache  # noqa: E402
from bot.eval.repos import clone_for_run, files_after, prepare  # noqa: E402
from bot.eval.tasks import EvalTask, load_tasks  # noqa: E402
from bot.job.state import job_trace  # noqa: E402
from bot.model.base import ModelRequest  # noqa: E402
from bot.model.scripted import Turn, call, turn  # noqa: E402
from tests.support import corpus, pypi_releases  # noqa: E402
from tests.support.webhooks import INSTALLATION, deliver  # noqa: E402
from tests.support.world import FIX_SCRIPT, MODEL, SECRETS, SENDER, World, make_remote, start_world  # noqa: E402

CACHE = ROOT / ".cache"
MODEL_CONFIG = f"model:\n  name: {MODEL}\n  small: {MODEL}\n"
PHASES = ("clone", "setup", "baseline", "checks", "loop", "publish")


@dataclass(frozen=True)
class Project:
    """A real repository (`bare`, pushed to the fake GitHub as `repo`), the issue and the model's part."""

    name: str
    bare: Path
    title: str
    body: str
    script: Callable[[], list[Turn | Callable[[ModelRequest], Turn]]]
    env: tuple[tuple[str, str], ...] = ()
    """The sandbox environment the operator gives its jobs (AIFIX_SANDBOX_ENV): one service per environment."""


def bare_of(repo: Path, bare: Path) -> Path:
    """`repo`'s `main`, with the model named in its `.github/ai-fix.yml`, as a bare repository."""
    config = repo / ".github" / "ai-fix.yml"
    config.parent.mkdir(exist_ok=True)
    text = config.read_text() if config.exists() else ""
    config.write_text(text + ("" if "\nmodel:" in f"\n{text}" else MODEL_CONFIG))
    for step in (["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "the model"]):
        subprocess.run(["git", "-C", str(repo), *step], check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    return bare


def release_project(release: pypi_releases.Release, root: Path) -> Project:
    repo = pypi_releases.project_repo(release, root)
    title, _, body = release.issue.removeprefix("# ").partition("\n")
    name = f"{release.base.name}-{release.base.version}"
    return Project(name, bare_of(repo, root / f"{name}.git"), title, body, lambda: list(pypi_releases.script(release)))


def oracle_turns(oracle: Oracle) -> list[Turn | Callable[[ModelRequest], Turn]]:
    """The eval's oracle as the fake model's script: a plan, the reference fix and tests, finish (then asks)."""

    def answer(request: ModelRequest) -> Turn:
        oracle.steps += 1
        text, calls = oracle.step(request)
        return Turn(text=text, calls=calls)

    return [answer] * 8


def task_project(task: EvalTask, root: Path, sdists: SdistCache) -> Project:
    source = prepare(task, repos=None, work=CACHE / "bench-harness" / "eval-repos", fetch=sdists.fetch)
    clone = root / task.instance_id
    start = clone_for_run(source, clone, task, {})
    files = files_after(clone, start, [p for p in (source.test_patch, source.patch) if p])
    title, _, body = task.problem_statement.removeprefix("# ").partition("\n")

    def script() -> list[Turn | Callable[[ModelRequest], Turn]]:
        return oracle_turns(Oracle(files, task.fail_to_pass))

    return Project(task.instance_id, bare_of(clone, root / f"{task.instance_id}.git"), title, body, script)


NOTE = call("str_replace_based_edit_tool", command="create", path="AI-FIX-BENCH.md", file_text="A note.\n")


def corpus_project(project: corpus.Project, root: Path) -> Project:
    """A project of CI's corpus: the model plans, writes a note, runs the checks and finishes (twice: refused once)."""
    plan = call("plan", steps=[{"do": "write a note", "done_when": "the checks pass"}], impact=["AI-FIX-BENCH.md"])
    done = call("finish", summary="Wrote a note.", risks=[])
    turns = [turn("Plan.", plan), turn("Note.", NOTE, call("run_checks")), turn("Done.", done), turn("Done.", done)]
    bare = bare_of(corpus.make_repo(project, root / "corpus"), root / f"{project.name}.git")
    env = tuple(sorted(corpus.environment(project).items()))
    return Project(project.name, bare, "Add a note", "## Acceptance criteria\n- a note\n", lambda: list(turns), env)


def projects(spec: str, root: Path) -> Iterator[Project]:
    releases = {r.base.name: r for r in pypi_releases.RELEASES}
    shipped = {t.instance_id: t for t in load_tasks("pypi-fixes")[1]}
    named = {f"corpus:{p.name}": p for p in corpus.CORPUS}
    with SdistCache(CACHE / "eval-sdists", "https://pypi.org/simple") as sdists:
        for part in spec.split(","):
            if part == "releases":
                yield from (release_project(r, root) for r in pypi_releases.RELEASES)
            elif part == "corpus":
                yield from (corpus_project(p, root) for p in corpus.CORPUS)
            elif part in named:
                yield corpus_project(named[part], root)
            elif part in releases:
                yield release_project(releases[part], root)
            else:  # one task of the shipped set, a shipped set's name or a task file (ConfigError names the choices)
                tasks = [shipped[part]] if part in shipped else load_tasks(part)[1]
                yield from (task_project(t, root, sdists) for t in tasks)


def smoke_project(root: Path) -> Project:
    """The sample repository the end-to-end tests use, fixed by their script."""
    bare = make_remote(root)
    return Project(
        "sample",
        bare,
        "add() subtracts",
        "add(2, 3) returns -1.\n\n## Acceptance criteria\n- `add(2, 3)` returns 5\n",
        lambda: list(FIX_SCRIPT),
    )


def run_job(world: World, project: Project, number: int) -> dict[str, Any]:
    """One job on the project's repository; its full task record once done."""
    repo = f"bench/{project.name}"
    world.github.installations[INSTALLATION] = [*world.github.installations[INSTALLATION], repo]
    world.github.permissions[(repo, SENDER)] = "admin"
    world.github.git_dirs[repo] = project.bare
    payload = world.labelled(number, project.title, project.body, repo)
    payload["repository"].update(clone_url=f"file://{project.bare}", default_branch="main")
    world.script(project.script())
    response = deliver(world.client, "issues", payload, secret=SECRETS["AIFIX_WEBHOOK_SECRET"])
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    world.wait(job_id, timeout=900)
    response = world.client.get(f"/tasks/{job_id}", headers={"Authorization": f"Bearer {SECRETS['AIFIX_ADMIN_TOKEN']}"})
    return dict(response.json())


def phases(task: dict[str, Any]) -> dict[str, float]:
    """Seconds per phase, from the job's events and its trace (see the docstring), the model's apart. A job that
    ended before a phase (a setup that failed, say) spent nothing in it and in those after it."""
    events = task["events"]
    end = events[-1]["at"]
    first: dict[str, float] = {}
    for e in events:
        first.setdefault(e["data"]["phase"] if e["event"] == "phase" else e["event"], e["at"])
    trace = job_trace(task["kind"], task["state"])
    records = map(json.loads, trace.read_text().splitlines()) if trace is not None and trace.exists() else iter([])
    steps = [r for r in records if r["kind"] == "step"]
    model = sum(s["model_s"] for s in steps)
    checks = sum(s["checks_s"] for s in steps)  # the finish step's include the final checks it verified with
    setup, baseline = first.get("setup", end), first.get("baseline", end)
    started = first.get("steps", end)
    loop_end = max((e["at"] for e in events if e["event"] == "loop"), default=started)
    return {
        "clone": setup - first["claimed"],
        "setup": baseline - setup,
        "baseline": started - baseline,
        "checks": checks,
        "loop": max(loop_end - started - model - checks, 0.0),
        "publish": end - loop_end,
        "model": model,
        "total": end - first["claimed"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", default="releases,pypi-fixes", help="names, sets or task files (see above)")
    parser.add_argument("--jobs", type=int, default=1, help="jobs per project, one after the other (default 1)")
    add_smoke(parser, "the sample repository, one job")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine_load()}")
    rows: list[tuple[str, int, str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="ai-fix-bench-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        # The projects' checks run `python -m pytest` with this environment's Python first on the user's PATH, and
        # find the user's toolchains there (rustup's cargo in ~/.cargo/bin), as a user's service would.
        env = {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        chosen = [smoke_project(root / "sample")] if args.smoke else list(projects(args.projects, root))
        worlds: dict[tuple[tuple[str, str], ...], World] = {}
        number = 1
        for project in chosen:
            if project.env not in worlds:
                folder = root / f"world-{len(worlds)}"
                folder.mkdir()
                service = {**env, "AIFIX_SANDBOX_ENV": json.dumps(dict(project.env))} if project.env else env
                worlds[project.env] = start_world(folder, stack, remote=project.bare, env=service)
            world = worlds[project.env]
            for job in range(1, args.jobs + 1):
                task = run_job(world, project, number)
                number += 1
                figures = phases(task)
                setup = next((e["data"] for e in task["events"] if e["event"] == "setup"), {})
                rows.append((project.name, job, f"{task['status']}, setup {setup.get('status', 'none')}", figures))
                if task["status"] != "done":  # what the job said, to see why
                    print("\n".join(f"  {e['data']['line']}" for e in task["events"] if e["event"] == "loop"))
                print(
                    f"{project.name} job {job}: {task['status']} ({task.get('reason', '')[:80]}); "
                    + ", ".join(f"{k} {v:.2f} s" for k, v in figures.items())
                    + f"; {machine_load()}"
                )
    print(f"\nat the end: {machine_load()}\n")
    print("| project | job | outcome | " + " | ".join(PHASES) + " | harness total | model |")
    print("|---|---:|---|" + "---:|" * (len(PHASES) + 2))
    for name, job, outcome, f in rows:
        harness = f["total"] - f["model"]
        print(
            f"| {name} | {job} | {outcome} | "
            + " | ".join(f"{f[p]:.2f} s" for p in PHASES)
            + f" | {harness:.2f} s | {f['model']:.2f} s |"
        )
    for job in range(1, args.jobs + 1):
        mine = [f for _, j, _, f in rows if j == job]
        medians = {p: statistics.median(f[p] for f in mine) for p in (*PHASES, "total", "model")}
        print(
            f"median of job {job} over {len(mine)} project(s): "
            + ", ".join(f"{p} {medians[p]:.2f} s" for p in PHASES)
            + f"; harness {medians['total'] - medians['model']:.2f} s, model {medians['model']:.2f} s"
        )
    # A corpus job ends unverified (its note shows nothing); any other end means the harness did not get through.
    return 0 if all(outcome.startswith(("done", "unverified")) for _, _, outcome, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
