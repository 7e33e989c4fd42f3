"""Never losing work: the real worker (in-process) running the delivery pipeline, with GitHub faked through
respx (OpenAPI-checked), the fake Messages API on loopback, a bare repository as the remote and bwrap.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.delivery.github_out import HANDOFF_LABEL
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
        worker.store.cancel_target(REPO, 1, "stopped by @Codertocat (/agent stop)")
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


def _show(bare: Path, spec: str) -> str:
    return subprocess.run(["git", f"--git-dir={bare}", "show", spec], capture_output=True, text=True, check=True).stdout
