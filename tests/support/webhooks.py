"""Signed webhook deliveries built from the recorded payloads in tests/fixtures/webhooks."""

from __future__ import annotations

import copy
import json
import time
import uuid
from typing import Any

import httpx

from bot.intake.apply import Incoming
from bot.intake.events import Event
from bot.intake.signature import sign
from bot.intake.triggers import decide

from .fake_github import github_time, load_payload

SECRET = "It's a Secret to Everybody"
REPO = "Codertocat/Hello-World"
INSTALLATION = 1
PR_BODY = "<!-- ai-fix:pr issue=1 -->\nFixes #1\n\nThe README spelling is fixed."


def _common(payload: dict[str, Any], sender: str, sender_type: str, installation: int | None) -> dict[str, Any]:
    payload["sender"].update(login=sender, type=sender_type)
    if installation is None:
        payload.pop("installation", None)
    else:
        payload["installation"] = {"id": installation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    return payload


def labeled(
    number: int = 1,
    *,
    label: str = "ai-fix",
    sender: str = "Codertocat",
    sender_type: str = "User",
    installation: int | None = INSTALLATION,
) -> dict[str, Any]:
    payload = copy.deepcopy(load_payload("issues/labeled"))
    payload["issue"]["number"] = number
    # GitHub's example adds `bug`; here `label` is added to it, and the issue carries both, as GitHub sends it.
    payload["label"]["name"] = label
    payload["issue"]["labels"] = [copy.deepcopy(payload["label"]), *payload["issue"]["labels"]]
    payload["issue"]["updated_at"] = github_time()  # labelling bumps it: the label's time on GitHub's clock
    return _common(payload, sender, sender_type, installation)


def unlabeled(
    number: int = 1, *, label: str = "ai-fix", sender: str = "Codertocat", sender_type: str = "User"
) -> dict[str, Any]:
    payload = copy.deepcopy(load_payload("issues/unlabeled"))
    payload["issue"]["number"] = number
    payload["label"]["name"] = label
    return _common(payload, sender, sender_type, INSTALLATION)


def pr_comment(
    body: str,
    number: int = 2,
    *,
    sender: str = "Codertocat",
    sender_type: str = "User",
    pr_author_type: str = "Bot",
    pr_author: str = "ai-fix[bot]",
    pr_body: str = PR_BODY,
    on_pr: bool = True,
) -> dict[str, Any]:
    """issue_comment.created on a pull request (GitHub's example with the zulip delivery's `pull_request` key)."""
    payload = copy.deepcopy(load_payload("issue_comment/created"))
    payload["issue"]["number"] = number
    payload["issue"]["body"] = pr_body
    payload["issue"]["user"].update(login=pr_author, type=pr_author_type)
    if on_pr:
        payload["issue"]["pull_request"] = load_payload("issue_comment/created.on-pr.zulip")["issue"]["pull_request"]
    payload["comment"]["body"] = body
    return _common(payload, sender, sender_type, INSTALLATION)


def review_submitted(
    state: str = "changes_requested",
    body: str = "Please handle the empty case.",
    *,
    number: int = 2,
    review_id: int = 237895671,
    sender: str = "Codertocat",
    pr_body: str = PR_BODY,
) -> dict[str, Any]:
    payload = _on_ai_fix_pull("pull_request_review/submitted", number, pr_body)
    payload["review"].update(state=state, body=body, id=review_id)
    return _common(payload, sender, "User", INSTALLATION)


def review_comment(
    body: str = "Maybe you should use more emoji on this line.",
    *,
    number: int = 2,
    review_id: int = 237895671,
    comment_id: int = 284312630,
    sender: str = "Codertocat",
    pr_body: str = PR_BODY,
) -> dict[str, Any]:
    payload = _on_ai_fix_pull("pull_request_review_comment/created", number, pr_body)
    payload["comment"].update(body=body, pull_request_review_id=review_id, id=comment_id)
    return _common(payload, sender, "User", INSTALLATION)


def _on_ai_fix_pull(name: str, number: int, pr_body: str) -> dict[str, Any]:
    """A review event's fixture, on a pull request ai-fix opened."""
    payload = copy.deepcopy(load_payload(name))
    payload["pull_request"].update(number=number, body=pr_body)
    payload["pull_request"]["user"].update(login="ai-fix[bot]", type="Bot")
    return payload


def headers(event: str, body: bytes, *, delivery: str | None = None, secret: str = SECRET) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(body, secret),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
    }


def deliver(
    client: httpx.Client,
    event: str,
    payload: dict[str, Any] | bytes,
    *,
    delivery: str | None = None,
    secret: str = SECRET,
) -> httpx.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return client.post("/webhook", content=body, headers=headers(event, body, delivery=delivery, secret=secret))


def incoming(number: int, delivery_id: str) -> Incoming:
    payload = labeled(number)
    event = Event("issues", delivery_id, payload)
    return Incoming(
        event, json.dumps(payload).encode(), decide(event, trigger_label="ai-fix", bot_login="ai-fix[bot]"), time.time()
    )
