"""Jobs that wait for a person without holding a worker: a plan awaiting a maintainer's approval.

A parked job has status `awaiting_approval`, no lease, and its deadline in `available_at`, so no worker can
claim it. A writer's answer (`/agent approve|revise|stop`), or the deadline passing (looked for at every
claim), stores a `PlanAnswer` under `state["answer"]` and queues the job again in the same transaction; the
worker that claims it runs the pipeline, which reads the answer (`JobContext.take_answer`) and goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from bot.queue.database import Conn, Database
from bot.queue.models import PlanAnswer
from bot.vocabulary import AWAITING_APPROVAL, QUEUED, RUNNING

ANSWER_KEY = "answer"
"""Where the answer that woke a job sits in its state until the pipeline takes it."""


class _Store(Protocol):
    clock: Callable[[], float]
    db: Database

    def transaction(self) -> AbstractContextManager[Conn]: ...

    def add_event(self, conn: Conn, job_id: int, event: str, data: dict[str, Any]) -> None: ...


def _wake(store: _Store, conn: Conn, job_id: int, state: str, answer: PlanAnswer, event: str) -> None:
    now = store.clock()
    saved = json.loads(state)
    saved[ANSWER_KEY] = answer.model_copy(update={"at": now}).model_dump()
    if conn.execute(
        f"UPDATE jobs SET status = '{QUEUED}', available_at = ?, state = ?, updated_at = ? WHERE id = ? AND status = '{AWAITING_APPROVAL}'",
        (now, json.dumps(saved, default=str), now, job_id),
    ).rowcount:  # where claims run at once, only the transaction that woke it records that
        store.add_event(conn, job_id, event, answer.model_dump(exclude={"at"}, exclude_defaults=True))
        store.db.notify_work(conn)


def answer_waiting(store: _Store, conn: Conn, repo: str, number: int, answer: PlanAnswer) -> int | None:
    """Wake the job of `repo#number` awaiting approval with `answer`; its id, or None when none waits."""
    row = conn.execute(
        f"SELECT id, state FROM jobs WHERE repo = ? AND number = ? AND status = '{AWAITING_APPROVAL}' ORDER BY id LIMIT 1"
        f"{store.db.for_update}",
        (repo, number),
    ).fetchone()
    if row is None:
        return None
    _wake(store, conn, int(row[0]), row[1], answer, "answered")
    return int(row[0])


def wake_expired(store: _Store, conn: Conn, now: float) -> None:
    """Queue every job whose wait has passed its deadline, answered `expired` (its pipeline cancels it with a comment)."""
    rows = conn.execute(
        f"SELECT id, state FROM jobs WHERE status = '{AWAITING_APPROVAL}' AND available_at <= ?{store.db.for_update}{store.db.skip_locked}",
        (now,),
    ).fetchall()
    for job_id, state in rows:
        _wake(store, conn, int(job_id), state, PlanAnswer(action="expired"), "approval_expired")


class WaitingJobs:
    """The store's part for waiting jobs (mixed into `Store`)."""

    def park(
        self: _Store, job_id: int, owner: str, until: float, reason: str, data: dict[str, Any] | None = None
    ) -> bool:
        """Leave a job this owner holds waiting until `until` (epoch seconds) without a lease; False if the lease was lost.

        Its attempts start again from zero: waking it is a new start, not a retry.
        """
        now = self.clock()
        with self.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET status = '{AWAITING_APPROVAL}', reason = ?, available_at = ?, attempts = 0, lease_owner = NULL, "
                f"lease_expires = NULL, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'",
                (reason, until, now, job_id, owner),
            )
            if cur.rowcount:
                self.add_event(conn, job_id, AWAITING_APPROVAL, {"reason": reason, "until": until, **(data or {})})
            return bool(cur.rowcount)

    def answer_plan(self: _Store, repo: str, number: int, answer: PlanAnswer) -> int | None:
        """A writer's answer to the plan awaiting approval on `repo#number`: the job it woke, or None."""
        with self.transaction() as conn:
            return answer_waiting(self, conn, repo, number, answer)
