"""Plan before code, end to end: a real `ai-fix serve` on a repository whose `.github/ai-fix.yml` says
`approval: plan` (see world.py for what is real): two approaches and an estimate on the issue, a wait that
holds no worker and calls no model, a reader refused, `/agent revise`, `/agent approve 2`, `/agent stop`, and
the timeout."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from bot.commands.demo import sample
from bot.markers import PR_KIND, PROGRESS_KIND, find_marker
from bot.model.base import ModelRequest
from bot.model.scripted import Turn, call, turn
from tests.support.plans import IN_PLACE, PLAN_SCRIPT, WITH_SUM, carries
from tests.support.runs import CHECK, FIX, PLAN, SAMPLE_CRITERIA
from tests.support.webhooks import REPO, labeled, pr_comment
from tests.support.world import SENDER, World, config, start_world

READER = "drive-by-reader"
WAITING = frozenset({"awaiting_approval"})
APPROVAL = "approval: plan\napproval_timeout_days: 7\n"
KEEPS_ADD = {**IN_PLACE, "title": "Fix add() and keep total() calling it"}
NEW_TEST = {
    **WITH_SUM,
    "title": "Fix add() and pin total() with a test of floats",
    "steps": ["replace `a - b` with `a + b` in add()"],
    "tests": ["tests/test_calc.py::CalcTest::test_total_of_floats"],
}
FEEDBACK = "Keep total() calling add(); no sum()."


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        w = start_world(tmp_path_factory.mktemp("plans"), stack, extra_config=APPROVAL)
        w.github.permissions[(REPO, READER)] = "read"
        yield w


@pytest.fixture(autouse=True)
def nothing_leaks(world: World) -> Iterator[None]:
    yield
    world.assert_clean()


def traces(world: World, tail: str) -> list[dict[str, Any]]:
    """The records of the one job trace whose name ends in `tail` (before `.trace.jsonl`)."""
    [path] = (world.root / "work" / "jobs").glob(f"*{tail}.trace.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def sample_issue(world: World, number: int) -> dict[str, Any]:
    title, _, body = sample()[1].partition("\n")
    return world.labelled(number, title.removeprefix("# ").strip(), body.strip())


def comment(world: World, number: int, text: str, sender: str = SENDER) -> dict[str, Any]:
    """`text` commented on issue `number`; the command's task once it has ended."""
    return world.run("issue_comment", pr_comment(text, number=number, sender=sender, on_pr=False, pr_body=""))


def progress(world: World, number: int) -> dict[str, Any]:
    [found] = [c for c in world.github.bot_comments(REPO, number) if find_marker(c["body"], PROGRESS_KIND) == number]
    return found


def task(world: World, job_id: int) -> dict[str, Any]:
    return next(t for t in world.tasks() if t["id"] == job_id)


def until(check: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.1)


def waits(world: World, job_id: int) -> int:
    return [e["event"] for e in task(world, job_id)["events"]].count("awaiting_approval")


def sees(text: str, reply: Turn) -> Callable[[ModelRequest], Turn]:
    def answer(request: ModelRequest) -> Turn:
        assert text in request.system + str(request.messages), f"{text!r} is not in the model's context"
        return reply

    return answer


def test_label_plans_waits_then_a_writer_revises_and_approves_approach_2(world: World) -> None:
    world.script(list(PLAN_SCRIPT))
    job_id = world.send("issues", sample_issue(world, 1)).json()["job_id"]
    waiting = world.wait(job_id, until=WAITING)
    assert "plan 1 posted" in waiting["reason"]
    body = progress(world, 1)["body"]
    assert "#### ai-fix: two ways to do it" in body
    assert "| | Approach 1 (recommended) | Approach 2 |" in body
    assert f"| **Approach** | {IN_PLACE['title']} | {WITH_SUM['title']} |" in body
    assert "| **Rollback** | revert the one commit | revert the commit |" in body
    estimate = next(line for line in body.splitlines() if line.startswith("| **Estimate** |"))
    # The world's budget is 5 steps: approach 2 (6 steps at least) is cut to it, and says so.
    approach_1, approach_2 = estimate.split(" | ")[1:3]
    assert approach_1.startswith("4–5 steps; ") and approach_2.startswith("5 steps; ") and "$0.0" in approach_1
    assert "(steps: the budget stops a run at 5)" in approach_2
    assert "**Recommended: approach 1.**" in body and "<sub>Estimate: steps from the approach's size" in body
    assert "- `/agent approve 2`: run approach 2" in body and "Without an answer by " in body
    assert "⏸️ waiting for a maintainer's answer" in body and "<summary>Task contract</summary>" in body
    assert world.git("branch", "--format=%(refname:short)").split() == ["main"], "no branch is pushed while it waits"
    assert world.github.pulls_of(REPO) == []
    calls = len(world.model_api.bodies)
    assert calls == 2
    tools = [t["name"] for t in json.loads(world.model_api.bodies[0])["tools"]]
    assert tools == ["str_replace_based_edit_tool", "search_code", "propose"], "the planning phase only reads"
    time.sleep(3)  # three claim polls of the service's workers
    assert task(world, job_id)["status"] == "awaiting_approval" and len(world.model_api.bodies) == calls

    refused = comment(world, 1, "/agent approve 2", sender=READER)
    assert refused["status"] == "rejected" and f"@{READER} (read)" in refused["reason"]
    time.sleep(1.5)
    assert task(world, job_id)["status"] == "awaiting_approval" and len(world.model_api.bodies) == calls

    revised = call("propose", approaches=[KEEPS_ADD, NEW_TEST], recommended=2, why="it keeps total() as it is")
    world.script([sees(FEEDBACK, turn("Planning again with the feedback.", revised))])
    assert comment(world, 1, f"/agent revise {FEEDBACK}")["status"] == "done"
    until(lambda: waits(world, job_id) == 2, "the second plan")
    assert len(world.github.bot_comments(REPO, 1)) == 1, "the same comment is updated"
    body = progress(world, 1)["body"]
    assert "#### ai-fix: two ways to do it (revision 2)" in body and FEEDBACK in body
    assert KEEPS_ADD["title"] in body and NEW_TEST["title"] in body and WITH_SUM["title"] not in body
    assert "| | Approach 1 | Approach 2 (recommended) |" in body

    steps = [
        turn("Plan the fix.", PLAN),
        turn("Fix add().", FIX, CHECK),
        turn("Done.", call("finish", summary="Fixed add().", risks=[], criteria=SAMPLE_CRITERIA)),
    ]
    before = len(world.model_api.bodies)
    world.script([carries(NEW_TEST["title"], KEEPS_ADD["title"], t) for t in steps])
    assert comment(world, 1, "/agent approve 2")["status"] == "done"
    done = world.wait(job_id)
    assert done["status"] == "done", done
    run_requests = world.model_api.bodies[before:]
    assert len(run_requests) == 3 and all(NEW_TEST["title"] in r and KEEPS_ADD["title"] not in r for r in run_requests)
    assert all("## Approved approach" in json.loads(r)["system"][0]["text"] for r in run_requests)
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 1]
    summary = pr["body"].split("## Summary")[1].split("\n## ")[0]
    assert f"- Approach: approach 2 of the plan, *{NEW_TEST['title']}*, approved by `@{SENDER}`" in summary
    [check_run] = world.github.check_runs
    assert f"approach 2 of the plan, *{NEW_TEST['title']}*" in check_run["output"]["summary"]
    body = progress(world, 1)["body"]
    assert "**Approved**: approach 2 of the plan" in body and "✅ **Accepted**" in body
    events = [e["event"] for e in task(world, job_id)["events"]]
    assert events.count("answered") == 2 and "plan" in events and "plan_answer" in events
    # The traces: each plan's proposal and estimates, and the run's contract and end naming approach 2, with the
    # estimate it was approved on set against what the run used.
    [revised_plan] = [r for r in traces(world, f"-1-{job_id}-plan-2") if r["kind"] == "proposal"]
    assert [a["title"] for a in revised_plan["proposal"]["approaches"]] == [KEEPS_ADD["title"], NEW_TEST["title"]]
    run_trace = traces(world, f"-1-{job_id}-1")
    start, end = run_trace[0], run_trace[-1]
    assert start["contract"]["approach"]["number"] == 2 and start["contract"]["approach"]["approved_by"] == SENDER
    assert start["contract"]["approach"]["approach"]["title"] == NEW_TEST["title"]
    assert end["kind"] == "end" and end["estimate"]["estimate"] == revised_plan["estimates"][1]
    assert end["estimate"]["steps"] == 3 and end["estimate"]["usd"] == end["cost"]["usd"]


def test_stop_cancels_a_waiting_plan_with_the_comment_updated(world: World) -> None:
    world.script(list(PLAN_SCRIPT))
    job_id = world.send("issues", sample_issue(world, 41)).json()["job_id"]
    world.wait(job_id, until=WAITING)
    stop = comment(world, 41, "/agent stop")
    assert stop["status"] == "done" and stop["reason"] == f"stopped job(s) [{job_id}]"
    ended = world.wait(job_id)
    assert ended["status"] == "cancelled" and f"stopped by @{SENDER} (/agent stop)" in ended["reason"]
    body = progress(world, 41)["body"]
    assert "🛑 **Cancelled** before any change: stopped by `@Codertocat` (/agent stop)" in body
    assert "❌ stopped here" in body and "/agent approve" not in body.split("🛑")[0]


def set_config(world: World, text: str) -> None:
    """Commit `text` as the remote's `.github/ai-fix.yml` on main (the contract is read from the default branch)."""
    work = world.root / f"config-{time.monotonic_ns()}"
    git = ["git", "-c", "user.name=maintainer", "-c", "user.email=m@example.com", "-C", str(work)]
    subprocess.run(["git", "clone", "-q", str(world.bare), str(work)], check=True)
    (work / ".github" / "ai-fix.yml").write_text(text)
    subprocess.run([*git, "commit", "-q", "-am", "approval timeout"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD:main"], check=True)


def test_an_unanswered_plan_is_cancelled_after_the_timeout(world: World) -> None:
    set_config(world, config() + "approval: plan\napproval_timeout_days: 0.00004\n")  # 3.5 seconds
    world.script(list(PLAN_SCRIPT))
    job_id = world.send("issues", sample_issue(world, 42)).json()["job_id"]
    world.wait(job_id, until=WAITING)
    calls = len(world.model_api.bodies)
    ended = world.wait(job_id, timeout=60)
    assert ended["status"] == "cancelled" and "no answer to the plan within 3 seconds" in ended["reason"]
    assert len(world.model_api.bodies) == calls, "no model call while it waited, none to cancel it"
    assert "approval_expired" in [e["event"] for e in ended["events"]]
    body = progress(world, 42)["body"]
    assert "🛑 **Cancelled** before any change: no answer to the plan within 3 seconds" in body
    assert not [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 42]


def test_agent_plan_and_the_plan_label_plan_first_on_a_repository_that_does_not_ask_for_it(world: World) -> None:
    set_config(world, config() + "approval: none\n")
    title, _, body = sample()[1].partition("\n")
    issue = {"title": title.removeprefix("# ").strip(), "body": body.strip(), "author": SENDER}
    world.github.add_issue(REPO, 43, **issue)
    world.script(list(PLAN_SCRIPT))
    asked = world.send("issue_comment", pr_comment("/agent plan", number=43, on_pr=False, pr_body="")).json()
    world.wait(asked["job_id"], until=WAITING)
    assert "#### ai-fix: two ways to do it" in progress(world, 43)["body"]
    assert f"(asked by /agent plan by `@{SENDER}`;" in progress(world, 43)["body"]

    world.github.add_issue(REPO, 44, **issue, labels=("ai-fix:plan",))
    payload = labeled(44, label="ai-fix:plan", sender=SENDER)
    payload["issue"].update(title=issue["title"], body=issue["body"])
    world.script(list(PLAN_SCRIPT))
    labelled = world.send("issues", payload).json()
    world.wait(labelled["job_id"], until=WAITING)
    assert "(asked by the ai-fix:plan label;" in progress(world, 44)["body"]
    pushed = world.git("branch", "--format=%(refname:short)").split()
    assert not [b for b in pushed if b.startswith(("ai-fix/43-", "ai-fix/44-"))], "no branch is pushed while they wait"
    for number in (43, 44):
        assert comment(world, number, "/agent stop")["status"] == "done"
    assert {world.wait(j["job_id"])["status"] for j in (asked, labelled)} == {"cancelled"}
