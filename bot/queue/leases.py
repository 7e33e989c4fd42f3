"""Workers and their jobs: claiming the oldest runnable job under a lease, renewing it, and ending or giving it back.

A lease that expires (its worker stopped answering) is reclaimed by the next claim: the job is queued
again, or failed after its last attempt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bot.queue.database import Conn, Database, marks
from bot.queue.governance import NO_LIMITS, Limits, allowed
from bot.queue.history import History
from bot.queue.lookup import JobLookup
from bot.queue.models import MAX_ATTEMPTS, Job
from bot.queue.waiting import WaitingJobs
from bot.vocabulary import AWAITING_APPROVAL, CANCELLED, FAILED, QUEUED, RUNNING, WORK_KINDS


def reclaim_expired(db: Database, history: History, conn: Conn, now: float) -> None:
    rows = conn.execute(
        f"SELECT id, attempts, cancel_requested, lease_owner FROM jobs WHERE status = '{RUNNING}' AND lease_expires < ?"
        f"{db.for_update}{db.skip_locked}",
        (now,),
    ).fetchall()
    for job_id, attempts, cancel_requested, owner in rows:
        if cancel_requested:
            status, reason = CANCELLED, "stopped by /agent stop; its worker stopped answering"
        elif attempts >= MAX_ATTEMPTS:
            status, reason = (
                FAILED,
                f"its worker stopped answering (lease expired) on attempt {attempts} of {MAX_ATTEMPTS}",
            )
        else:
            status, reason = QUEUED, ""
        if conn.execute(
            "UPDATE jobs SET status = ?, reason = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ? "
            f"WHERE id = ? AND status = '{RUNNING}' AND lease_expires < ?",
            (status, reason, now, job_id, now),
        ).rowcount:
            history.add(conn, job_id, "lease_expired", {"worker": owner, "attempt": attempts, "now": status})


class Leases:
    """A worker's side of the queue; every operation is one short transaction."""

    def __init__(
        self, db: Database, history: History, waiting: WaitingJobs, jobs: JobLookup, clock: Callable[[], float]
    ) -> None:
        self.db = db
        self.history = history
        self.waiting = waiting
        self.jobs = jobs
        self.clock = clock

    def claim(self, owner: str, kinds: Sequence[str], lease_seconds: float, limits: Limits = NO_LIMITS) -> Job | None:
        """Take the oldest runnable job of `kinds` that `limits` let start, leased to `owner`; None when there is none."""
        now = self.clock()
        short = set(kinds).isdisjoint(WORK_KINDS)  # commands and chores: no target to hold, no limits
        exclusive = (
            ""
            if short
            else (
                "AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.repo = j.repo AND r.number = j.number "
                f"AND r.status IN ('{RUNNING}', '{AWAITING_APPROVAL}') AND r.kind IN ({marks(WORK_KINDS)}))"
            )
        )
        governed, governed_params = ("", []) if short else allowed(limits, now)
        with self.db.transaction() as conn:
            reclaim_expired(self.db, self.history, conn, now)
            self.waiting.wake_expired(conn, now)
            row = conn.execute(
                f"SELECT j.id, j.repo, j.installation_id FROM jobs j WHERE j.status = '{QUEUED}' AND j.kind IN ({marks(kinds)}) "
                f"AND j.available_at <= ? {exclusive}{governed} ORDER BY j.id LIMIT 1{self.db.for_update}{self.db.skip_locked}",
                (*kinds, now, *(WORK_KINDS if exclusive else ()), *governed_params),
            ).fetchone()
            if row is None:
                return None
            job_id = int(row[0])
            if governed:
                # Where claims run at once (PostgreSQL), two could each see one slot left: the claims of one
                # installation and repository take turns, and the limits are checked again in turn.
                self.db.lock(conn, f"installation {row[2]}", f"repo {row[1]}")
                again = f"SELECT 1 FROM jobs j WHERE j.id = ?{governed}"
                if conn.execute(again, (job_id, *governed_params)).fetchone() is None:
                    return None
            conn.execute(
                f"UPDATE jobs SET status = '{RUNNING}', lease_owner = ?, lease_expires = ?, attempts = attempts + 1, "
                f"waiting = '', updated_at = ? WHERE id = ? AND status = '{QUEUED}'",
                (owner, now + lease_seconds, now, job_id),
            )
            attempt = conn.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
            self.history.add(conn, job_id, "claimed", {"worker": owner, "attempt": attempt})
        return self.jobs.get(job_id)

    def renew(self, owner: str, lease_seconds: float, job_ids: Sequence[int]) -> int:
        """Extend the leases `owner` holds on `job_ids` (the jobs it is running); returns how many it still holds.

        Only those: a job whose outcome could not be stored (the database was away as it ended) is still
        leased to `owner` but run by nobody, and its lease must run out for another attempt to take it."""
        if not job_ids:
            return 0
        now = self.clock()
        with self.db.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET lease_expires = ? WHERE lease_owner = ? AND status = '{RUNNING}' "
                f"AND id IN ({marks(job_ids)})",
                (now + lease_seconds, owner, *job_ids),
            )
            return cur.rowcount

    def cancel_requested(self, job_id: int) -> bool:
        with self.db.reading() as conn:
            row = conn.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return bool(row and row[0])

    def finish(
        self,
        job_id: int,
        owner: str,
        status: str,
        reason: str,
        data: dict[str, Any] | None = None,
        *,
        cost_usd: float = 0.0,
    ) -> bool:
        """End a job this owner holds, with what its model calls cost; False when the lease was lost meanwhile."""
        now = self.clock()
        with self.db.transaction() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = ?, reason = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ?, "
                f"cost_usd = ? WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'",
                (status, reason, now, cost_usd, job_id, owner),
            )
            if cur.rowcount:
                self.history.add(conn, job_id, status, {"reason": reason, **(data or {})})
            return bool(cur.rowcount)

    def fail_attempt(self, job_id: int, owner: str, reason: str, retry_in: float) -> str:
        """Record a failed attempt: queued again after `retry_in` s, or `failed` after the last attempt."""
        now = self.clock()
        with self.db.transaction() as conn:
            row = conn.execute(
                f"SELECT attempts FROM jobs WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'{self.db.for_update}",
                (job_id, owner),
            ).fetchone()
            if row is None:
                return "lost"
            attempts = int(row[0])
            if attempts >= MAX_ATTEMPTS:
                status, final = FAILED, f"failed on all {MAX_ATTEMPTS} attempts; last error: {reason}"
            else:
                status, final = QUEUED, ""
            conn.execute(
                "UPDATE jobs SET status = ?, reason = ?, available_at = ?, lease_owner = NULL, lease_expires = NULL, "
                "updated_at = ? WHERE id = ?",
                (status, final, now + retry_in, now, job_id),
            )
            self.history.add(conn, job_id, "attempt_failed", {"attempt": attempts, "error": reason, "now": status})
            return status

    def release(self, job_id: int, owner: str) -> bool:
        """Give a job back on shutdown without spending one of its attempts."""
        now = self.clock()
        with self.db.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET status = '{QUEUED}', attempts = attempts - 1, lease_owner = NULL, lease_expires = NULL, "
                f"available_at = ?, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'",
                (now, now, job_id, owner),
            )
            if cur.rowcount:
                self.history.add(conn, job_id, "released", {"worker": owner, "why": "worker shutting down"})
                self.db.notify_work(conn)
            return bool(cur.rowcount)

    def save_snapshot(self, job_id: int, snapshot: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET snapshot = ?, updated_at = ? WHERE id = ?",
                (json.dumps(snapshot), self.clock(), job_id),
            )
            self.history.add(conn, job_id, "snapshot_taken", {})

    def save_state(self, job_id: int, state: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE jobs SET state = ? WHERE id = ?", (json.dumps(state, default=str), job_id))
