"""What triggered a job, frozen when the job starts: later edits by others cannot change it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from bot.vocabulary import WorkKind

WRITE_PERMISSIONS: frozenset[str] = frozenset({"admin", "maintain", "write"})
"""Roles whose words are instructions (and who may trigger ai-fix); everyone else's text is data."""


class Comment(BaseModel):
    author: str
    permission: str
    """admin | maintain | write | triage | read | none, from the collaborator-permission API."""
    body: str
    created_at: str = ""


class ReviewComment(BaseModel):
    id: int
    author: str
    permission: str
    body: str
    path: str | None = None
    line: int | None = None
    diff_hunk: str = ""


class Snapshot(BaseModel):
    repo: str
    """"owner/name"."""
    number: int
    """The issue number (for retry and review jobs: the issue the PR fixes, else the PR)."""
    kind: WorkKind
    installation_id: int | None = None
    clone_url: str = ""
    default_branch: str = "main"
    title: str = ""
    body: str = ""
    labels: list[str] = Field(default_factory=list)
    author: str = ""
    author_permission: str = "none"
    sender: str = ""
    sender_permission: str = "none"
    comments: list[Comment] = Field(default_factory=list)
    """Comments on the issue by people with write access (others are kept apart as untrusted)."""
    untrusted_comments: list[Comment] = Field(default_factory=list)
    pr_number: int | None = None
    """The ai-fix PR a retry, review, ci or rebase job iterates on."""
    feedback: str = ""
    """Extra lines of `/agent retry`."""
    review_comments: list[ReviewComment] = Field(default_factory=list)
    review_id: int | None = None
    taken_at: str = ""
    plan_requested: bool = False
    """A writer asked for a plan first (`/agent plan`): the job waits for approval whatever the config says."""
