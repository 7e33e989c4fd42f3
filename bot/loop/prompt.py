"""Prompt assembly: the model's context in three layers, and the request each step sends.

stable (cached): system prompt, tool rules, contract, conventions, repo map — byte-identical every
step, so the prompt cache serves it after step 1. volatile: first its slow part (scope, relevant
code: unchanged until an edit or a check run, so it gets a cache breakpoint of its own), then plan,
diff, latest failure, the last results and the limits. history: conclusions of earlier steps
and the approaches ruled out.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from bot.checks.models import CheckRun
from bot.context.base import Query
from bot.contract.approach import ApprovedApproach
from bot.contract.models import TaskContract
from bot.loop.budget import limits_left
from bot.loop.harness import Harness
from bot.loop.records import StepRecord
from bot.loop.result import Plan
from bot.loop.state import RunState
from bot.model.base import ModelRequest, estimate_tokens

MAX_DIFF_CHARS = 6000
MAX_RESULT_CHARS = 8000


@cache
def prompt(name: str) -> str:
    return resources.files("bot.loop.prompts").joinpath(name).read_text()


@cache
def tool_definitions() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(prompt("tools.json"))
    return tools


@cache
def plan_tool_definitions() -> list[dict[str, Any]]:
    """The planning phase's tools: the loop's reading tools (the editor, for `view`; `search_code`) and `propose`."""
    reading = [t for t in tool_definitions() if t["name"] in ("str_replace_based_edit_tool", "search_code")]
    proposing: list[dict[str, Any]] = json.loads(prompt("plan_tools.json"))
    return reading + proposing


def contract_for_model(contract: TaskContract) -> str:
    """The contract fields the model needs; untrusted text stays quoted data."""
    doc = contract.model_dump(
        mode="json",
        include={
            "title",
            "goal",
            "non_goals",
            "constraints",
            "acceptance_criteria",
            "scope",
            "checks",
            "budget",
            "feedback",
        },
    )
    doc["untrusted_quotes"] = [u.get("excerpt", "") for u in contract.provenance.untrusted]
    return json.dumps(doc, indent=1, sort_keys=True)


def approach_layer(approved: ApprovedApproach) -> str:
    """The approach a maintainer approved, which the run follows."""
    chosen = "the one recommended" if approved.number == approved.recommended else "not the one recommended"
    doc = approved.approach.model_dump(mode="json")
    return (
        f"## Approved approach\nA maintainer (@{approved.approved_by}) approved approach {approved.number} of the plan "
        f"({chosen}). Follow it: your `plan` carries out its steps, and the change stays to its files unless the "
        "checks show that more is needed.\n" + json.dumps(doc, indent=1, sort_keys=True)
    )


def stable_layer(contract: TaskContract, repo_map: str, *, planning: bool = False) -> str:
    """`planning`: the planning phase's own instructions in place of the loop's (the rest is the same)."""
    conventions = "\n\n".join(f"### {path}\n{text}" for path, text in sorted(contract.conventions.files.items()))
    parts = [
        *([prompt("plan_system.md")] if planning else [prompt("system.md"), prompt("tool_rules.md")]),
        "## Task contract\n" + contract_for_model(contract),
        *([approach_layer(contract.approach)] if contract.approach else []),
        "## Repository conventions\n" + (conventions or "(none)"),
        "## Repository map\n" + repo_map,
    ]
    return "\n\n".join(parts)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"


def focus_layer(*, scope_note: str, slices: str) -> str:
    """The slow-changing part of the volatile layer."""
    return "## Scope now\n" + scope_note + "\n\n## Relevant code\n" + (slices or "(none)")


def volatile_layer(*, plan: Plan | None, diff: str, failure: str, last_results: str, limits: str) -> str:
    plan_text = (
        "\n".join(f"{i}. {s.do} (done when: {s.done_when})" for i, s in enumerate(plan.steps, 1))
        if plan
        else "(no plan yet: call `plan` first)"
    )
    parts = [
        "## Plan\n" + plan_text,
        "## Current diff against the base commit\n" + (clip(diff, MAX_DIFF_CHARS) or "(no change yet)"),
        "## Latest check failure\n" + (failure or "(none)"),
        "## Results of your last actions\n" + (clip(last_results, MAX_RESULT_CHARS) or "(none yet)"),
        "## Limits left\n" + limits,
        "Answer with the next tool call(s).",
    ]
    return "\n\n".join(parts)


def history_layer(conclusions: list[str], ruled_out: list[str]) -> str:
    parts = ["## What happened so far\n" + ("\n".join(f"- {c}" for c in conclusions) or "(this is the first step)")]
    if ruled_out:
        parts.append("## Approaches ruled out (do not repeat them)\n" + "\n".join(f"- {r}" for r in ruled_out))
    return "\n\n".join(parts)


def failure_text(run: CheckRun | None) -> str:
    """The latest failure as the model is shown it: each failing check's summary (or why it could not run)."""
    return "\n".join(r.summary or r.reason for r in run.failing()) if run else ""


def relevant_code(h: Harness, state: RunState, failure: str, diff: str) -> str:
    """Retrieval for the current failure and diff; the index is refreshed and asked again only after they changed."""
    criteria = "\n".join(c.text for c in h.contract.acceptance_criteria)
    query = Query(text=f"{h.contract.title}\n{h.contract.goal}\n{criteria}", failure=failure, diff=diff)
    if state.retrieved is None or state.retrieved[0] != query:
        h.context.refresh()
        state.retrieved = (query, h.context.retrieve(query, h.config.slice_tokens).rendered)
    return state.retrieved[1]


def build_request(h: Harness, state: RunState, record: StepRecord) -> ModelRequest:
    """The next step's request; the context tokens per layer go into the step's record."""
    diff = state.change.diff()
    failure = failure_text(state.checks.latest)
    focus = focus_layer(scope_note=state.scope_note, slices=relevant_code(h, state, failure, diff))
    volatile = volatile_layer(
        plan=state.plan,
        diff=diff,
        failure=failure,
        last_results="\n\n".join(state.notes.last_results),
        limits=limits_left(h, state),
    )
    history = history_layer(state.notes.conclusions, state.notes.ruled_out)
    record.context_tokens = {
        "stable": estimate_tokens(state.stable),
        "volatile": estimate_tokens(focus + volatile),
        "history": estimate_tokens(history),
    }
    # The slow part of the volatile layer gets the second cache breakpoint: it stays the same until an edit or a check run.
    content = [
        {"type": "text", "text": h.redact(focus), "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": h.redact(history + "\n\n" + volatile)},
    ]
    # The plan comes first: forced through tool_choice rather than refusing edits afterwards.
    choice = {"type": "tool", "name": "plan"} if state.plan is None else {"type": "any"}
    return ModelRequest(
        model=h.config.model,
        system=state.stable,
        messages=[{"role": "user", "content": content}],
        tools=tool_definitions(),
        tool_choice=choice,
        max_tokens=h.config.max_tokens,
    )
