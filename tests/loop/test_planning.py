"""The planning phase on the sample repository: the real baseline in bwrap, the real Anthropic client on the fake
Messages API. It only reads, holds proposals to the scope, must end with `propose`, and stops on a broken
environment before any model call."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.model.scripted import call, turn
from tests.support.plans import IN_PLACE, PROPOSE, WITH_SUM, plan_local
from tests.support.runs import CHECK, FIX, VIEW, config, sample_files

pytestmark = pytest.mark.bwrap


def test_edits_and_checks_are_refused_and_a_proposal_outside_the_scope_too(tmp_path: Path) -> None:
    outside = {**WITH_SUM, "files": ["calc.py", "vendor/lib.py"]}  # config() denies vendor/**
    script = [
        turn("Fix it right away.", FIX, CHECK),
        turn("Propose.", call("propose", approaches=[IN_PLACE, outside], recommended=1, why="small")),
        turn("Propose within the scope.", PROPOSE),
    ]
    plan = plan_local(tmp_path, script)
    assert plan.result.outcome == "proposed" and plan.result.steps == 3
    assert (
        subprocess.run(["git", "-C", str(plan.repo), "status", "--porcelain"], check=True, capture_output=True).stdout
        == b""
    )
    steps = [r for r in plan.trace() if r["kind"] == "step"]
    first = [(a["tool"], a["decision"]) for a in steps[0]["actions"]]
    assert first == [("str_replace_based_edit_tool", "refused"), ("run_checks", "malformed")]
    assert "the planning phase is read-only" in steps[0]["actions"][0]["observation"]["text"]
    assert (
        "unknown tool 'run_checks'; the tools are: str_replace_based_edit_tool, search_code, propose"
        in (steps[0]["actions"][1]["observation"]["text"])
    )
    refusal = steps[1]["actions"][0]["observation"]["text"]
    assert refusal.startswith("proposal refused, it leaves the scope: approach 2:") and "vendor/lib.py" in refusal
    # What was refused is in the next request, so the model can correct it.
    assert "proposal refused, it leaves the scope" in str(plan.requests()[2]["messages"])
    assert [r["kind"] for r in plan.trace()] == ["start", "baseline", "step", "step", "step", "proposal"]


def test_the_last_call_must_propose_and_without_a_proposal_the_plan_is_handed_off(tmp_path: Path) -> None:
    files = sample_files(**{".github/ai-fix.yml": config(max_steps=3)})
    plan = plan_local(tmp_path, [turn("Reading.", VIEW)] * 3, files=files)
    assert plan.result.outcome == "handed_off" and plan.result.proposal is None
    assert plan.result.reason == "the planning phase made 3 model calls without a valid proposal"
    choices = [r["tool_choice"] for r in plan.requests()]
    assert choices == [{"type": "any"}, {"type": "any"}, {"type": "tool", "name": "propose"}]
    assert "This is the last planning call: call `propose` now." in str(plan.requests()[2]["messages"])
    assert "calc.py" in str(plan.requests()[1]["messages"]), "what was read stays in the next request"
    assert "planning: no proposal: the planning phase made 3 model calls" in plan.log
    assert not (plan.out / "plan.json").exists()


def test_a_broken_environment_stops_planning_before_any_model_call(tmp_path: Path) -> None:
    plan = plan_local(tmp_path, [], files=sample_files(**{".github/ai-fix.yml": config(check="no-such-runner")}))
    assert plan.result.outcome == "handed_off" and "environment error" in plan.result.reason
    assert plan.fake.bodies == []
