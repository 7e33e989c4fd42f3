"""The durable store: deliveries, jobs, their triggers and history, installations; SQLite or PostgreSQL.

The SQL is written once for both databases (`bot.queue.database`): what differs (locking, wake-ups,
placeholders, the tables' types) is the database's. On SQLite every transaction holds the one write
lock; on PostgreSQL rows are locked where they are updated, jobs are taken with SKIP LOCKED, and an
issue's enqueueing is serialised by an advisory lock, so the promises hold with many processes at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from bot.errors import ConfigError, StoreUnavailable
from bot.queue.database import Conn, Database, is_database_error
from bot.queue.governance import NO_LIMITS, Limits, allowed
from bot.queue.migrate import migrate, unknown_versions
from bot.queue.models import MAX_ATTEMPTS, Job, JobEvent, PlanAnswer, Trigger
from bot.queue.postgres_db import PostgresDatabase
from bot.queue.sqlite_db import SqliteDatabase
from bot.queue.waiting import WaitingJobs, answer_waiting, wake_expired
from bot.vocabulary import (
    AWAITING_APPROVAL,
    CANCELLED,
    COMMAND_KINDS,
    FAILED,
    OWN_FAMILY_KINDS,
    QUEUED,
    RUNNING,
    WORK_KINDS,
)

_ACTIVE = (QUEUED, RUNNING, AWAITING_APPROVAL)
"""Jobs not ended yet: at most one of them (plus one queued follow-up) per issue or PR."""


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" for _ in values)


def _family(kind: str) -> str:
    """Triggers merge into queued jobs of their family: issue, retry and review share one; ci, rebase, scan each their own."""
    return kind if kind in OWN_FAMILY_KINDS else "work"


def open_database(url: str, *, busy_timeout: float = 5.0, pool_size: int = 10) -> Database:
    """The database AIFIX_DATABASE_URL names: sqlite:///file.db or postgresql://user@host:port/db."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresDatabase(url, pool_size=pool_size)
    return SqliteDatabase.from_url(url, busy_timeout=busy_timeout)


class Store(WaitingJobs):
    """The job store's operations; each is one short transaction of the database's."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    @classmethod
    def from_url(cls, url: str, *, clock: Callable[[], float] = time.time, **options: Any) -> Store:
        return cls(open_database(url, **options), clock=clock)

    # -- transactions -----------------------------------------------------------------------------

    def transaction(self) -> AbstractContextManager[Conn]:
        """BEGIN … COMMIT; any database error inside becomes StoreUnavailable after a rollback."""
        return self.db.transaction()

    def reading(self) -> AbstractContextManager[Conn]:
        """A connection for reads; database errors become StoreUnavailable."""
        return self.db.reading()

    def init_schema(self) -> list[str]:
        """Apply the migrations this database lacks (names of those applied); refuse one a newer ai-fix migrated."""
        try:
            done = migrate(self.db, self.clock())
            newer = unknown_versions(self.db)
        except StoreUnavailable:
            raise
        except Exception as exc:
            if not is_database_error(exc):
                raise
            raise StoreUnavailable(f"cannot create or upgrade the job store's tables: {exc}") from exc
        if newer:
            raise ConfigError(
                f"the job store has schema versions {newer} this ai-fix does not know (a newer version migrated it); "
                "run that version, or restore a backup from before"
            )
        return [f"{m.version:04d}_{m.name}" for m in done]

    def checkpoint(self) -> None:
        self.db.checkpoint()

    def close(self) -> None:
        self.db.close()

    # -- history ----------------------------------------------------------------------------------

    def add_event(self, conn: Conn, job_id: int, event: str, data: dict[str, Any]) -> None:
        conn.execute(
            "INSERT INTO events (job_id, at, event, data) VALUES (?, ?, ?, ?)",
            (job_id, self.clock(), event, json.dumps(data, default=str)),
        )

    def record(self, job_id: int, event: str, data: dict[str, Any]) -> None:
        with self.transaction() as conn:
            self.add_event(conn, job_id, event, data)

    # -- enqueueing (called inside the intake transaction) ----------------------------------------

    def insert_job(self, conn: Conn, trigger: Trigger, now: float) -> int:
        row = conn.execute(
            "INSERT INTO jobs (repo, number, kind, status, installation_id, available_at, created_at, updated_at) "
            f"VALUES (?, ?, ?, '{QUEUED}', ?, ?, ?, ?) RETURNING id",
            (trigger.repo, trigger.number, trigger.kind, trigger.installation_id, now, now, now),
        ).fetchone()
        self.db.notify_work(conn)
        return int(row[0])

    def attach_trigger(self, conn: Conn, job_id: int, trigger: Trigger) -> None:
        conn.execute(
            "INSERT INTO triggers (job_id, delivery_id, review_id, data) VALUES (?, ?, ?, ?)",
            (job_id, trigger.delivery_id, trigger.review_id, trigger.model_dump_json()),
        )

    def enqueue(self, conn: Conn, trigger: Trigger, now: float) -> tuple[int, str]:
        """Attach the trigger to the job it belongs to, or open one; returns (job id, queued | merged).

        One active job per issue or PR: a trigger merges into a queued job of its family (`_family`), or one
        awaiting approval; while one runs, exactly one follow-up is queued. Comments of a review already being
        handled merge into that job.
        """
        if trigger.kind in COMMAND_KINDS:
            job_id = self.insert_job(conn, trigger, now)
            self.attach_trigger(conn, job_id, trigger)
            self.add_event(conn, job_id, QUEUED, {"kind": trigger.kind, "sender": trigger.sender})
            return job_id, QUEUED
        target = (trigger.repo, trigger.number)
        self.db.lock(conn, f"target {trigger.repo}#{trigger.number}")
        existing = None
        if trigger.review_id is not None:
            existing = conn.execute(
                "SELECT j.id FROM triggers t JOIN jobs j ON j.id = t.job_id WHERE t.review_id = ? AND j.repo = ? "
                f"AND j.number = ? AND j.status IN ({_marks(_ACTIVE)}) ORDER BY j.id DESC LIMIT 1",
                (trigger.review_id, *target, *_ACTIVE),
            ).fetchone()
        active = conn.execute(
            f"SELECT id, status, kind FROM jobs WHERE repo = ? AND number = ? AND status IN ({_marks(_ACTIVE)}) "
            f"AND kind IN ({_marks(WORK_KINDS)}) ORDER BY id",
            (*target, *_ACTIVE, *WORK_KINDS),
        ).fetchall()
        if existing is None:
            family = _family(trigger.kind)
            existing = next((row for row in active if row[1] != RUNNING and _family(row[2]) == family), None)
        if existing is not None:
            job_id = int(existing[0])
            self.attach_trigger(conn, job_id, trigger)
            self.add_event(
                conn,
                job_id,
                "merged",
                {"kind": trigger.kind, "sender": trigger.sender, "delivery": trigger.delivery_id},
            )
            return job_id, "merged"
        job_id = self.insert_job(conn, trigger, now)
        self.attach_trigger(conn, job_id, trigger)
        data: dict[str, Any] = {"kind": trigger.kind, "sender": trigger.sender, "delivery": trigger.delivery_id}
        running = [int(row[0]) for row in active if row[1] == RUNNING]
        if running:
            data["follow_up_of"] = running[0]
        self.add_event(conn, job_id, QUEUED, data)
        return job_id, QUEUED

    def cancel_where(self, conn: Conn, where: str, params: Sequence[object], reason: str) -> list[int]:
        """Cancel queued and waiting work jobs at once and ask running ones to stop at their next checkpoint."""
        rows = conn.execute(
            f"SELECT id, status FROM jobs WHERE {where} AND status IN ({_marks(_ACTIVE)}) AND kind IN ({_marks(WORK_KINDS)})",
            (*params, *_ACTIVE, *WORK_KINDS),
        ).fetchall()
        now = self.clock()
        for job_id, status in rows:
            if status != RUNNING:
                conn.execute(
                    f"UPDATE jobs SET status = '{CANCELLED}', reason = ?, updated_at = ? WHERE id = ? AND status = ?",
                    (reason, now, job_id, status),
                )
                self.add_event(conn, job_id, CANCELLED, {"reason": reason})
            else:
                conn.execute(
                    "UPDATE jobs SET cancel_requested = 1, reason = ?, updated_at = ? WHERE id = ?",
                    (reason, now, job_id),
                )
                self.add_event(conn, job_id, "cancel_requested", {"reason": reason})
        return [int(r[0]) for r in rows]

    def cancel_target(self, repo: str, number: int, reason: str, *, by: str = "") -> list[int]:
        """`/agent stop`: cancel or stop the target's jobs; one awaiting approval is woken to end itself with a comment."""
        with self.transaction() as conn:
            stopped = self.cancel_where(
                conn, f"repo = ? AND number = ? AND status != '{AWAITING_APPROVAL}'", (repo, number), reason
            )
            woken = answer_waiting(self, conn, repo, number, PlanAnswer(action="stop", by=by))
        return stopped + ([woken] if woken is not None else [])

    # -- leasing ----------------------------------------------------------------------------------

    def _reclaim_expired(self, conn: Conn, now: float) -> None:
        rows = conn.execute(
            f"SELECT id, attempts, cancel_requested, lease_owner FROM jobs WHERE status = '{RUNNING}' AND lease_expires < ?"
            f"{self.db.for_update}{self.db.skip_locked}",
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
                self.add_event(conn, job_id, "lease_expired", {"worker": owner, "attempt": attempts, "now": status})

    def claim(self, owner: str, kinds: Sequence[str], lease_seconds: float, limits: Limits = NO_LIMITS) -> Job | None:
        """Take the oldest runnable job of `kinds` that `limits` let start, leased to `owner`; None when there is none."""
        now = self.clock()
        commands = set(kinds) <= set(COMMAND_KINDS)
        exclusive = (
            ""
            if commands
            else (
                "AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.repo = j.repo AND r.number = j.number "
                f"AND r.status IN ('{RUNNING}', '{AWAITING_APPROVAL}') AND r.kind IN ({_marks(WORK_KINDS)}))"
            )
        )
        governed, governed_params = ("", []) if commands else allowed(limits, now)
        with self.transaction() as conn:
            self._reclaim_expired(conn, now)
            wake_expired(self, conn, now)
            row = conn.execute(
                f"SELECT j.id, j.repo, j.installation_id FROM jobs j WHERE j.status = '{QUEUED}' AND j.kind IN ({_marks(kinds)}) "
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
            self.add_event(conn, job_id, "claimed", {"worker": owner, "attempt": attempt})
        return self.get_job(job_id)

    def renew(self, owner: str, lease_seconds: float, job_ids: Sequence[int]) -> int:
        """Extend the leases `owner` holds on `job_ids` (the jobs it is running); returns how many it still holds.

        Only those: a job whose outcome could not be stored (the database was away as it ended) is still
        leased to `owner` but run by nobody, and its lease must run out for another attempt to take it."""
        if not job_ids:
            return 0
        now = self.clock()
        with self.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET lease_expires = ? WHERE lease_owner = ? AND status = '{RUNNING}' "
                f"AND id IN ({_marks(job_ids)})",
                (now + lease_seconds, owner, *job_ids),
            )
            return cur.rowcount

    def cancel_requested(self, job_id: int) -> bool:
        with self.reading() as conn:
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
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = ?, reason = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ?, "
                f"cost_usd = ? WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'",
                (status, reason, now, cost_usd, job_id, owner),
            )
            if cur.rowcount:
                self.add_event(conn, job_id, status, {"reason": reason, **(data or {})})
            return bool(cur.rowcount)

    def fail_attempt(self, job_id: int, owner: str, reason: str, retry_in: float) -> str:
        """Record a failed attempt: queued again after `retry_in` s, or `failed` after the last attempt."""
        now = self.clock()
        with self.transaction() as conn:
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
            self.add_event(conn, job_id, "attempt_failed", {"attempt": attempts, "error": reason, "now": status})
            return status

    def release(self, job_id: int, owner: str) -> bool:
        """Give a job back on shutdown without spending one of its attempts."""
        now = self.clock()
        with self.transaction() as conn:
            cur = conn.execute(
                f"UPDATE jobs SET status = '{QUEUED}', attempts = attempts - 1, lease_owner = NULL, lease_expires = NULL, "
                f"available_at = ?, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = '{RUNNING}'",
                (now, now, job_id, owner),
            )
            if cur.rowcount:
                self.add_event(conn, job_id, "released", {"worker": owner, "why": "worker shutting down"})
                self.db.notify_work(conn)
            return bool(cur.rowcount)

    def save_snapshot(self, job_id: int, snapshot: dict[str, Any]) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET snapshot = ?, updated_at = ? WHERE id = ?",
                (json.dumps(snapshot), self.clock(), job_id),
            )
            self.add_event(conn, job_id, "snapshot_taken", {})

    def save_state(self, job_id: int, state: dict[str, Any]) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE jobs SET state = ? WHERE id = ?", (json.dumps(state, default=str), job_id))

    # -- reading ----------------------------------------------------------------------------------

    def _jobs(self, where: str, params: Sequence[object], limit: int) -> list[Job]:
        with self.reading() as conn:
            rows = conn.execute(f"SELECT * FROM jobs {where} ORDER BY id DESC LIMIT ?", (*params, limit)).fetchall()
            ids = [r["id"] for r in rows]
            triggers: dict[int, list[Trigger]] = {i: [] for i in ids}
            events: dict[int, list[JobEvent]] = {i: [] for i in ids}
            if ids:
                for r in conn.execute(
                    f"SELECT job_id, data FROM triggers WHERE job_id IN ({_marks(ids)}) ORDER BY id", ids
                ):
                    triggers[r[0]].append(Trigger.model_validate_json(r[1]))
                for r in conn.execute(
                    f"SELECT job_id, at, event, data FROM events WHERE job_id IN ({_marks(ids)}) ORDER BY id", ids
                ):
                    events[r[0]].append(JobEvent(at=r[1], event=r[2], data=json.loads(r[3])))
        return [Job.from_row(r, triggers[r["id"]], events[r["id"]]) for r in rows]

    def get_job(self, job_id: int) -> Job | None:
        jobs = self._jobs("WHERE id = ?", (job_id,), 1)
        return jobs[0] if jobs else None

    def list_jobs(self, status: str | None = None, limit: int = 50, repo: str | None = None) -> list[Job]:
        """The newest jobs first, of one status and one repository ("owner/name") when given."""
        filters = [(column, value) for column, value in (("status", status), ("repo", repo)) if value]
        where = " AND ".join(f"{column} = ?" for column, _ in filters)
        return self._jobs(f"WHERE {where}" if where else "", [value for _, value in filters], limit)
