"""The `rebase` job on the fakes: the real worker (in-process) and job code, the fake GitHub (OpenAPI-checked), the
fake Messages API, bwrap and a bare repository whose ai-fix branch conflicts with main. Its session is every job's:
the repository's setup secrets reach its setup, and the conflict resolver's model calls are steps of the job's trace,
with their cost, held to the contract's budget."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.job.state import RebaseJobState, trace_file
from bot.markers import PR_KIND, marker
from bot.model.scripted import ScriptedModel, call, turn
from tests.support.webhooks import REPO
from tests.support.worker import Worker, open_worker
from tests.support.world import config

pytestmark = pytest.mark.bwrap

TOKEN = "index-token-5Rb8Kw2Nq7Hz"
BRANCH = "ai-fix/1-add-subtracts-instead-of-adding"
SETUP = "setup_secrets: [INDEX_TOKEN]\nsetup:\n  - 'test -n \"$INDEX_TOKEN\"'\n"
"""A setup that fails unless it is given the repository's setup secret."""
RESOLVED = 'def add(a: float, b: float, /) -> float:\n    """Return the sum of a and b."""\n    return a + b'
RESOLVE = call(
    "resolve_conflicts",
    resolutions=[{"file": "calc.py", "conflict": 1, "text": RESOLVED}],
    summary="Kept main's positional-only signature and the branch's fix.",
)
WRONG = call("resolve_conflicts", resolutions=[{"file": "README.md", "conflict": 1, "text": "x"}], summary="Done.")


def conflicting(bare: Path, root: Path) -> None:
    """`BRANCH` fixes add(); main, meanwhile, changed the same lines another way."""
    clone = root / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    calc = (clone / "calc.py").read_text()
    for branch, text in (
        (BRANCH, calc.replace("    return a - b", "    return a + b").replace("The sum", "Return the sum")),
        ("main", calc.replace("def add(a: float, b: float) -> float:", "def add(a: float, b: float, /) -> float:")),
    ):
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", "-B", branch, "origin/main"], check=True)
        (clone / "calc.py").write_text(text)
        subprocess.run(["git", "-C", str(clone), *who, "commit", "-qam", f"calc.py on {branch}"], check=True)
        subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", branch], check=True)


@pytest.fixture
def rebase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Worker]:
    budget = getattr(request, "param", "")
    yml = config() + SETUP
    if budget:
        yml = yml.replace("max_cost_usd: 1\n", f"max_cost_usd: {budget}\n")
    env = {"AIFIX_SETUP_SECRET_INDEX_TOKEN": TOKEN, "AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS": REPO}
    issue = ("add() subtracts instead of adding", "## Acceptance criteria\n- `add(2, 3)` returns 5\n")
    with open_worker(tmp_path, monkeypatch, issues={1: issue}, files={".github/ai-fix.yml": yml}, env=env) as worker:
        conflicting(worker.bare, tmp_path)
        pull = worker.github.new_pull(REPO, BRANCH, "main", "ai-fix: add()", f"{marker(PR_KIND, 1)}\nFixes #1", False)
        worker.enqueue(int(pull["number"]), kind="rebase")
        yield worker


def trace_of(worker: Worker) -> list[dict[str, Any]]:
    state = RebaseJobState.model_validate(worker.job()["state"])
    return [json.loads(line) for line in trace_file(state.job_dir).read_text().splitlines()]


def test_a_rebase_gets_the_setup_secrets_and_its_model_calls_are_steps_of_the_trace(rebase: Worker) -> None:
    rebase.model_api.scripted = ScriptedModel([turn("Keep both.", RESOLVE)])
    rebase.attempt()

    job = rebase.job()
    assert job["status"] == "done", job["reason"]
    pushed = subprocess.run(
        ["git", f"--git-dir={rebase.bare}", "show", f"{BRANCH}:calc.py"], capture_output=True, text=True, check=True
    )
    assert RESOLVED in pushed.stdout
    setups = [e["data"] for e in job["events"] if e["event"] == "setup"]
    assert setups and setups[0]["status"] == "ran", setups
    records = trace_of(rebase)
    assert [r["kind"] for r in records] == ["start", "step"]
    [step] = [r for r in records if r["kind"] == "step"]
    [made] = step["model_calls"]
    assert made["request"]["purpose"] == "resolve" and step["cost_usd"] > 0
    assert RebaseJobState.model_validate(job["state"]).spent.cost_usd == pytest.approx(step["cost_usd"])


@pytest.mark.parametrize("rebase", ["0.000001"], indirect=True)
def test_a_rebase_stops_at_the_budgets_cost_limit(rebase: Worker) -> None:
    rebase.model_api.scripted = ScriptedModel([turn("Resolving.", WRONG), turn("Again.", RESOLVE)])
    rebase.attempt()

    job = rebase.job()
    assert job["status"] == "handed_off" and "not merged: budget: the cost limit ($1e-06" in job["reason"], job
    assert len(rebase.model_api.bodies) == 1, "no call after the limit was reached"
    assert [r["kind"] for r in trace_of(rebase)] == ["start", "step"]
