"""What the pull request side remembers between rounds and across a worker's death (all harness-recorded data)."""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError

from bot.ci.models import CiRecord, CiRound
from bot.loop.result import Cost, RunResult
from bot.markers import hidden_record, read_hidden_record
from bot.vocabulary import CommentPhase, Outcome, WorkKind


class RoundRecord(BaseModel):
    """One finished round on a PR: the first run, a `/agent retry` or a review."""

    n: int
    kind: WorkKind
    outcome: Outcome
    reason: str
    head_sha: str = ""
    base_sha: str = ""
    """The commit its evidence was taken against: the pull request's original base, kept for later rounds."""
    steps: int = 0
    files: int = 0
    added: int = 0
    removed: int = 0
    cost: Cost = Field(default_factory=Cost)
    ci: CiRound | None = None
    """For a `ci` round: the failing head and checks it answered, and whether the sandbox reproduced them."""


class Progress(BaseModel):
    """The state the progress comment shows."""

    issue_number: int
    rounds: list[RoundRecord] = Field(default_factory=list)
    """Rounds already finished, oldest first."""
    round_n: int = 1
    round_kind: WorkKind = "issue"
    current: CommentPhase | None = "contract"
    """The phase under way; None once the job is over."""
    pr_url: str = ""
    setup: str = ""
    """How this round's environment was prepared (setup ran or was reused, how long it took)."""
    run_url: str = ""
    """The signed link to the run viewer's page of this job, when links are on."""
    outcome: Outcome | None = None
    reason: str = ""
    contract: str = ""
    """The contract section (or what the task lacks, or why the config cannot be read), rendered by the stage."""
    contract_open: bool = False
    """Shown open rather than folded: when it is what stops the job (clarification, a broken config)."""
    not_verified: list[str] = Field(default_factory=list)
    """What the harness could not show, when the outcome is not a verified fix."""
    handoff: list[str] = Field(default_factory=list)
    """The handoff's lines, when no pull request carries them."""
    plan: str = ""
    """The plan section (two approaches and their estimates), when the job plans first; empty otherwise."""
    waiting: bool = False
    """The plan awaits a maintainer's answer: shown open, the current phase marked as waiting."""
    cancelled: str = ""
    """Why the job was cancelled before it changed anything (no answer in time, `/agent stop`)."""
    ci: CiRecord = Field(default_factory=CiRecord)
    """What ai-fix did about the pull request's CI and conflicts: its notes close the comment."""


ROUNDS_RECORD = "rounds"


def rounds_record(rounds: list[RoundRecord]) -> str:
    """The finished rounds as a hidden record in the PR body, so a later round knows them from GitHub alone."""
    return hidden_record(ROUNDS_RECORD, [r.model_dump(mode="json") for r in rounds])


def read_rounds(body: str | None) -> list[RoundRecord]:
    """The rounds a PR body records; an edited or damaged record counts as no history, never as an error."""
    data = read_hidden_record(ROUNDS_RECORD, body)
    try:
        return [RoundRecord.model_validate(r) for r in data] if isinstance(data, list) else []
    except (ValidationError, TypeError):
        return []


def record_round(result: RunResult, *, n: int, kind: WorkKind, ci: CiRound | None = None) -> RoundRecord:
    """What later rounds and the PR body keep of a finished round."""
    return RoundRecord(
        n=n,
        kind=kind,
        outcome=result.outcome,
        reason=result.reason,
        head_sha=result.head_sha,
        base_sha=result.evidence.base_sha or result.base_sha,
        steps=result.steps,
        files=len(result.diff.files),
        added=result.diff.added,
        removed=result.diff.removed,
        cost=result.cost,
        ci=ci,
    )
