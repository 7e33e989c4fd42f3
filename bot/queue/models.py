"""Data the queue keeps: triggers, jobs, their history, and what the read endpoints show."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JobStatus = Literal[
    "queued",
    "running",
    "awaiting_approval",
    "done",
    "unverified",
    "failed",
    "cancelled",
    "rejected",
    "needs_clarification",
    "handed_off",
]
TriggerKind = Literal["issue", "retry", "review", "stop", "help", "approve", "revise"]

WORK_KINDS: tuple[str, ...] = ("issue", "retry", "review")
"""Kinds that do work on an issue or PR; at most one of them runs per issue or PR at a time."""
COMMAND_KINDS: tuple[str, ...] = ("stop", "help", "approve", "revise")
"""Short commands; a separate control worker runs them so `/agent stop` never waits behind long jobs."""
ANSWER_KINDS: tuple[str, ...] = ("approve", "revise")
"""Commands that answer a plan awaiting approval."""
FINAL_STATUSES: frozenset[str] = frozenset(
    {"done", "unverified", "failed", "cancelled", "rejected", "needs_clarification", "handed_off"}
)
MAX_ATTEMPTS = 3
MAX_DELIVERY_FAILURES = 3
"""A stored delivery whose meaning failed to apply this many times is quarantined: kept with its error, not tried again."""

GitHubId = Annotated[int, Field(ge=1, le=2**63 - 1)]
"""An issue or PR number, an installation, comment or review id: positive, and within the 64-bit integers
SQLite and PostgreSQL (BIGINT) store; GitHub's own are far below that, so a payload beyond it is forged or broken."""
RepoName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")]
"""`owner/name` as GitHub spells them: nothing else reaches the store or a git URL."""
Login = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{0,100}(\[bot\])?$")]
"""A GitHub login (a user's, or an App's `slug[bot]`); empty when the payload has none."""


class IssueText(BaseModel):
    """The issue as the signed `issues.labeled` delivery carried it: what the job works on, whatever is edited later."""

    model_config = ConfigDict(strict=True)

    title: str
    body: str
    labels: list[str]
    author: Login
    at: str
    """The issue's `updated_at` in that payload (the label's time, on GitHub's clock): comments up to it are read."""


class Trigger(BaseModel):
    """One accepted-looking request from a delivery; the worker still checks the sender's permission."""

    model_config = ConfigDict(strict=True)
    """Built from payloads: "12" is not an issue number, nothing is coerced."""

    kind: TriggerKind
    repo: RepoName
    """"owner/name"."""
    number: GitHubId
    """The issue or pull request the trigger is about."""
    installation_id: GitHubId
    sender: Login
    delivery_id: str = ""
    comment_id: GitHubId | None = None
    """The issue comment (retry, stop, help) or review comment (review) that carried the trigger."""
    review_id: GitHubId | None = None
    feedback: str = ""
    """Extra lines of `/agent retry`, or the body of a submitted review."""
    clone_url: str = ""
    default_branch: str = "main"
    issue: IssueText | None = None
    """For an `issue` trigger: the issue as labelled (None in triggers stored before ai-fix kept it)."""
    plan: bool = False
    """`/agent plan`: plan first and wait for approval, whatever the repository's config says."""
    approach: int | None = None
    """`/agent approve N`: the approach chosen (None: the recommended one)."""


class PlanAnswer(BaseModel):
    """What wakes a job awaiting approval: a writer's `/agent approve|revise|stop`, or its deadline passing."""

    action: Literal["approve", "revise", "stop", "expired"]
    approach: int | None = None
    """For `approve`: the approach chosen; None for the recommended one."""
    feedback: str = ""
    """For `revise`: what to change in the plan."""
    by: str = ""
    """Who answered (empty for the deadline)."""
    at: float = 0.0


class JobEvent(BaseModel):
    at: float
    event: str
    data: dict[str, Any] = Field(default_factory=dict)


class Job(BaseModel):
    id: int
    repo: str
    number: int
    kind: TriggerKind
    status: JobStatus
    reason: str = ""
    installation_id: int | None = None
    attempts: int = 0
    cancel_requested: bool = False
    created_at: float
    updated_at: float
    snapshot: dict[str, Any] | None = None
    state: dict[str, Any] = Field(default_factory=dict)
    triggers: list[Trigger] = Field(default_factory=list)
    events: list[JobEvent] = Field(default_factory=list)

    @classmethod
    def from_row(cls, r: Mapping[str, Any], triggers: list[Trigger], events: list[JobEvent]) -> Job:
        """A job from its `jobs` row (snapshot and state stored as JSON) with its triggers and history."""
        return cls(
            id=r["id"],
            repo=r["repo"],
            number=r["number"],
            kind=r["kind"],
            status=r["status"],
            reason=r["reason"],
            installation_id=r["installation_id"],
            attempts=r["attempts"],
            cancel_requested=bool(r["cancel_requested"]),
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            snapshot=json.loads(r["snapshot"]) if r["snapshot"] else None,
            state=json.loads(r["state"]),
            triggers=triggers,
            events=events,
        )
