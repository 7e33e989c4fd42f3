"""Which CI and push deliveries concern ai-fix's pull requests: pure functions from an Event to a Trigger, or to
the reason it starts nothing (`bot.intake.triggers` makes the Decision).

Nothing here calls GitHub. A delivery counts when it names an ai-fix branch (`ai-fix/...`): a workflow
run, check suite or failing check run on one becomes a `ci` job for its pull request; a commit status on
one, or a check whose pull request the payload does not name, becomes a `scan` that finds it. A push to
the repository's default branch (where ai-fix opens its pull requests) becomes a `scan` for conflicts.
The job reads who opened the pull request and what it records; these rules only filter.
"""

from __future__ import annotations

from typing import Any

from bot.ci.read import OWN_CHECK
from bot.intake.events import Event
from bot.intake.shapes import as_dict, items
from bot.queue.models import CheckSignal, Trigger
from bot.workspace.branch import PREFIX as BRANCH_PREFIX

Outcome = Trigger | str
"""A trigger, or why the delivery starts nothing."""

ACTIONS_APP = "github-actions"
"""GitHub Actions' app slug: its check suites and check runs are reported once, as workflow runs."""
REPORTED = frozenset({"failure", "timed_out", "success"})
"""Conclusions a `ci` job looks at: failures to fix, and passes that settle a re-run or a round's result."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _github_base(payload: dict[str, Any]) -> dict[str, Any] | str:
    """The trigger fields every GitHub-originated trigger shares (no person to check: GitHub reports it)."""
    repo = as_dict(payload.get("repository"))
    installation = as_dict(payload.get("installation"))
    if not repo.get("full_name"):
        return "delivery has no repository"
    if not isinstance(installation.get("id"), int):
        return "delivery has no installation id; only GitHub App webhooks can start work"
    return {
        "repo": repo["full_name"],
        "installation_id": installation["id"],
        "sender": str(as_dict(payload.get("sender")).get("login") or ""),
        "clone_url": repo.get("clone_url") or "",
        "default_branch": repo.get("default_branch") or "main",
        "origin": "github",
    }


def _own_pull(pulls: Any) -> dict[str, Any] | None:
    """The first pull request of a payload's `pull_requests` whose head is an ai-fix branch."""
    for pull in pulls if isinstance(pulls, list) else []:
        if isinstance(pull, dict) and str(as_dict(pull.get("head")).get("ref") or "").startswith(BRANCH_PREFIX):
            return pull
    return None


def _ci(event: Event, signal: CheckSignal, head_sha: str, branch: str, pulls: Any) -> Outcome:
    base = _github_base(event.payload)
    if isinstance(base, str):
        return base
    pull = _own_pull(pulls)
    if pull is None and not branch.startswith(BRANCH_PREFIX):
        return f"{event.name}: {signal.name!r} is not on an ai-fix branch"
    common = {"delivery_id": event.delivery_id, "head_sha": head_sha, "checks": [signal], **base}
    if pull is None:  # the payload names no pull request: the scan finds it by its head
        return Trigger.model_validate({**common, "kind": "scan", "number": _repo_id(event), "branch": branch})
    return Trigger.model_validate({**common, "kind": "ci", "number": pull.get("number")})


def _repo_id(event: Event) -> Any:
    return as_dict(event.payload.get("repository")).get("id")


def _workflow_run(event: Event) -> Outcome:
    if event.action != "completed":
        return f"workflow_run.{event.action} is not a trigger"
    run = as_dict(event.payload.get("workflow_run"))
    conclusion = str(run.get("conclusion") or "")
    if conclusion not in REPORTED:
        return f"a workflow run that ended {conclusion or 'without a conclusion'} is not a trigger"
    signal = CheckSignal(
        source="workflow_run",
        name=str(run.get("name") or as_dict(event.payload.get("workflow")).get("name") or ""),
        conclusion=conclusion,
        run_id=_int(run.get("id")),
        attempt=_int(run.get("run_attempt")) or 1,
    )
    return _ci(
        event, signal, str(run.get("head_sha") or ""), str(run.get("head_branch") or ""), run.get("pull_requests")
    )


def _check(event: Event, bot_login: str) -> Outcome:
    key = event.name
    if event.action != "completed":
        return f"{key}.{event.action} is not a trigger"
    item = as_dict(event.payload.get(key))
    app = as_dict(item.get("app"))
    name = str(item.get("name") or app.get("name") or "")
    if app.get("slug") == ACTIONS_APP:
        return f"{key} of GitHub Actions: reported as its workflow run"
    own_slug = bot_login.removesuffix("[bot]")
    if (own_slug and app.get("slug") == own_slug) or name == OWN_CHECK:
        return f"{key} of ai-fix itself"
    conclusion = str(item.get("conclusion") or "")
    wanted = REPORTED if key == "check_suite" else REPORTED - {"success"}  # a suite says when all its runs are done
    if conclusion not in wanted:
        return f"a {key} that ended {conclusion or 'without a conclusion'} is not a trigger"
    signal = CheckSignal(
        source="check_run" if key == "check_run" else "check_suite",
        name=name,
        conclusion=conclusion,
        check_run_id=_int(item.get("id")) if key == "check_run" else None,
    )
    branch = str(item.get("head_branch") or as_dict(item.get("check_suite")).get("head_branch") or "")
    return _ci(event, signal, str(item.get("head_sha") or ""), branch, item.get("pull_requests"))


def _status(event: Event) -> Outcome:
    payload = event.payload
    state, sha = str(payload.get("state") or ""), str(payload.get("sha") or "")
    if state not in ("failure", "error", "success"):
        return f"a commit status in state {state or '?'} is not a trigger"
    branches = [
        str(b.get("name"))
        for b in items(payload, "branches", "branches")
        if isinstance(b, dict) and str(b.get("name") or "").startswith(BRANCH_PREFIX)
        and as_dict(b.get("commit")).get("sha") == sha
    ]  # fmt: skip
    if not branches:
        return "the commit status is not on the head of an ai-fix branch"
    signal = CheckSignal(source="status", name=str(payload.get("context") or ""), conclusion=state)
    return _ci(event, signal, sha, branches[0], None)


def _push(event: Event) -> Outcome:
    payload = event.payload
    default = str(as_dict(payload.get("repository")).get("default_branch") or "")
    ref = str(payload.get("ref") or "")
    if not default or ref != f"refs/heads/{default}":
        return f"a push to {ref or '?'}, not to the default branch {default or '?'}"
    if payload.get("deleted"):
        return "the default branch was deleted"
    base = _github_base(payload)
    if isinstance(base, str):
        return base
    trigger = {"kind": "scan", "number": _repo_id(event), "delivery_id": event.delivery_id, "branch": default, **base}
    return Trigger.model_validate({**trigger, "head_sha": str(payload.get("after") or "")})


def ci_trigger(event: Event, bot_login: str) -> Outcome | None:
    """What a CI or push delivery means; None for other events."""
    if event.name == "workflow_run":
        return _workflow_run(event)
    if event.name in ("check_run", "check_suite"):
        return _check(event, bot_login)
    if event.name == "status":
        return _status(event)
    if event.name == "push":
        return _push(event)
    return None
