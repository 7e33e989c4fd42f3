"""Freezing what a job works on: the issue (or the PR's issue), comments by writers, review comments."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from bot.errors import AiFixError
from bot.github.client import RepoClient
from bot.markers import PR_KIND, find_marker
from bot.queue.models import IssueText, Job, Trigger
from bot.snapshot import WRITE_PERMISSIONS, Comment, ReviewComment, Snapshot
from bot.vocabulary import COMMAND_KINDS, WorkKind

_FIXES = re.compile(r"\b(?:fix|fixes|fixed|close|closes|closed|resolve|resolves|resolved)\s+#(\d+)\b", re.IGNORECASE)


def linked_issue(pr_body: str | None) -> int | None:
    """The issue an ai-fix PR works on: from its hidden marker, else from `Fixes #N`."""
    if (number := find_marker(pr_body, PR_KIND)) is not None:
        return number
    match = _FIXES.search(pr_body or "")
    return int(match.group(1)) if match else None


class IssueChanged(AiFixError):
    """The issue's title or body is not what it was when it was labelled: the job must not work on the new text."""

    def __init__(self, changed: list[str]) -> None:
        self.changed = changed
        super().__init__(
            f"the issue's {' and '.join(changed)} changed after it was labelled; remove the label and add it again"
        )


def _time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _as_labelled(job: Job, accepted: list[Trigger], issue: dict[str, Any]) -> IssueText | None:
    """The issue as the latest accepted label delivery carried it; IssueChanged if its title or body differs now."""
    carried = [t.issue for t in accepted if t.issue is not None]
    if job.kind != "issue" or not carried:
        return None  # a retry or review, or a job queued before triggers carried the issue
    labelled = carried[-1]
    now = {"title": issue.get("title") or "", "body": issue.get("body") or ""}
    changed = [field for field, then in (("title", labelled.title), ("body", labelled.body)) if now[field] != then]
    if changed:
        raise IssueChanged(changed)
    return labelled


class Permissions:
    """Collaborator permissions read once per job (the API is the only trustworthy source)."""

    def __init__(self, client: RepoClient) -> None:
        self._client = client
        self._known: dict[str, str] = {}

    def __call__(self, login: str) -> str:
        if login not in self._known:
            self._known[login] = self._client.permission(login) if login else "none"
        return self._known[login]


def _login(item: dict[str, Any]) -> str:
    user = item.get("user")
    return user.get("login", "") if isinstance(user, dict) else ""


def _comments(
    client: RepoClient, number: int, until: datetime | None, permission: Callable[[str], str]
) -> tuple[list[Comment], list[Comment]]:
    """The issue's comments written up to the label's time (later ones are not part of what was asked), split into
    (written by someone with write access, by anyone else)."""
    trusted: list[Comment] = []
    untrusted: list[Comment] = []
    for raw in client.list_issue_comments(number):
        written = _time(raw.get("created_at"))
        if until is not None and written is not None and written > until:
            continue
        login = _login(raw)
        level = permission(login)
        comment = Comment(
            author=login, permission=level, body=raw.get("body") or "", created_at=raw.get("created_at") or ""
        )
        (trusted if level in WRITE_PERMISSIONS else untrusted).append(comment)
    return trusted, untrusted


def _review_comments(
    client: RepoClient, pr_number: int, review_ids: set[int], permission: Callable[[str], str]
) -> list[ReviewComment]:
    """The comments of the reviews that started the job, by people with write access."""
    found: list[ReviewComment] = []
    if not review_ids:
        return found
    for raw in client.list_review_comments(pr_number):
        login = _login(raw)
        if raw.get("pull_request_review_id") not in review_ids or permission(login) not in WRITE_PERMISSIONS:
            continue
        found.append(
            ReviewComment(
                id=raw["id"],
                author=login,
                permission=permission(login),
                body=raw.get("body") or "",
                path=raw.get("path"),
                line=raw.get("line") or raw.get("original_line"),
                diff_hunk=raw.get("diff_hunk") or "",
            )
        )
    return found


def capture_snapshot(
    client: RepoClient, job: Job, accepted: list[Trigger], permission: Callable[[str], str]
) -> Snapshot:
    """Freeze the job's target; later edits cannot change what the job works on.

    An issue job takes the issue's title, body and labels from the signed `labeled` delivery, and the
    comments written up to the label's time; it stops (IssueChanged) when the title or body was edited
    since. A retry or review reads the PR and the issue it fixes now.
    """
    if job.kind in COMMAND_KINDS:
        raise AiFixError(f"job {job.id} is the command /agent {job.kind}, which has no issue to snapshot")
    kind = cast(WorkKind, job.kind)
    first = accepted[0]
    if kind == "scan":  # about the repository, not an issue: the job reads what it needs itself
        return Snapshot(
            repo=job.repo,
            number=job.number,
            kind=kind,
            installation_id=job.installation_id,
            clone_url=first.clone_url,
            default_branch=first.default_branch,
            sender=first.sender,
            taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    pr_number: int | None = None
    number = job.number
    if job.kind in ("retry", "review", "ci", "rebase"):
        pr_number = job.number
        pull = client.get_pull(pr_number)
        number = linked_issue(pull.get("body")) or pr_number
    issue = client.get_issue(number)
    labelled = _as_labelled(job, accepted, issue)
    trusted, untrusted = _comments(client, number, _time(labelled.at) if labelled else None, permission)
    review_ids = {t.review_id for t in accepted if t.review_id is not None}
    review_comments = _review_comments(client, pr_number, review_ids, permission) if pr_number is not None else []
    author = labelled.author if labelled else _login(issue)
    labels = [label["name"] for label in issue.get("labels") or [] if isinstance(label, dict) and "name" in label]
    return Snapshot(
        repo=job.repo,
        number=number,
        kind=kind,
        installation_id=job.installation_id,
        clone_url=first.clone_url,
        default_branch=first.default_branch,
        title=labelled.title if labelled else issue.get("title") or "",
        body=labelled.body if labelled else issue.get("body") or "",
        labels=labelled.labels if labelled else labels,
        author=author,
        author_permission=permission(author),
        sender=first.sender,
        sender_permission=permission(first.sender),
        comments=trusted,
        untrusted_comments=untrusted,
        pr_number=pr_number,
        feedback="\n\n".join(t.feedback for t in accepted if t.feedback),
        review_comments=review_comments,
        review_id=min(review_ids) if review_ids else None,
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
        plan_requested=any(t.plan for t in accepted),
    )
