"""Jobs that wait for a person without holding a worker: a plan awaiting a maintainer's approval.

A parked job has status `awaiting_approval`, no lease, and its deadline in `available_at`, so no worker can
claim it. A writer's answer (`/agent approve|revise|stop`), or the deadline passing (looked for at every
claim), stores a `PlanAnswer` under `state["answer"]` and queues the job again in the same transaction; the
worker that claims it runs the pipeline, which reads the answer (`JobContext.take_answer`) and goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bot.queue.database import Conn, Database
from bot.queue.history import History
from bot.queue.models import PlanAnswer
from bot.vocabulary import AWAITING_APPROVAL, QUEUED, RUNNING

ANSWER_KEY = "answer"
"""Where the answer that woke a job sits in its state until the pipeline takes it."""


class WaitingJobs:
    """Parking a job, and waking it with an answer or at its deadline."""

    def __init__(self, db: Database, history: History, clock: Callable[[], float]) -> None:
        self.db = db
        self.history = history
        self.clock = clock

    def park(self, job_id: int, owner: str, until: float, reason: str, data: dict[str, Any] | None = None) -> bool:
        """Leave a job this owner holds waiting until `until` (epoch seconds) without a lease; False if the lease was lost.

        Its attempts start again from zero: waking it is a new start, not a retry.
        """
        now = self.clock()
        with self.db.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET status = '{AWAITING_APPROVAL}', reason = ?, available_at = ?, attempts = 0, lease_owner = NULL, "
                f"lease_expires = NULL, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'",
                (reason, until, now, job_id, owner),
            )
            if cur.rowcount:
                self.history.add(conn, job_id, AWAITING_APPROVAL, {"reason": reason, "until": until, **(data or {})})
            return bool(cur.rowcount)

    def answer_plan(self, repo: str, number: int, answer: PlanAnswer) -> int | None:
        """A writer's answer to the plan awaiting approval on `repo#number`: the job it woke, or None."""
        with self.db.transaction() as conn:
            return self.answer(conn, repo, number, answer)

    def answer(self, conn: Conn, repo: str, number: int, answer: PlanAnswer) -> int | None:
        """Wake the job of `repo#number` awaiting approval with `answer`; its id, or None when none waits."""
        row = conn.execute(
            f"SELECT id, state FROM jobs WHERE repo = ? AND number = ? AND status = '{AWAITING_APPROVAL}' ORDER BY id LIMIT 1"
            f"{self.db.for_update}",
            (repo, number),
        ).fetchone()
        if row is None:
            return None
        self._wake(conn, int(row[0]), row[1], answer, "answered")
        return int(row[0])

    def wake_expired(self, conn: Conn, now: float) -> None:
        """Queue every job whose wait has passed its deadline, answered `expired` (its pipeline cancels it with a comment)."""
        rows = conn.execute(
            f"SELECT id, state FROM jobs WHERE status = '{AWAITING_APPROVAL}' AND available_at <= ?"
            f"{self.db.for_update}{self.db.skip_locked}",
            (now,),
        ).fetchall()
        for job_id, state in rows:
            self._wake(conn, int(job_id), state, PlanAnswer(action="expired"), "approval_expired")

    def _wake(self, conn: Conn, job_id: int, state: str, answer: PlanAnswer, event: str) -> None:
        now = self.clock()
        saved = json.loads(state)
        saved[ANSWER_KEY] = answer.model_copy(update={"at": now}).model_dump()
        if conn.execute(
            f"UPDATE jobs SET status = '{QUEUED}', available_at = ?, state = ?, updated_at = ? WHERE id = ? AND status = '{AWAITING_APPROVAL}'",
            (now, json.dumps(saved, default=str), now, job_id),
        ).rowcount:  # where claims run at once, only the transaction that woke it records that
            self.history.add(conn, job_id, event, answer.model_dump(exclude={"at"}, exclude_defaults=True))
            self.db.notify_work(conn)
