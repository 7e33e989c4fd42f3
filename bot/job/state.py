"""Each job kind's durable state: one typed model per kind, stored as the job's `ctx.state` and read back by the
attempt after a crash, a shutdown or a wake-up. No job code names a key of `ctx.state`; it reads and writes these.

The field names are the keys earlier versions stored (`delivery`, `planning`, `contract`, `ci_round`,
`rebase_pushed`), so the state of a job in flight across an upgrade still reads. What the queue itself keeps there
(the answer that woke a job) is the queue's and is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.checks.models import CheckRun
from bot.contract.approach import ApprovedApproach, Estimate, Proposal
from bot.contract.models import TaskContract
from bot.job.rounds import RoundInput
from bot.loop.records import Spent
from bot.loop.result import Cost, RunResult
from bot.publish.models import RoundRecord
from bot.queue.models import PlanAnswer
from bot.vocabulary import WorkKind


class RoundState(BaseModel):
    """A round's own progress: its job directory, the PR it publishes to, the run's result once it exists."""

    job_dir: str = ""
    branch: str = ""
    pr_number: int | None = None
    comment_id: int | None = None
    rounds: list[RoundRecord] | None = None
    """The PR's rounds before this job, as read when the job first ran."""
    result: RunResult | None = None
    """Set once the loop has ended: a later attempt only delivers it."""
    delivered: bool = False
    replied: list[int] = Field(default_factory=list)
    spent: Spent = Field(default_factory=Spent)
    """Steps, tokens, cost and wall time the job's runs have spent, stored after every step: the budget counts
    across attempts."""


class PlanRound(BaseModel):
    """One plan shown on the issue: the first, or one made again after `/agent revise`."""

    revision: int
    proposal: Proposal
    estimates: list[Estimate]
    feedback: str = ""
    feedback_by: str = ""
    cost: Cost = Field(default_factory=Cost)


class PlanningState(BaseModel):
    """The approval stage's progress across the job's wake-ups."""

    rounds: list[PlanRound] = Field(default_factory=list)
    revise: PlanAnswer | None = None
    """A `/agent revise` taken and not planned yet."""
    deadline: float = 0.0
    approved: ApprovedApproach | None = None
    cancelled: str = ""


class RoundJobState(BaseModel):
    """An `issue`, `retry` or `review` job, and a `ci` job (which may run a round)."""

    model_config = ConfigDict(extra="ignore")

    delivery: RoundState = Field(default_factory=RoundState)
    contract: TaskContract | None = None
    """The contract the job first built: a resumed attempt never rebuilds it, even if the default branch moved."""
    contract_comment: str = ""
    planning: PlanningState = Field(default_factory=PlanningState)
    ci_round: RoundInput | None = None
    """A `ci` job's round once decided: a resumed attempt goes on with it."""

    @property
    def job_dir(self) -> str:
        return self.delivery.job_dir


class Merged(BaseModel):
    """What a merge came to, before it is reported."""

    base_sha: str
    head_sha: str = ""
    resolved: list[str] = Field(default_factory=list)
    checks: CheckRun | None = None
    summary: str = ""
    cost: Cost = Field(default_factory=lambda: Cost(rounds=0))
    problem: str = ""
    """Why nothing was pushed; "" when the merge was pushed."""


class RebaseJobState(BaseModel):
    """A `rebase` job: where it works, what its resolver spent, and a merge already pushed."""

    model_config = ConfigDict(extra="ignore")

    job_dir: str = ""
    spent: Spent = Field(default_factory=Spent)
    """What the conflict resolver's model calls spent, across attempts (the job's budget holds them)."""
    rebase_pushed: Merged | None = None
    """Set once the merge is pushed: a later attempt reports it and never merges again."""


class ScanJobState(BaseModel):
    """A `scan` job keeps nothing: it only queues other jobs, and queueing is idempotent."""

    model_config = ConfigDict(extra="ignore")

    @property
    def job_dir(self) -> str:
        return ""


JobState = RoundJobState | RebaseJobState | ScanJobState

STATES: Mapping[WorkKind, type[JobState]] = {
    "issue": RoundJobState,
    "retry": RoundJobState,
    "review": RoundJobState,
    "ci": RoundJobState,
    "rebase": RebaseJobState,
    "scan": ScanJobState,
}
"""Each job kind's state model (`tests/job/test_kinds.py` holds it to every work kind)."""


def trace_file(job_dir: str | Path) -> Path:
    """`<job_dir>.trace.jsonl` (appended, not a suffix swap: a repository name may hold a dot); it outlives the
    job directory."""
    return Path(f"{job_dir}.trace.jsonl")


def job_trace(kind: str, state: Mapping[str, Any]) -> Path | None:
    """The trace of a job of `kind` whose stored state is `state`, once it has a job directory."""
    model = next((m for k, m in STATES.items() if k == kind), None)
    try:
        job_dir = model.model_validate(state).job_dir if model else ""
    except ValidationError:  # a state this version cannot read has no trace it can show
        return None
    return trace_file(job_dir) if job_dir else None
