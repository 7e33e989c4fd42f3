"""Data the queue keeps: triggers, jobs, their history, and what the read endpoints show."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JobStatus = Literal[
    "queued",
    "running",
    "done",
    "unverified",
    "failed",
    "cancelled",
    "rejected",
    "needs_clarification",
    "handed_off",
    "skipped",
]
TriggerKind = Literal["issue", "retry", "review", "ci", "rebase", "scan", "stop", "help"]

WORK_KINDS: tuple[str, ...] = ("issue", "retry", "review", "ci", "rebase", "scan")
"""Kinds that do work on an issue or PR; at most one of them runs per issue or PR at a time."""
OWN_FAMILY_KINDS: tuple[str, ...] = ("ci", "rebase", "scan")
"""Kinds whose triggers merge only into a queued job of the same kind (a CI failure is not a review)."""
COMMAND_KINDS: tuple[str, ...] = ("stop", "help")
"""Short commands; a separate control worker runs them so `/agent stop` never waits behind long jobs."""
FINAL_STATUSES: frozenset[str] = frozenset(
    {"done", "unverified", "failed", "cancelled", "rejected", "needs_clarification", "handed_off", "skipped"}
)
MAX_ATTEMPTS = 3


class CheckSignal(BaseModel):
    """One check GitHub reported on a pull request's head commit, as a `ci` or `scan` trigger carries it."""

    model_config = ConfigDict(strict=True)

    source: Literal["workflow_run", "check_run", "check_suite", "status"]
    name: str
    conclusion: str
    """failure | timed_out | success | ... (a commit status: failure | error | success)."""
    run_id: int | None = None
    """The GitHub Actions workflow run (re-runnable), for `workflow_run`."""
    attempt: int = 1
    """The workflow run's attempt: 2 and more are re-runs."""
    check_run_id: int | None = None


class Trigger(BaseModel):
    """One accepted-looking request from a delivery; the worker still checks the sender's permission."""

    model_config = ConfigDict(strict=True)
    """Built from payloads: "12" is not an issue number, nothing is coerced."""

    kind: TriggerKind
    repo: str
    """"owner/name"."""
    number: int
    """The issue or pull request the trigger is about (for `scan`: the repository's id)."""
    installation_id: int
    sender: str
    delivery_id: str = ""
    comment_id: int | None = None
    """The issue comment (retry, stop, help) or review comment (review) that carried the trigger."""
    review_id: int | None = None
    feedback: str = ""
    """Extra lines of `/agent retry`, or the body of a submitted review."""
    clone_url: str = ""
    default_branch: str = "main"
    origin: Literal["person", "github"] = "person"
    """`github`: GitHub's own report about a pull request ai-fix owns (CI, a base-branch push): no person to check."""
    head_sha: str = ""
    """For `ci` and `scan`: the commit the checks ran on."""
    branch: str = ""
    """For `scan`: the base branch that was pushed, or the branch a commit status names."""
    checks: list[CheckSignal] = Field(default_factory=list)


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
