"""Which deliveries start work: pure functions from an Event to a Decision (no I/O, no permission checks).

Permissions are read from GitHub by the worker, never here: the request path must answer in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.intake.ci_triggers import ci_trigger
from bot.intake.commands import parse_command
from bot.intake.events import Event
from bot.intake.shapes import Unusable, as_dict, items, text
from bot.labels import PLAN_LABEL
from bot.markers import is_login, opened_by_ai_fix, own_pull
from bot.queue.models import GitHubId, IssueText, Login, RepoName, Trigger
from bot.vocabulary import IGNORED, PING


@dataclass(frozen=True)
class Ignored:
    reason: str
    outcome: Literal["ignored"] = IGNORED


@dataclass(frozen=True)
class Ping:
    reason: str = PING
    outcome: Literal["ping"] = PING


@dataclass(frozen=True)
class Triggered:
    trigger: Trigger
    outcome: Literal["trigger"] = "trigger"


class InstallationChange(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True)

    installation_id: GitHubId
    account: Login
    action: str
    """created | deleted | suspend | unsuspend | new_permissions_accepted | added | removed."""
    repos_added: list[RepoName] = Field(default_factory=list)
    repos_removed: list[RepoName] = Field(default_factory=list)
    repo_ids: dict[RepoName, GitHubId] = Field(default_factory=dict)
    """The added repositories' ids, as the payload gives them."""
    sender: Login = ""
    delivery_id: str = ""
    outcome: Literal["installation"] = "installation"

    @property
    def stops_work(self) -> bool:
        return self.action in ("deleted", "suspend")

    def label_chores(self) -> list[Trigger]:
        """A `labels` job for each repository the App was just installed on (the repository's id is its number)."""
        if self.action not in ("created", "added"):
            return []
        return [
            Trigger(
                kind="labels",
                repo=repo,
                number=self.repo_ids[repo],
                installation_id=self.installation_id,
                sender=self.sender,
                delivery_id=self.delivery_id,
                origin="github",
            )
            for repo in self.repos_added
            if repo in self.repo_ids
        ]


class LabelRemoved(BaseModel):
    """The trigger label taken off an issue: its queued job is cancelled, its running one stops at a checkpoint.

    No permission check: GitHub lets only people with triage access or more change labels.
    """

    model_config = ConfigDict(strict=True, frozen=True)

    repo: RepoName
    number: GitHubId
    installation_id: GitHubId
    sender: Login
    label: str
    outcome: ClassVar[Literal["label_removed"]] = "label_removed"

    @property
    def reason(self) -> str:
        return f"the {self.label} label was removed by @{self.sender}"


Decision = Ignored | Ping | Triggered | InstallationChange | LabelRemoved

ON_ISSUES = frozenset({"plan", "approve", "revise"})
"""Commands about a plan, which lives on the issue."""


def _is_human(user: dict[str, Any]) -> bool:
    return user.get("type") == "User"


def _base(payload: dict[str, Any]) -> dict[str, Any] | Ignored:
    repo = as_dict(payload.get("repository"))
    installation = as_dict(payload.get("installation"))
    sender = as_dict(payload.get("sender"))
    if not repo.get("full_name"):
        return Ignored("delivery has no repository")
    if not isinstance(installation.get("id"), int):
        return Ignored("delivery has no installation id; only GitHub App webhooks can start work")
    if not _is_human(sender):
        return Ignored(f"sender {sender.get('login', '?')} is a {sender.get('type', 'non-user')}; bots never trigger")
    return {
        "repo": repo["full_name"],
        "installation_id": installation["id"],
        "sender": sender.get("login", ""),
        "clone_url": repo.get("clone_url") or "",
        "default_branch": repo.get("default_branch") or "main",
    }


def _issue_text(issue: dict[str, Any]) -> IssueText:
    labels = [label.get("name") for label in items(issue, "labels", "issue.labels") if isinstance(label, dict)]
    return IssueText(
        title=issue.get("title") or "",
        body=issue.get("body") or "",
        labels=cast(list[str], labels),
        author=as_dict(issue.get("user")).get("login") or "",
        at=issue.get("updated_at") or "",
    )


def _label_removed(payload: dict[str, Any], issue: dict[str, Any], label: str, bot_login: str) -> Decision:
    sender = as_dict(payload.get("sender"))
    if is_login(sender, bot_login):
        return Ignored("ai-fix removed the label itself")
    return LabelRemoved(
        repo=as_dict(payload.get("repository")).get("full_name") or "",
        number=cast(int, issue.get("number")),
        installation_id=cast(int, as_dict(payload.get("installation")).get("id")),
        sender=sender.get("login") or "",
        label=label,
    )


def _issues(event: Event, trigger_label: str, bot_login: str) -> Decision:
    payload = event.payload
    if event.action not in ("labeled", "unlabeled"):
        return Ignored(f"issues.{event.action} is not a trigger")
    label = text(as_dict(payload.get("label")), "name", "label.name")
    if label.casefold() not in (trigger_label.casefold(), PLAN_LABEL):
        return Ignored(f"label {label!r} is not the trigger label {trigger_label!r} (or {PLAN_LABEL!r})")
    issue = as_dict(payload.get("issue"))
    if issue.get("pull_request"):
        return Ignored("the trigger label works on issues, not pull requests")
    if event.action == "unlabeled":
        return _label_removed(payload, issue, label, bot_login)
    if issue.get("state") == "closed":
        return Ignored("the issue is closed")
    base = _base(payload)
    if isinstance(base, Ignored):
        return base
    return Triggered(
        Trigger(
            kind="issue",
            number=cast(int, issue.get("number")),
            delivery_id=event.delivery_id,
            issue=_issue_text(issue),
            **base,
        )
    )


def _issue_comment(event: Event, bot_login: str) -> Decision:
    payload = event.payload
    if event.action != "created":
        return Ignored(f"issue_comment.{event.action} is not a trigger")
    comment = as_dict(payload.get("comment"))
    command = parse_command(text(comment, "body", "comment.body"))
    if command is None:
        return Ignored("comment has no /agent command")
    base = _base(payload)
    if isinstance(base, Ignored):
        return base
    issue = as_dict(payload.get("issue"))
    text(issue, "body", "issue.body")  # where ai-fix's marker is read
    if command.name in ("retry", "rebase") and not (issue.get("pull_request") and opened_by_ai_fix(issue, bot_login)):
        return Ignored(f"/agent {command.name} works only on a pull request opened by ai-fix")
    if command.name in ON_ISSUES and issue.get("pull_request"):
        return Ignored(f"/agent {command.name} works on issues, where ai-fix plans; not on pull requests")
    return Triggered(
        Trigger(
            kind="issue" if command.name == "plan" else command.name,
            number=cast(int, issue.get("number")),
            comment_id=comment.get("id"),
            feedback=command.feedback,
            delivery_id=event.delivery_id,
            plan=command.name == "plan",
            approach=command.approach,
            **base,
        )
    )


def _review(event: Event, bot_login: str) -> Decision:
    payload = event.payload
    pull = as_dict(payload.get("pull_request"))
    if event.name == "pull_request_review":
        if event.action != "submitted":
            return Ignored(f"pull_request_review.{event.action} is not a trigger")
        review = as_dict(payload.get("review"))
        state = str(review.get("state") or "").lower()
        body = text(review, "body", "review.body").strip()
        if not (state == "changes_requested" or (state == "commented" and body)):
            return Ignored(f"a review in state {state or '?'} without a request for changes is not a trigger")
        review_id, comment_id, feedback = review.get("id"), None, body
    else:
        if event.action != "created":
            return Ignored(f"pull_request_review_comment.{event.action} is not a trigger")
        comment = as_dict(payload.get("comment"))
        # Every review comment belongs to a review (a lone comment gets one of its own); merging on
        # review_id makes one job for a whole review, however many comments it has.
        review_id, comment_id, feedback = comment.get("pull_request_review_id"), comment.get("id"), ""
    text(pull, "body", "pull_request.body")  # where ai-fix's marker is read
    if not own_pull(pull, bot_login):
        return Ignored("the pull request was not opened by ai-fix from a branch of this repository")
    base = _base(payload)
    if isinstance(base, Ignored):
        return base
    return Triggered(
        Trigger(
            kind="review",
            number=cast(int, pull.get("number")),
            review_id=review_id,
            comment_id=comment_id,
            feedback=feedback,
            delivery_id=event.delivery_id,
            **base,
        )
    )


def _installation(event: Event) -> Decision:
    payload = event.payload
    installation = as_dict(payload.get("installation"))
    if installation.get("id") is None:
        return Ignored("installation event without an installation id")
    account = as_dict(installation.get("account")).get("login") or ""

    def repos(key: str) -> list[dict[str, Any]]:
        return [r for r in items(payload, key, key) if isinstance(r, dict) and r.get("full_name")]

    added = repos("repositories_added") or repos("repositories")
    return InstallationChange(
        installation_id=cast(int, installation.get("id")),
        account=account,
        action=event.action,
        repos_added=[r["full_name"] for r in added],
        repos_removed=[r["full_name"] for r in repos("repositories_removed")],
        repo_ids={r["full_name"]: r["id"] for r in added if isinstance(r.get("id"), int)},
        sender=as_dict(payload.get("sender")).get("login") or "",
        delivery_id=event.delivery_id,
    )


def decide(event: Event, *, trigger_label: str, bot_login: str) -> Decision:
    """What a delivery means for the queue; `bot_login` is this App's bot user (`<slug>[bot]`, from GET /app)."""
    try:
        return _decide(event, trigger_label, bot_login)
    except ValidationError as exc:
        # A trigger-shaped delivery missing what a job needs (no issue number), or carrying a value no
        # GitHub object has (an issue number of 2**63, a repository name with a newline): recorded, not run.
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        return Ignored(f"{event.name}.{event.action} payload is unusable: {where}: {problem['msg']}")
    except Unusable as exc:
        return Ignored(f"{event.name}.{event.action} payload is unusable: {exc}")


def _decide(event: Event, trigger_label: str, bot_login: str) -> Decision:
    if event.name == "ping":
        return Ping()
    if event.name == "issues":
        return _issues(event, trigger_label, bot_login)
    if event.name == "issue_comment":
        return _issue_comment(event, bot_login)
    if event.name in ("pull_request_review", "pull_request_review_comment"):
        return _review(event, bot_login)
    if event.name in ("installation", "installation_repositories"):
        return _installation(event)
    if (ci := ci_trigger(event, bot_login)) is not None:
        return Triggered(ci) if isinstance(ci, Trigger) else Ignored(ci)
    return Ignored(f"event {event.name!r} is not handled")
