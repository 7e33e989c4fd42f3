"""Workers: claim jobs with a lease, renew it, check who triggered them, snapshot, run the pipeline.

`ai-fix serve` runs a WorkerPool in-process (a background service of the app); `ai-fix worker` runs
one on its own against the same database (leases keep two processes from running the same job). SIGTERM drains: no new claims,
running jobs get a grace period to reach a checkpoint, what remains is released for another worker.
The pool's threads claim; `runner.py` runs each claimed job and `leases.py` keeps their leases.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

from bot.errors import AiFixError
from bot.markers import PROGRESS_KIND, marker
from bot.queue.governance import Limits, waiting_notices
from bot.queue.heartbeat import RunningJobs
from bot.queue.pipeline import Pipeline
from bot.queue.runner import GitHubApps, JobRunner
from bot.queue.store import Store
from bot.settings import Settings
from bot.vocabulary import CHORE_KINDS, COMMAND_KINDS, WORK_KINDS, TriggerKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerConfig:
    lease_seconds: float = 60.0
    """A job whose lease is not renewed for this long is taken by another worker."""
    poll_seconds: float = 1.0
    grace_seconds: float = 30.0
    """On SIGTERM, how long running jobs get to reach a checkpoint before their leases are released."""
    retry_seconds: float = 30.0
    """Delay before a failed attempt is tried again."""


def tell_waiting(store: Store, github: GitHubApps, limits: Limits) -> None:
    """Say on the issue (in ai-fix's one comment there) why a queued job does not start, when that changes."""
    try:
        notices = waiting_notices(store, limits)
    except AiFixError as exc:
        log.error("could not look for jobs held by the limits: %s", exc)
        return
    for job, reason in notices:
        if job.installation_id is None:
            continue
        try:
            client = github.for_repo(job.installation_id, job.repo)
            tag = marker(PROGRESS_KIND, job.number)
            client.upsert_marked_comment(job.number, f"{tag}\n**ai-fix** · job {job.id} is queued. {reason}", tag)
        except AiFixError as exc:
            log.warning("job %d: could not say why it waits: %s", job.id, exc)


class WorkerPool:
    """N job workers, one control worker for `/agent stop|help`, one for chores, and a lease-renewing heartbeat."""

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
        self.workers = settings.workers if workers is None else workers
        self.config = config
        self.limits = Limits(
            settings.max_running_per_repo, settings.max_running_per_installation, settings.daily_cost_usd
        )
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.running = RunningJobs(store, self.owner, config.lease_seconds)
        self.runner = JobRunner(
            store,
            github,
            pipeline,
            settings,
            owner=self.owner,
            retry_seconds=config.retry_seconds,
            stopping=self.stopping,
        )

    def start(self) -> None:
        loops: list[tuple[tuple[TriggerKind, ...], str]] = [
            (WORK_KINDS, f"ai-fix-worker-{i}") for i in range(self.workers)
        ]
        loops.append((COMMAND_KINDS, "ai-fix-control"))
        loops.append((CHORE_KINDS, "ai-fix-chores"))
        for kinds, name in loops:
            thread = threading.Thread(target=self._loop, args=(kinds,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self.running.start(self.stopping, self._threads)

    def stop(self, grace: float | None = None) -> None:
        """Stop claiming; give running jobs `grace` seconds to checkpoint; release the leases left."""
        self.stopping.set()
        deadline = time.monotonic() + (self.config.grace_seconds if grace is None else grace)
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.running.release_left()

    def _loop(self, kinds: tuple[str, ...]) -> None:
        while not self.stopping.is_set():
            token = self.store.db.work_token()
            try:
                job = self.store.leases.claim(self.owner, kinds, self.config.lease_seconds, self.limits)
            except AiFixError as exc:
                log.error("could not claim a job: %s", exc)
                job = None
            if job is None and kinds == WORK_KINDS:
                tell_waiting(self.store, self.github, self.limits)
            if job is None:  # woken early by a new job where the database announces them (PostgreSQL's NOTIFY)
                self.store.db.wait_for_work(token, self.config.poll_seconds, self.stopping)
                continue
            with self.running.holding(job.id):
                try:
                    self.runner.run(job)
                except AiFixError as exc:  # the store failed while recording the outcome: the lease will expire
                    log.error("job %d: could not record its outcome: %s", job.id, exc)
