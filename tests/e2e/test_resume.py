"""Never losing work: the real worker (in-process) running the delivery pipeline, with GitHub faked through
respx (OpenAPI-checked), the fake Messages API on loopback, a bare repository as the remote and bwrap.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.job.state import trace_file
from bot.labels import HANDOFF_LABEL
from bot.markers import PR_KIND, find_marker
from bot.model.base import ModelRequest
from bot.model.scripted import ScriptedModel, Turn, call, turn
from tests.support.runs import PLAN
from tests.support.webhooks import REPO
from tests.support.worker import Worker, open_worker
from tests.support.world import FIX_SCRIPT

TITLE = "add() subtracts instead of adding"
BODY = (
    "## Goal\n`add(a, b)` returns the sum.\n\n## Acceptance criteria\n- `add(2, 3)` returns 5\n\n## Checks\n- tests\n"
)


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    with open_worker(tmp_path, monkeypatch, issues={1: (TITLE, BODY)}) as worker:
        worker.enqueue(1)
        yield worker


def test_a_crash_after_the_run_is_resumed_by_delivering_it_not_by_running_it_again(worker: Worker) -> None:
    worker.model_api.scripted = ScriptedModel(list(FIX_SCRIPT))
    # GitHub fails every try of opening the PR in the first attempt (server errors, retries exhausted).
    worker.github.script("POST", r"/pulls$", *[httpx.Response(502, json={"message": "Server Error"}) for _ in range(4)])
    worker.attempt()
    first = worker.job()
    assert first["status"] == "queued" and first["attempts"] == 1
    assert any("answered 502" in str(e["data"]) for e in first["events"]), first["events"]
    assert first["state"]["delivery"]["result"]["outcome"] == "accepted"
    assert worker.github.pulls_of(REPO) == []
    model_calls = len(worker.model_api.bodies)

    worker.attempt()
    assert worker.job()["status"] == "done"
    assert len(worker.model_api.bodies) == model_calls, "the recorded run was delivered, not run again"
    [pr] = worker.github.pulls_of(REPO)
    assert find_marker(pr["body"], PR_KIND) == 1 and pr["draft"] is False
    assert "return a + b" in _show(worker.bare, f"{pr['head']['ref']}:calc.py")


def test_agent_stop_mid_run_pushes_the_work_and_opens_a_draft_handoff(worker: Worker) -> None:
    def stop_now(request: ModelRequest) -> Turn:
        worker.store.work.cancel_target(REPO, 1, "stopped by @Codertocat (/agent stop)")
        return turn("Look again.", call("str_replace_based_edit_tool", command="view", path="calc.py"))

    worker.model_api.scripted = ScriptedModel(
        [
            turn("Plan.", PLAN),
            turn(
                "Docstring first.",
                call(
                    "str_replace_based_edit_tool",
                    command="str_replace",
                    path="calc.py",
                    old_str='"""The sum of a and b."""',
                    new_str='"""Return a plus b."""',
                ),
                call("run_checks", names=["tests"]),
            ),
            stop_now,
        ]
    )
    worker.attempt()
    assert worker.job()["status"] == "cancelled"
    [pr] = worker.github.pulls_of(REPO)
    assert pr["draft"] is True and worker.github.labels[(REPO, pr["number"])] == [HANDOFF_LABEL]
    assert "stopped by /agent stop" in pr["body"] and "## Handoff\n\nThe work so far is on" in pr["body"]
    assert "**Done:**" in pr["body"].split("## Handoff")[1]
    assert "Return a plus b" in _show(worker.bare, f"{pr['head']['ref']}:calc.py"), (
        "the checkpointed edit is on the remote"
    )


class Killed(BaseException):
    """The worker process dying: nothing of that attempt runs after it (no handler catches a BaseException)."""


def test_a_worker_killed_mid_job_keeps_the_budget_spent_and_the_first_attempts_trace(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    looking = turn("Look again.", call("str_replace_based_edit_tool", command="view", path="calc.py"))
    worker.model_api.scripted = ScriptedModel([turn("Plan.", PLAN), *[looking] * 12])  # never finishes
    save_state = worker.store.leases.save_state

    def killed_after_step_3(job_id: int, state: dict) -> None:
        save_state(job_id, state)
        if state.get("delivery", {}).get("spent", {}).get("steps") == 3:
            raise Killed  # right after the third step was stored with the job

    monkeypatch.setattr(worker.store.leases, "save_state", killed_after_step_3)
    with pytest.raises(Killed):
        worker.attempt()
    monkeypatch.setattr(worker.store.leases, "save_state", save_state)
    dead = worker.job()
    assert dead["status"] == "running" and dead["state"]["delivery"]["spent"]["steps"] == 3
    first_cost = dead["state"]["delivery"]["spent"]["cost_usd"]
    assert first_cost > 0 and dead["state"]["delivery"]["spent"]["usage"]["output_tokens"] > 0

    worker.clock.ahead = 61  # the dead worker's 60 s lease has run out
    worker.attempt()
    job = worker.job()
    assert job["attempts"] == 2 and job["status"] == "handed_off"
    assert "the step limit (5) was reached" in job["reason"], "5 steps in all for a 5-step budget, not 3 + 5"
    assert (
        job["state"]["delivery"]["spent"]["steps"] == 5 and job["state"]["delivery"]["spent"]["cost_usd"] > first_cost
    )
    records = [json.loads(line) for line in trace_file(job["state"]["delivery"]["job_dir"]).read_text().splitlines()]
    steps = [(r["attempt"], r["step"]) for r in records if r["kind"] == "step"]
    assert steps == [(1, 1), (1, 2), (1, 3), (2, 4), (2, 5)], "appended: the first attempt's records are kept"
    assert {r["attempt"] for r in records if r["kind"] == "start"} == {1, 2}
    assert [r["attempt"] for r in records if r["kind"] == "end"][-1] == 2


def _show(bare: Path, spec: str) -> str:
    return subprocess.run(["git", f"--git-dir={bare}", "show", spec], capture_output=True, text=True, check=True).stdout
