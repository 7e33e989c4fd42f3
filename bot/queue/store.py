"""The durable store (SQLite in WAL mode): deliveries, jobs, their triggers and history, installations.

The SQL sticks to what SQLite and PostgreSQL share (ON CONFLICT, RETURNING-free updates guarded by
their WHERE clause, REAL epoch timestamps) so a PostgreSQL adapter can reuse it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.errors import StoreUnavailable
from bot.queue.database import connect, file_identity, migrate, parse_sqlite_url
from bot.queue.models import (
    COMMAND_KINDS,
    MAX_ATTEMPTS,
    OWN_FAMILY_KINDS,
    WORK_KINDS,
    Job,
    JobEvent,
    PlanAnswer,
    Trigger,
)
from bot.queue.waiting import WAITING, WaitingJobs, answer_waiting, wake_expired

_ACTIVE = ("queued", "running", WAITING)
"""Jobs not ended yet: at most one of them (plus one queued follow-up) per issue or PR."""


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" for _ in values)


def _family(kind: str) -> str:
    """Triggers merge into queued jobs of their family: issue, retry and review share one; ci, rebase, scan each their own."""
    return kind if kind in OWN_FAMILY_KINDS else "work"


class Store(WaitingJobs):
    """Thread-safe access to the database: one connection per thread, explicit short transactions."""

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str = "full",
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.clock = clock
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._identity: tuple[int, int] | None = None
        """(device, inode) of the database file when the first connection opened it."""

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Store:
        path, synchronous = parse_sqlite_url(url)
        return cls(path, synchronous=synchronous, **kwargs)

    # -- connections and transactions -------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self.check_file()
            conn = connect(self.path, self.synchronous, self.busy_timeout, create=self._identity is None)
            with self._lock:
                self._identity = self._identity or file_identity(self.path)
                self._all.append(conn)
            self._local.conn = conn
        return conn

    def check_file(self) -> None:
        """StoreUnavailable unless the path still names the file this store opened first (not moved or replaced).

        Connections opened before a move keep writing into the moved file; ones opened after would open
        whatever is at the path now: either way work would go where nobody reads it.
        """
        if self._identity is not None and file_identity(self.path) != self._identity:
            raise StoreUnavailable(
                f"the job store {self.path} is not the file this process opened (it was moved, deleted or "
                "replaced); restore it and restart the service"
            )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: takes the write lock up front so read-then-write cannot race.

        Any database error inside becomes StoreUnavailable after a rollback.
        """
        conn = self.connection()
        self.check_file()
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreUnavailable(f"job store is unavailable ({exc}); retry later") from exc
            raise

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads; database errors become StoreUnavailable."""
        try:
            yield self.connection()
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"job store does not answer: {exc}") from exc

    def init_schema(self) -> None:
        conn = self.connection()
        try:
            migrate(conn)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot create the tables in {self.path}: {exc}") from exc

    def checkpoint(self) -> None:
        """Copy the WAL into the database without blocking writers (the intake writer never checkpoints itself)."""
        with self.reading() as conn:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # -- history ----------------------------------------------------------------------------------

    def add_event(self, conn: sqlite3.Connection, job_id: int, event: str, data: dict[str, Any]) -> None:
        conn.execute(
            "INSERT INTO events (job_id, at, event, data) VALUES (?, ?, ?, ?)",
            (job_id, self.clock(), event, json.dumps(data, default=str)),
        )

    def record(self, job_id: int, event: str, data: dict[str, Any]) -> None:
        with self.transaction() as conn:
            self.add_event(conn, job_id, event, data)

    # -- enqueueing (called inside the intake transaction) ----------------------------------------

    def insert_job(self, conn: sqlite3.Connection, trigger: Trigger, now: float) -> int:
        cur = conn.execute(
            "INSERT INTO jobs (repo, number, kind, status, installation_id, available_at, created_at, updated_at) "
            "VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)",
            (trigger.repo, trigger.number, trigger.kind, trigger.installation_id, now, now, now),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def attach_trigger(self, conn: sqlite3.Connection, job_id: int, trigger: Trigger) -> None:
        conn.execute(
            "INSERT INTO triggers (job_id, delivery_id, review_id, data) VALUES (?, ?, ?, ?)",
            (job_id, trigger.delivery_id, trigger.review_id, trigger.model_dump_json()),
        )

    def enqueue(self, conn: sqlite3.Connection, trigger: Trigger, now: float) -> tuple[int, str]:
        """Attach the trigger to the job it belongs to, or open one; returns (job id, queued | merged).

        One active job per issue or PR: a trigger merges into a queued job of its family (`_family`), or one
        awaiting approval; while one runs, exactly one follow-up is queued. Comments of a review already being
        handled merge into that job.
        """
        if trigger.kind in COMMAND_KINDS:
            job_id = self.insert_job(conn, trigger, now)
            self.attach_trigger(conn, job_id, trigger)
            self.add_event(conn, job_id, "queued", {"kind": trigger.kind, "sender": trigger.sender})
            return job_id, "queued"
        target = (trigger.repo, trigger.number)
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
            existing = next((row for row in active if row[1] != "running" and _family(row[2]) == family), None)
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
        running = [int(row[0]) for row in active if row[1] == "running"]
        if running:
            data["follow_up_of"] = running[0]
        self.add_event(conn, job_id, "queued", data)
        return job_id, "queued"

    def cancel_where(self, conn: sqlite3.Connection, where: str, params: Sequence[object], reason: str) -> list[int]:
        """Cancel queued and waiting work jobs at once and ask running ones to stop at their next checkpoint."""
        rows = conn.execute(
            f"SELECT id, status FROM jobs WHERE {where} AND status IN ({_marks(_ACTIVE)}) AND kind IN ({_marks(WORK_KINDS)})",
            (*params, *_ACTIVE, *WORK_KINDS),
        ).fetchall()
        now = self.clock()
        for job_id, status in rows:
            if status != "running":
                conn.execute(
                    "UPDATE jobs SET status = 'cancelled', reason = ?, updated_at = ? WHERE id = ? AND status = ?",
                    (reason, now, job_id, status),
                )
                self.add_event(conn, job_id, "cancelled", {"reason": reason})
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
                conn, f"repo = ? AND number = ? AND status != '{WAITING}'", (repo, number), reason
            )
            woken = answer_waiting(self, conn, repo, number, PlanAnswer(action="stop", by=by))
        return stopped + ([woken] if woken is not None else [])

    # -- leasing ----------------------------------------------------------------------------------

    def _reclaim_expired(self, conn: sqlite3.Connection, now: float) -> None:
        rows = conn.execute(
            "SELECT id, attempts, cancel_requested, lease_owner FROM jobs WHERE status = 'running' AND lease_expires < ?",
            (now,),
        ).fetchall()
        for job_id, attempts, cancel_requested, owner in rows:
            if cancel_requested:
                status, reason = "cancelled", "stopped by /agent stop; its worker stopped answering"
            elif attempts >= MAX_ATTEMPTS:
                status, reason = (
                    "failed",
                    f"its worker stopped answering (lease expired) on attempt {attempts} of {MAX_ATTEMPTS}",
                )
            else:
                status, reason = "queued", ""
            conn.execute(
                "UPDATE jobs SET status = ?, reason = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ? "
                "WHERE id = ? AND status = 'running'",
                (status, reason, now, job_id),
            )
            self.add_event(conn, job_id, "lease_expired", {"worker": owner, "attempt": attempts, "now": status})

    def claim(self, owner: str, kinds: Sequence[str], lease_seconds: float) -> Job | None:
        """Take the oldest runnable job of `kinds`, leased to `owner`; None when there is none."""
        now = self.clock()
        exclusive = (
            ""
            if set(kinds) <= set(COMMAND_KINDS)
            else (
                "AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.repo = j.repo AND r.number = j.number "
                f"AND r.status IN ('running', '{WAITING}') AND r.kind IN ({_marks(WORK_KINDS)}))"
            )
        )
        with self.transaction() as conn:
            self._reclaim_expired(conn, now)
            wake_expired(self, conn, now)
            row = conn.execute(
                f"SELECT j.id FROM jobs j WHERE j.status = 'queued' AND j.kind IN ({_marks(kinds)}) AND j.available_at <= ? "
                f"{exclusive} ORDER BY j.id LIMIT 1",
                (*kinds, now, *(WORK_KINDS if exclusive else ())),
            ).fetchone()
            if row is None:
                return None
            job_id = int(row[0])
            conn.execute(
                "UPDATE jobs SET status = 'running', lease_owner = ?, lease_expires = ?, attempts = attempts + 1, "
                "updated_at = ? WHERE id = ? AND status = 'queued'",
                (owner, now + lease_seconds, now, job_id),
            )
            attempt = conn.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
            self.add_event(conn, job_id, "claimed", {"worker": owner, "attempt": attempt})
        return self.get_job(job_id)

    def renew(self, owner: str, lease_seconds: float) -> int:
        """Extend every lease `owner` holds; returns how many it still holds."""
        now = self.clock()
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE jobs SET lease_expires = ? WHERE lease_owner = ? AND status = 'running'",
                (now + lease_seconds, owner),
            )
            return cur.rowcount

    def cancel_requested(self, job_id: int) -> bool:
        with self.reading() as conn:
            row = conn.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return bool(row and row[0])

    def finish(self, job_id: int, owner: str, status: str, reason: str, data: dict[str, Any] | None = None) -> bool:
        """End a job this owner holds; False when the lease was lost meanwhile (another worker has it)."""
        now = self.clock()
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE jobs SET status = ?, reason = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ? "
                "WHERE id = ? AND lease_owner = ? AND status = 'running'",
                (status, reason, now, job_id, owner),
            )
            if cur.rowcount:
                self.add_event(conn, job_id, status, {"reason": reason, **(data or {})})
            return bool(cur.rowcount)

    def fail_attempt(self, job_id: int, owner: str, reason: str, retry_in: float) -> str:
        """Record a failed attempt: queued again after `retry_in` s, or `failed` after the last attempt."""
        now = self.clock()
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT attempts FROM jobs WHERE id = ? AND lease_owner = ? AND status = 'running'", (job_id, owner)
            ).fetchone()
            if row is None:
                return "lost"
            attempts = int(row[0])
            if attempts >= MAX_ATTEMPTS:
                status, final = "failed", f"failed on all {MAX_ATTEMPTS} attempts; last error: {reason}"
            else:
                status, final = "queued", ""
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
                "UPDATE jobs SET status = 'queued', attempts = attempts - 1, lease_owner = NULL, lease_expires = NULL, "
                "available_at = ?, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = 'running'",
                (now, now, job_id, owner),
            )
            if cur.rowcount:
                self.add_event(conn, job_id, "released", {"worker": owner, "why": "worker shutting down"})
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

    def event_counts(self, event: str, key: str) -> dict[str, int]:
        """How many history events named `event` the store holds, by the value of `key` in their data."""
        counts: dict[str, int] = {}
        with self.reading() as conn:
            for (data,) in conn.execute("SELECT data FROM events WHERE event = ?", (event,)):
                value = str(json.loads(data).get(key, ""))
                counts[value] = counts.get(value, 0) + 1
        return counts

    def job_counts(self) -> dict[tuple[str, str], int]:
        """Jobs by (kind, status)."""
        with self.reading() as conn:
            rows = conn.execute("SELECT kind, status, COUNT(*) FROM jobs GROUP BY kind, status").fetchall()
        return {(r[0], r[1]): int(r[2]) for r in rows}
