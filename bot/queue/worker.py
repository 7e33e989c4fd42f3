"""Workers: claim jobs with a lease, renew it, check who triggered them, snapshot, run the pipeline.

`ai-fix serve` runs a WorkerPool in-process (a background service of the app); `ai-fix worker` runs
one on its own against the same database (leases keep two processes from running the same job). SIGTERM drains: no new claims,
running jobs get a grace period to reach a checkpoint, what remains is released for another worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from importlib import resources
from typing import Protocol

from bot.errors import AiFixError
from bot.github.client import RepoClient
from bot.markers import PROGRESS_KIND, marker
from bot.queue.capture import IssueChanged, Permissions, capture_snapshot
from bot.queue.governance import Limits, waiting_notices
from bot.queue.models import Job, PlanAnswer, Trigger
from bot.queue.pipeline import JobContext, JobInterrupted, JobOutcome, Pipeline
from bot.queue.store import Store
from bot.redact import redact
from bot.secrets import held_secrets
from bot.settings import Settings
from bot.snapshot import WRITE_PERMISSIONS, Snapshot
from bot.vocabulary import (
    ACCEPTED,
    ANSWER_KINDS,
    AWAITING_APPROVAL,
    CANCELLED,
    COMMAND_KINDS,
    DONE,
    FAILED,
    REJECTED,
    WORK_KINDS,
    TriggerKind,
)

log = logging.getLogger(__name__)


class GitHubApps(Protocol):
    """Makes a client for one repository of one installation (bot.github.client.GitHubApp)."""

    def for_repo(self, installation_id: int, repo: str) -> RepoClient: ...


@dataclass(frozen=True)
class WorkerConfig:
    lease_seconds: float = 60.0
    """A job whose lease is not renewed for this long is taken by another worker."""
    poll_seconds: float = 1.0
    grace_seconds: float = 30.0
    """On SIGTERM, how long running jobs get to reach a checkpoint before their leases are released."""
    retry_seconds: float = 30.0
    """Delay before a failed attempt is tried again."""


def _text(name: str, settings: Settings) -> str:
    return resources.files("bot.queue").joinpath(name).read_text().replace("{label}", settings.trigger_label)


def help_text(settings: Settings) -> str:
    return _text("help.md", settings)


class WorkerPool:
    """N job workers, one control worker for `/agent stop|help`, and a lease-renewing heartbeat."""

    def __init__(
        self,
        store: Store,
        github: GitHubApps,
        pipeline: Pipeline,
        settings: Settings,
        *,
        workers: int | None = None,
        config: WorkerConfig = WorkerConfig(),
    ) -> None:
        self.store = store
        self.github = github
        self.pipeline = pipeline
        self.settings = settings
        self.workers = settings.workers if workers is None else workers
        self.config = config
        self.limits = Limits(
            settings.max_running_per_repo, settings.max_running_per_installation, settings.daily_cost_usd
        )
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._released = threading.Event()
        """Set once stop() has released every lease still held: the heartbeat has nothing left to keep."""
        self._heartbeat_thread = threading.Thread(target=self._heartbeat, name="ai-fix-heartbeat", daemon=True)
        self._running: set[int] = set()
        self._lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        loops: list[tuple[tuple[TriggerKind, ...], str]] = [
            (WORK_KINDS, f"ai-fix-worker-{i}") for i in range(self.workers)
        ]
        loops.append((COMMAND_KINDS, "ai-fix-control"))
        for kinds, name in loops:
            thread = threading.Thread(target=self._loop, args=(kinds,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self._heartbeat_thread.start()

    def stop(self, grace: float | None = None) -> None:
        """Stop claiming; give running jobs `grace` seconds to checkpoint; release the leases left."""
        self.stopping.set()
        deadline = time.monotonic() + (self.config.grace_seconds if grace is None else grace)
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            left = list(self._running)
        for job_id in left:
            if self.store.leases.release(job_id, self.owner):
                log.warning(
                    "job %d did not reach a checkpoint within the grace period; released for another worker", job_id
                )
        # Wait for the heartbeat, or it could still be inside SQLite while the caller closes the
        # store and the interpreter shuts down (a crash on exit).
        self._released.set()
        if self._heartbeat_thread.is_alive():
            self._heartbeat_thread.join(timeout=self.config.lease_seconds)

    # -- loops ------------------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        while not self.stopping.wait(self.config.lease_seconds / 3):
            self._renew()
        # Keep renewing while jobs drain, so nobody else takes them before they are released.
        while any(t.is_alive() for t in self._threads) and not self._all_released():
            self._renew()
            if self._released.wait(min(self.config.lease_seconds / 3, 0.5)):
                return

    def _all_released(self) -> bool:
        with self._lock:
            return not self._running

    def _renew(self) -> None:
        try:
            self.store.leases.renew(self.owner, self.config.lease_seconds)
        except AiFixError as exc:
            log.error("could not renew leases: %s", exc)

    def _loop(self, kinds: tuple[str, ...]) -> None:
        while not self.stopping.is_set():
            token = self.store.db.work_token()
            try:
                job = self.store.leases.claim(self.owner, kinds, self.config.lease_seconds, self.limits)
            except AiFixError as exc:
                log.error("could not claim a job: %s", exc)
                job = None
            if job is None and kinds == WORK_KINDS:
                self._tell_waiting()
            if job is None:  # woken early by a new job where the database announces them (PostgreSQL's NOTIFY)
                self.store.db.wait_for_work(token, self.config.poll_seconds, self.stopping)
                continue
            with self._lock:
                self._running.add(job.id)
            try:
                self.run_job(job)
            except AiFixError as exc:  # the store failed while recording the outcome: the lease will expire
                log.error("job %d: could not record its outcome: %s", job.id, exc)
            finally:
                with self._lock:
                    self._running.discard(job.id)

    def _tell_waiting(self) -> None:
        """Say on the issue (in ai-fix's one comment there) why a queued job does not start, when that changes."""
        try:
            notices = waiting_notices(self.store, self.limits)
        except AiFixError as exc:
            log.error("could not look for jobs held by the limits: %s", exc)
            return
        for job, reason in notices:
            if job.installation_id is None:
                continue
            try:
                client = self.github.for_repo(job.installation_id, job.repo)
                tag = marker(PROGRESS_KIND, job.number)
                client.upsert_marked_comment(job.number, f"{tag}\n**ai-fix** · job {job.id} is queued. {reason}", tag)
            except AiFixError as exc:
                log.warning("job %d: could not say why it waits: %s", job.id, exc)

    # -- one job ----------------------------------------------------------------------------------

    def _secrets(self, client: RepoClient | None) -> list[str]:
        return held_secrets(self.settings, tokens=[client.token.get_secret_value()] if client else [])

    def run_job(self, job: Job) -> None:
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
            if job.kind in COMMAND_KINDS:
                self._command(job, accepted[0], client)
                return
            self._work(job, accepted, client, permission)
        except Exception as exc:  # noqa: BLE001 - the worker is an edge: every error ends as a recorded attempt
            reason = redact(f"{exc.__class__.__name__}: {exc}", self._secrets(client))
            log.warning("job %d attempt %d failed: %s", job.id, job.attempts, reason)
            self.store.leases.fail_attempt(job.id, self.owner, reason, self.config.retry_seconds)

    def _check_triggers(self, job: Job, client: RepoClient, permission: Permissions) -> list[Trigger]:
        """The triggers whose sender may start work (writers); GitHub's own reports (CI, pushes) need no person."""
        accepted: list[Trigger] = []
        for trigger in job.triggers:
            level = "github" if trigger.origin == "github" else permission(trigger.sender)
            if level == "github":
                accepted.append(trigger)
            elif level in WRITE_PERMISSIONS:
                accepted.append(trigger)
                self._react(trigger, client)
            self.store.history.record(
                job.id,
                "trigger_checked",
                {
                    "sender": trigger.sender,
                    "permission": level,
                    ACCEPTED: level == "github" or level in WRITE_PERMISSIONS,
                    "delivery": trigger.delivery_id,
                },
            )
        return accepted

    def _react(self, trigger: Trigger, client: RepoClient) -> None:
        # Reviews have no reaction endpoint of their own here: the PR itself gets the 👀.
        if trigger.comment_id is not None and trigger.kind != "review":
            client.react_to_comment(trigger.comment_id)
        else:
            client.react_to_issue(trigger.number)

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
