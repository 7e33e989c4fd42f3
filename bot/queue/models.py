"""Data the queue keeps: triggers, jobs, their history, and what the read endpoints show."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.vocabulary import JobStatus, TriggerKind

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
    repo: RepoName
    """"owner/name"."""
    number: GitHubId
    """The issue or pull request the trigger is about (for `scan`: the repository's id)."""
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
    origin: Literal["person", "github"] = "person"
    """`github`: GitHub's own report about a pull request ai-fix owns (CI, a base-branch push): no person to check."""
    head_sha: str = ""
    """For `ci` and `scan`: the commit the checks ran on."""
    branch: str = ""
    """For `scan`: the base branch that was pushed, or the branch a commit status names."""
    checks: list[CheckSignal] = Field(default_factory=list)
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
