"""One claimed job: check who triggered it, answer a command, or snapshot the issue and run the pipeline.

Every way a job ends is recorded in the store under the worker's lease (`owner`); an error ends as a
failed attempt, retried after `retry_seconds`.
"""

from __future__ import annotations

import logging
import threading
from importlib import resources
from typing import Protocol

from bot.github.client import RepoClient
from bot.labels import ai_fix_labels
from bot.queue.capture import IssueChanged, Permissions, capture_snapshot
from bot.queue.chores import make_labels
from bot.queue.models import Job, PlanAnswer, Trigger
from bot.queue.pipeline import JobContext, JobInterrupted, JobOutcome, Pipeline
from bot.queue.store import Store
from bot.redact import redact
from bot.secrets import held_secrets
from bot.settings import Settings
from bot.snapshot import WRITE_PERMISSIONS, Snapshot
from bot.vocabulary import (
    ANSWER_KINDS,
    AWAITING_APPROVAL,
    CANCELLED,
    CHORE_KINDS,
    DONE,
    FAILED,
    REJECTED,
    WORK_KINDS,
)

log = logging.getLogger(__name__)


class GitHubApps(Protocol):
    """Makes a client for one repository of one installation (bot.github.client.GitHubApp)."""

    def for_repo(self, installation_id: int, repo: str) -> RepoClient: ...


def _text(name: str, settings: Settings) -> str:
    return resources.files("bot.queue").joinpath(name).read_text().replace("{label}", settings.trigger_label)


def help_text(settings: Settings) -> str:
    return _text("help.md", settings)


def react(trigger: Trigger, client: RepoClient) -> None:
    # Reviews have no reaction endpoint of their own here: the PR itself gets the 👀.
    if trigger.comment_id is not None and trigger.kind != "review":
        client.react_to_comment(trigger.comment_id)
    else:
        client.react_to_issue(trigger.number)


class JobRunner:
    """Runs the jobs one worker process claims, each to a recorded end."""

    def __init__(
        self,
        store: Store,
        github: GitHubApps,
        pipeline: Pipeline,
        settings: Settings,
        *,
        owner: str,
        retry_seconds: float,
        stopping: threading.Event,
    ) -> None:
        self.store, self.github, self.pipeline, self.settings = store, github, pipeline, settings
        self.owner = owner
        """The worker's lease name: the store records an end only from the worker holding the job."""
        self.retry_seconds = retry_seconds
        self.stopping = stopping
        """Set when the worker shuts down: the pipeline stops at its next checkpoint."""

    def _secrets(self, client: RepoClient | None) -> list[str]:
        return held_secrets(self.settings, tokens=[client.token.get_secret_value()] if client else [])

    def run(self, job: Job) -> None:
        client: RepoClient | None = None
        try:
            if job.installation_id is None:
                self.store.leases.finish(job.id, self.owner, FAILED, "the job has no installation id")
                return
            client = self.github.for_repo(job.installation_id, job.repo)
            permission = Permissions(client)
            accepted = self._check_triggers(job, client, permission)
            if not accepted:
                who = ", ".join(sorted({f"@{t.sender} ({permission(t.sender)})" for t in job.triggers}))
                reason = f"{who}: write, maintain or admin permission on {job.repo} is needed to start ai-fix"
                self.store.leases.finish(job.id, self.owner, REJECTED, reason)
                return
            if job.kind not in WORK_KINDS:
                self._command(job, accepted[0], client)
                return
            self._work(job, accepted, client, permission)
        except Exception as exc:  # noqa: BLE001 - the worker is an edge: every error ends as a recorded attempt
            reason = redact(f"{exc.__class__.__name__}: {exc}", self._secrets(client))
            log.warning("job %d attempt %d failed: %s", job.id, job.attempts, reason)
            self.store.leases.fail_attempt(job.id, self.owner, reason, self.retry_seconds)

    def _check_triggers(self, job: Job, client: RepoClient, permission: Permissions) -> list[Trigger]:
        """The triggers whose sender may start work (writers); GitHub's own reports (CI, pushes) need no person."""
        accepted: list[Trigger] = []
        for trigger in job.triggers:
            level = "github" if trigger.origin == "github" else permission(trigger.sender)
            if level == "github":
                accepted.append(trigger)
            elif level in WRITE_PERMISSIONS:
                accepted.append(trigger)
                react(trigger, client)
            self.store.history.record(
                job.id,
                "trigger_checked",
                {
                    "sender": trigger.sender,
                    "permission": level,
                    "permitted": level == "github" or level in WRITE_PERMISSIONS,
                    "delivery": trigger.delivery_id,
                },
            )
        return accepted

    def _command(self, job: Job, trigger: Trigger, client: RepoClient) -> None:
        if job.kind == "stop":
            reason = f"stopped by @{trigger.sender} (/agent stop)"
            stopped = self.store.work.cancel_target(job.repo, job.number, reason, by=trigger.sender)
            reason = f"stopped job(s) {stopped}" if stopped else "nothing was queued, running or awaiting approval"
        elif job.kind in ANSWER_KINDS:
            answer = PlanAnswer(
                action="approve" if job.kind == "approve" else "revise",
                approach=trigger.approach,
                feedback=trigger.feedback,
                by=trigger.sender,
            )
            woken = self.store.waiting.answer_plan(job.repo, job.number, answer)
            if woken is None:
                reason = f"no plan is awaiting approval on #{job.number}"
                client.create_comment(job.number, f"`/agent {job.kind}`: {reason}, so there is nothing to answer.")
            else:
                reason = f"answered the plan of job {woken}"
        elif job.kind in CHORE_KINDS:
            reason = make_labels(client, ai_fix_labels(self.settings.trigger_label))
        else:
            client.create_comment(job.number, help_text(self.settings))
            reason = "posted the list of commands"
        self.store.leases.finish(job.id, self.owner, DONE, reason)

    def _work(self, job: Job, accepted: list[Trigger], client: RepoClient, permission: Permissions) -> None:
        if job.snapshot is None:
            try:
                snapshot = capture_snapshot(client, job, accepted, permission)
            except IssueChanged as exc:
                what = " and ".join(exc.changed)
                client.create_comment(job.number, _text("relabel.md", self.settings).replace("{what}", what))
                self.store.leases.finish(job.id, self.owner, CANCELLED, str(exc))
                return
            self.store.leases.save_snapshot(job.id, snapshot.model_dump())
        else:
            snapshot = Snapshot.model_validate(job.snapshot)
        ctx = JobContext(job, client, self._secrets(client), self.store, self.stopping, triggers=accepted)
        try:
            outcome: JobOutcome | None = self.pipeline.run(snapshot, ctx)
        except JobInterrupted:
            outcome = None
        if ctx.stop_requested():
            # The request's reason (who stopped it: /agent stop, or the label removed) was stored with it.
            stopped = self.store.jobs.get(job.id)
            self.store.leases.finish(job.id, self.owner, CANCELLED, stopped.reason if stopped else "stopped")
        elif outcome is None:
            self.store.leases.release(job.id, self.owner)
        elif outcome.status == AWAITING_APPROVAL:
            self.store.waiting.park(job.id, self.owner, outcome.until, outcome.reason, ctx.redacted(outcome.data))
        else:
            self.store.leases.finish(
                job.id,
                self.owner,
                outcome.status,
                outcome.reason,
                ctx.redacted(outcome.data),
                cost_usd=outcome.cost_usd,
            )
