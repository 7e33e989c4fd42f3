"""Typed actions, observations, steps and trace records of the loop (the PR evidence renders from them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.checks.models import CheckRun, SetupReport
from bot.contract.approach import Estimate, EstimateCheck, Proposal
from bot.contract.models import TaskContract
from bot.evidence.models import CriterionMapping, Evidence
from bot.loop.result import Cost, Handoff, PlanStep
from bot.model.base import ModelResponse, Usage
from bot.workspace.models import DiffStats

MAX_CHECKPOINT_DIFF = 100_000
"""Characters of a checkpoint's diff kept in the trace; the rest is counted, not written."""


class Spent(BaseModel):
    """What a job's runs have spent so far, stored with the job after every step: a later attempt (after a crash)
    goes on from it, so the budget counts across attempts."""

    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    cost_known: bool = True
    wall_s: float = 0.0


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanInput(_Input):
    steps: list[PlanStep] = Field(min_length=1)
    impact: list[str]


class EditInput(_Input):
    command: Literal["view", "create", "str_replace", "insert"]
    path: str
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = None
    insert_text: str | None = None
    view_range: list[int] | None = None


class SearchInput(_Input):
    query: str = Field(min_length=1)
    path_glob: str | None = None


class RunChecksInput(_Input):
    names: list[str] | None = None
    expect: str | None = None


class FinishInput(_Input):
    summary: str
    risks: list[str] = Field(default_factory=list)
    criteria: list[CriterionMapping] = Field(default_factory=list)
    """Which test (or check) shows which acceptance criterion; the harness confirms each against what it ran."""


class AskHumanInput(_Input):
    question: str = Field(min_length=1)
    reason: str = ""


class ProposeInput(Proposal, _Input):
    """Two approaches, the number of the one recommended, and why."""


TOOL_INPUTS: dict[str, type[_Input]] = {
    "plan": PlanInput,
    "str_replace_based_edit_tool": EditInput,
    "search_code": SearchInput,
    "run_checks": RunChecksInput,
    "finish": FinishInput,
    "ask_human": AskHumanInput,
}
"""The model's API: tool name → the input it must send."""
PLAN_TOOL_INPUTS: dict[str, type[_Input]] = {
    "str_replace_based_edit_tool": EditInput,
    "search_code": SearchInput,
    "propose": ProposeInput,
}
"""The planning phase's API: reading only (the editor's `view`), and `propose`."""


class Observation(BaseModel):
    """What one action produced, as the model will read it."""

    ok: bool
    text: str


class Expectation(BaseModel):
    expect: str
    met: bool
    actual: str


class Checkpoint(BaseModel):
    """A commit the harness kept, and what it changed against the one before it."""

    sha: str
    diff: str = ""
    dropped_chars: int = 0
    discarded: list[str] = Field(default_factory=list)
    """Files the checks created or changed that were put back, not committed: only the model's writes are."""

    @classmethod
    def of(cls, sha: str, diff: str, discarded: list[str] | None = None) -> Checkpoint:
        cut = max(len(diff) - MAX_CHECKPOINT_DIFF, 0)
        return cls(sha=sha, diff=diff[:MAX_CHECKPOINT_DIFF], dropped_chars=cut, discarded=discarded or [])


class ActionRecord(BaseModel):
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)
    decision: Literal["executed", "refused", "malformed"]
    """The policy decision: run, refused by the harness, or rejected as a malformed call."""
    observation: Observation
    checks: CheckRun | None = None
    expectation: Expectation | None = None
    checkpoint: Checkpoint | None = None
    """The checkpoint this action's checks made (progress kept)."""


class RequestMeta(BaseModel):
    purpose: Literal["step", "compress", "resolve"]
    model: str
    tool_choice: dict[str, Any] | None = None
    tools: list[str] = Field(default_factory=list)
    chars: int = 0


class ModelCall(BaseModel):
    request: RequestMeta
    response: ModelResponse


class StepRecord(BaseModel):
    kind: Literal["step"] = "step"
    step: int
    context_tokens: dict[str, int] = Field(default_factory=dict)
    """Estimated tokens per context layer: stable, volatile, history."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    intent: str = ""
    actions: list[ActionRecord] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0
    duration_s: float = 0.0
    model_s: float = 0.0
    checks_s: float = 0.0

    def summary(self) -> str:
        """One line: what the step tried and what came of each action (for the handoff)."""
        done = [f"{a.tool or 'an answer without a tool call'}{_target(a.input)}: {_outcome(a)}" for a in self.actions]
        return f"step {self.step}: " + ("; ".join(done) or "no action (the model call failed)")


class StartRecord(BaseModel):
    kind: Literal["start"] = "start"
    title: str
    model: str
    small_model: str
    model_reason: str
    branch: str
    base_sha: str
    contract: TaskContract | None = None


class BaselineRecord(BaseModel):
    kind: Literal["baseline"] = "baseline"
    setup: SetupReport | None = None
    setup_problem: str | None = None
    checks: CheckRun | None = None


class EvidenceRecord(BaseModel):
    """What the harness showed when `finish` was verified (also when it was refused for want of evidence)."""

    kind: Literal["evidence"] = "evidence"
    step: int
    evidence: Evidence


class EndRecord(BaseModel):
    kind: Literal["end"] = "end"
    outcome: str
    reason: str
    steps: int
    head_sha: str
    final: CheckRun | None = None
    checkpoint: Checkpoint | None = None
    """The commit made at the end (the accepted change, or the work saved for a handoff)."""
    diff: DiffStats | None = None
    handoff: Handoff | None = None
    summary: str = ""
    """The model's own `finish` summary (untrusted)."""
    risks: list[str] = Field(default_factory=list)
    cost: Cost | None = None
    estimate: EstimateCheck | None = None
    """The approved plan's estimate against what this run used."""


class ProposalRecord(BaseModel):
    """The planning phase's end: the two approaches and the estimate, or why there are none."""

    kind: Literal["proposal"] = "proposal"
    revision: int
    feedback: str = ""
    proposal: Proposal | None = None
    estimates: list[Estimate] = Field(default_factory=list)
    """One per approach, in order."""
    reason: str = ""
    steps: int
    cost: Cost


def _target(data: dict[str, Any]) -> str:
    what = [data.get("command"), data.get("path") or data.get("query") or ", ".join(data.get("names") or [])]
    return "".join(f" {w}" for w in what if w)


def _outcome(action: ActionRecord) -> str:
    if action.decision != "executed":
        return f"{action.decision}: " + (action.observation.text.splitlines() or [""])[0][:160]
    if action.checks is not None:
        return ", ".join(f"{r.name} {r.status}" for r in action.checks.results) or "no checks"
    return "ok" if action.observation.ok else (action.observation.text.splitlines() or ["error"])[0][:160]
