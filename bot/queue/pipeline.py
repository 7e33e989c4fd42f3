"""The interface between the queue and what a job does.

The worker takes the job, checks who triggered it, freezes a Snapshot of the issue or PR, then calls
`Pipeline.run(snapshot, ctx)`. Later subsystems (contract, execution loop, PR delivery) implement
`Pipeline`; the worker owns leases, retries, cancellation and the final status.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Protocol

from pydantic import BaseModel

from bot.github.client import RepoClient
from bot.queue.models import Job, PlanAnswer, Trigger
from bot.queue.store import Store
from bot.queue.waiting import ANSWER_KEY
from bot.redact import redact
from bot.snapshot import Snapshot
from bot.vocabulary import EndStatus


class JobOutcome(BaseModel):
    """How a pipeline run ended; the worker stores it as the job's final status and reason."""

    status: EndStatus
    """`skipped`: a `ci`, `rebase` or `scan` job that found nothing to do; `reason` says why."""
    reason: str = ""
    data: dict[str, Any] = {}
    """Extra facts for the job's history (e.g. the PR url); redacted before storing."""
    cost_usd: float = 0.0
    """What the job's model calls cost, in dollars (summed per installation and day for AIFIX_DAILY_COST_USD)."""
    until: float = 0.0
    """For `awaiting_approval`: the deadline (epoch seconds); the job waits without a worker until an answer or then."""


class JobInterrupted(Exception):
    """Raised by `JobContext.checkpoint()` when the job must stop now: `/agent stop`, or the worker is shutting down."""


class JobContext:
    """What a pipeline gets besides the snapshot (one per job attempt, like Probot's context).

    - `github`: a client for the job's one repository (installation token scoped to it; `github.token`
      is the token for `git push`, never to be shown to the sandbox or the model).
    - `secrets()`: every secret the job holds (the service's, its token): what redaction removes.
    - `record(event, **data)`: append to the task's history (`GET /tasks/{id}`); secrets are redacted.
    - `cancelled()`: poll it between steps; True after `/agent stop` or when the worker shuts down.
    - `state`: a dict persisted with the job; `checkpoint()` saves it, so a job resumed after a crash or
      a shutdown (a new attempt) starts from the last checkpoint instead of from scratch.
    - `enqueue(trigger)`: queue work this job found (a `scan` queues `ci` and `rebase` jobs for pull requests).
    """

    def __init__(
        self,
        job: Job,
        github: RepoClient,
        secrets: list[str],
        store: Store,
        shutting_down: threading.Event,
        *,
        triggers: list[Trigger] | None = None,
    ) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempts
        self.triggers = list(job.triggers if triggers is None else triggers)
        """The triggers accepted for this job (what GitHub reported, for `ci` and `scan` jobs)."""
        self.github = github
        self.state: dict[str, Any] = dict(job.state)
        self._store = store
        self._shutting_down = shutting_down
        self._secrets = secrets

    def secrets(self) -> list[str]:
        """Every secret value this job holds (the service's and its installation token): what redaction removes."""
        return list(self._secrets)

    def redacted(self, value: Any) -> Any:
        """`value` with every secret this job holds removed from its strings."""
        if isinstance(value, str):
            return redact(value, self._secrets)
        if isinstance(value, dict):
            return {k: self.redacted(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redacted(v) for v in value]
        return value

    def take_answer(self) -> PlanAnswer | None:
        """The answer that woke this job from `awaiting_approval`, taken out of the state (the next checkpoint saves that)."""
        raw = self.state.pop(ANSWER_KEY, None)
        return PlanAnswer.model_validate(raw) if raw else None

    def record(self, event: str, **data: Any) -> None:
        self._store.history.record(self.job_id, event, self.redacted(json.loads(json.dumps(data, default=str))))

    def enqueue(self, trigger: Trigger) -> tuple[int, str]:
        """Queue `trigger` as the intake would (merged into a queued job of its kind); (job id, queued | merged)."""
        with self._store.transaction() as conn:
            return self._store.work.enqueue(conn, trigger, self._store.clock())

    def store_identity(self) -> str:
        """The job store's own id, which this job's signed run-viewer links name."""
        return self._store.identity()

    def stop_requested(self) -> bool:
        return self._store.leases.cancel_requested(self.job_id)

    def shutting_down(self) -> bool:
        return self._shutting_down.is_set()

    def cancelled(self) -> bool:
        return self.shutting_down() or self.stop_requested()

    def checkpoint(self, **state: Any) -> None:
        """Merge `state` into the persisted state, save it, and raise JobInterrupted if the job must stop."""
        self.state.update(state)
        self._store.leases.save_state(self.job_id, self.state)
        if self.cancelled():
            raise JobInterrupted("stop requested" if self.stop_requested() else "worker shutting down")


class Pipeline(Protocol):
    """What a job does once its snapshot is frozen.

    `run` is called in a worker thread. Call `ctx.checkpoint()` (or poll `ctx.cancelled()`) between
    steps; raise to report an error (the job is retried, up to 3 attempts in all, resuming from
    `ctx.state`); return a JobOutcome for a final answer (a `failed` outcome is final, not retried), or
    `awaiting_approval` with `until` to wait for a person's answer without holding a worker: the job runs
    again when one comes (or the deadline passes), with the answer in `ctx.take_answer()`.
    """

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome: ...
