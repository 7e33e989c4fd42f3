"""Which CI and push deliveries start a `ci`, `scan` job, from the recorded payloads (nothing calls GitHub)."""

from __future__ import annotations

import copy
from typing import Any

from bot.intake.events import Event
from bot.intake.triggers import Ignored, Triggered, decide
from bot.queue.models import Trigger
from tests.support.fake_github import load_payload
from tests.support.webhooks import pr_comment

INSTALL = {"id": 1}


def trigger_of(name: str, payload: dict[str, Any]) -> Trigger | str:
    decision = decide(Event(name, "d-1", payload), trigger_label="ai-fix", bot_login="ai-fix[bot]")
    if isinstance(decision, Ignored):
        return decision.reason
    assert isinstance(decision, Triggered)
    return decision.trigger


def workflow_run(conclusion: str = "failure", *, branch: str = "ai-fix/3-fix-add") -> dict[str, Any]:
    payload = copy.deepcopy(load_payload("workflow_run/completed.with-pull-requests"))
    payload["installation"] = INSTALL
    run = payload["workflow_run"]
    run.update(conclusion=conclusion, head_branch=branch, name="CI", run_attempt=2)
    run["pull_requests"][0]["head"]["ref"] = branch
    return payload


def test_a_failed_workflow_run_on_an_ai_fix_pr_is_a_ci_trigger_from_github() -> None:
    trigger = trigger_of("workflow_run", workflow_run())
    assert isinstance(trigger, Trigger)
    assert (trigger.kind, trigger.number, trigger.origin) == ("ci", 2, "github")
    [signal] = trigger.checks
    assert (signal.source, signal.name, signal.conclusion, signal.attempt) == ("workflow_run", "CI", "failure", 2)
    assert signal.run_id == 289782451 and trigger.head_sha == "3484a3fb816e0859fd6e1cea078d76385ff50625"


def test_other_workflow_runs_start_nothing() -> None:
    assert "not on an ai-fix branch" in str(trigger_of("workflow_run", workflow_run(branch="feature")))
    assert "ended cancelled" in str(trigger_of("workflow_run", workflow_run("cancelled")))
    requested = workflow_run()
    requested["action"] = "requested"
    assert "not a trigger" in str(trigger_of("workflow_run", requested))
    no_install = workflow_run()
    del no_install["installation"]
    assert "installation" in str(trigger_of("workflow_run", no_install))


def test_a_check_run_of_another_app_on_an_ai_fix_branch_without_its_pr_becomes_a_scan() -> None:
    payload = copy.deepcopy(load_payload("check_run/completed"))
    payload["installation"] = INSTALL
    run = payload["check_run"]
    run.update(conclusion="failure", name="codecov", pull_requests=[], head_branch="ai-fix/3-x")
    run["app"].update(slug="codecov", id=7)
    run["check_suite"]["head_branch"] = "ai-fix/3-x"
    trigger = trigger_of("check_run", payload)
    assert isinstance(trigger, Trigger) and trigger.kind == "scan" and trigger.branch == "ai-fix/3-x"
    assert trigger.checks[0].check_run_id == run["id"]
    run["app"].update(slug="github-actions")
    assert "reported as its workflow run" in str(trigger_of("check_run", payload))
    run["app"].update(slug="ai-fix", id=42, name="ai-fix")
    run["name"] = "ai-fix's own check, renamed"
    assert "ai-fix itself" in str(trigger_of("check_run", payload))


def test_a_failing_status_on_the_head_of_an_ai_fix_branch_is_a_scan() -> None:
    payload = copy.deepcopy(load_payload("status/with-installation"))
    payload.update(state="failure", context="ci/jenkins")
    payload["branches"] = [{"name": "ai-fix/3-x", "commit": {"sha": payload["sha"]}}]
    trigger = trigger_of("status", payload)
    assert isinstance(trigger, Trigger) and trigger.kind == "scan" and trigger.head_sha == payload["sha"]
    payload["state"] = "pending"
    assert "state pending" in str(trigger_of("status", payload))


def test_a_push_to_the_default_branch_is_a_scan_for_conflicts_and_other_pushes_are_not() -> None:
    payload = copy.deepcopy(load_payload("push/with-installation"))
    payload["ref"] = f"refs/heads/{payload['repository']['default_branch']}"
    assert payload["deleted"] is True and "deleted" in str(trigger_of("push", payload)), "the recorded push deletes"
    payload.update(deleted=False, after="c" * 40)
    trigger = trigger_of("push", payload)
    assert isinstance(trigger, Trigger) and (trigger.kind, trigger.branch) == ("scan", "master")
    assert trigger.number == payload["repository"]["id"] and trigger.origin == "github"
    payload["ref"] = "refs/heads/ai-fix/3-x"
    assert "not to the default branch" in str(trigger_of("push", payload))


def test_agent_rebase_works_only_on_an_ai_fix_pull_request() -> None:
    trigger = trigger_of("issue_comment", pr_comment("/agent rebase"))
    assert isinstance(trigger, Trigger) and trigger.kind == "rebase" and trigger.origin == "person"
    assert "works only on a pull request opened by ai-fix" in str(
        trigger_of("issue_comment", pr_comment("/agent rebase", pr_author_type="User"))
    )
