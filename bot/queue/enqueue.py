"""Putting work on the queue and taking it off: a trigger joins its issue's or PR's job, or opens one; cancelling.

Called inside the intake's transaction (and a `scan` job's): one active job per issue or PR, so triggers
arriving together merge instead of racing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bot.queue.database import Conn, Database, marks, values_sql
from bot.queue.history import History
from bot.queue.models import PlanAnswer, Trigger
from bot.queue.waiting import WaitingJobs
from bot.vocabulary import (
    AWAITING_APPROVAL,
    CANCELLED,
    COMMAND_KINDS,
    MERGED,
    OWN_FAMILY_KINDS,
    QUEUED,
    RUNNING,
    WORK_KINDS,
    Enqueued,
)

ACTIVE = (QUEUED, RUNNING, AWAITING_APPROVAL)
"""Jobs not ended yet: at most one of them (plus one queued follow-up) per issue or PR."""


def _family(kind: str) -> str:
    """Triggers merge into queued jobs of their family: issue, retry and review share one; ci, rebase, scan each their own."""
    return kind if kind in OWN_FAMILY_KINDS else "work"


JOB_COLUMNS = ("repo", "number", "kind", "status", "installation_id", "available_at", "created_at", "updated_at")
TRIGGER_COLUMNS = ("job_id", "delivery_id", "review_id", "data")
COMPOUND_LIMIT = 200
"""SELECTs joined in one statement at most (SQLite allows 500)."""


def _job_row(trigger: Trigger, now: float) -> tuple[object, ...]:
    return (trigger.repo, trigger.number, trigger.kind, QUEUED, trigger.installation_id, now, now, now)


def _trigger_row(job_id: int, trigger: Trigger) -> tuple[object, ...]:
    return (job_id, trigger.delivery_id, trigger.review_id, trigger.model_dump_json())


def insert_job(db: Database, conn: Conn, trigger: Trigger, now: float) -> int:
    [job_id] = db.insert_ids(conn, "jobs", JOB_COLUMNS, [_job_row(trigger, now)])
    db.notify_work(conn)
    return job_id


def attach_trigger(conn: Conn, job_id: int, trigger: Trigger) -> None:
    conn.execute(values_sql("triggers", TRIGGER_COLUMNS, 1), _trigger_row(job_id, trigger))


def _queued(trigger: Trigger) -> dict[str, Any]:
    """The `queued` event's data."""
    return {"kind": trigger.kind, "sender": trigger.sender, "delivery": trigger.delivery_id}


class WorkQueue:
    """Enqueueing triggers and cancelling an issue's or PR's work."""

    def __init__(self, db: Database, history: History, waiting: WaitingJobs, clock: Callable[[], float]) -> None:
        self.db = db
        self.history = history
        self.waiting = waiting
        self.clock = clock

    def enqueue(self, conn: Conn, trigger: Trigger, now: float) -> tuple[int, Enqueued]:
        """Attach the trigger to the job it belongs to, or open one; returns (job id, queued | merged).

        One active job per issue or PR: a trigger merges into a queued job of its family (`_family`), or one
        awaiting approval; while one runs, exactly one follow-up is queued. Comments of a review already being
        handled merge into that job.
        """
        if trigger.kind not in WORK_KINDS:  # commands and chores: one job each, never merged
            job_id = insert_job(self.db, conn, trigger, now)
            attach_trigger(conn, job_id, trigger)
            self.history.add(conn, job_id, QUEUED, {"kind": trigger.kind, "sender": trigger.sender})
            return job_id, QUEUED
        target = (trigger.repo, trigger.number)
        self.db.lock(conn, f"target {trigger.repo}#{trigger.number}")
        existing = None
        if trigger.review_id is not None:
            existing = conn.execute(
                "SELECT j.id FROM triggers t JOIN jobs j ON j.id = t.job_id WHERE t.review_id = ? AND j.repo = ? "
                f"AND j.number = ? AND j.status IN ({marks(ACTIVE)}) ORDER BY j.id DESC LIMIT 1",
                (trigger.review_id, *target, *ACTIVE),
            ).fetchone()
        active = conn.execute(
            f"SELECT id, status, kind FROM jobs WHERE repo = ? AND number = ? AND status IN ({marks(ACTIVE)}) "
            f"AND kind IN ({marks(WORK_KINDS)}) ORDER BY id",
            (*target, *ACTIVE, *WORK_KINDS),
        ).fetchall()
        if existing is None:
            family = _family(trigger.kind)
            existing = next((row for row in active if row[1] != RUNNING and _family(row[2]) == family), None)
        if existing is not None:
            job_id = int(existing[0])
            attach_trigger(conn, job_id, trigger)
            self.history.add(conn, job_id, MERGED, _queued(trigger))
            return job_id, MERGED
        job_id = insert_job(self.db, conn, trigger, now)
        attach_trigger(conn, job_id, trigger)
        data = _queued(trigger)
        running = [int(row[0]) for row in active if row[1] == RUNNING]
        if running:
            data["follow_up_of"] = running[0]
        self.history.add(conn, job_id, QUEUED, data)
        return job_id, QUEUED

    def enqueue_many(self, conn: Conn, triggers: Sequence[tuple[Trigger, float]]) -> list[tuple[int, Enqueued]]:
        """`enqueue` for each (trigger, time received), in order, in a few statements for a burst of triggers each for
        an issue or PR of its own: those whose target has no active job open their jobs together (one INSERT each for
        the jobs, their triggers and their history); any other goes through `enqueue`."""
        plain = [t for t, _ in triggers if t.kind not in COMMAND_KINDS and t.review_id is None]
        targets = sorted({(t.repo, t.number) for t in plain})
        if len(triggers) < 2 or len(plain) < len(triggers) or len(targets) < len(plain):
            return [self.enqueue(conn, trigger, now) for trigger, now in triggers]
        self.db.lock(conn, *(f"target {repo}#{number}" for repo, number in targets))
        busy = self._active_targets(conn, targets)
        fresh = [(trigger, now) for trigger, now in triggers if (trigger.repo, trigger.number) not in busy]
        opened: dict[tuple[str, int], int] = {}
        if fresh:
            ids = self.db.insert_ids(conn, "jobs", JOB_COLUMNS, [_job_row(trigger, now) for trigger, now in fresh])
            opened = {(trigger.repo, trigger.number): job_id for (trigger, _), job_id in zip(fresh, ids)}
            rows = [_trigger_row(job_id, trigger) for (trigger, _), job_id in zip(fresh, ids)]
            conn.execute(values_sql("triggers", TRIGGER_COLUMNS, len(rows)), [v for row in rows for v in row])
            self.history.add_many(
                conn, [(job_id, QUEUED, _queued(trigger)) for (trigger, _), job_id in zip(fresh, ids)]
            )
            self.db.notify_work(conn)
        return [
            (opened[(trigger.repo, trigger.number)], QUEUED)
            if (trigger.repo, trigger.number) in opened
            else self.enqueue(conn, trigger, now)
            for trigger, now in triggers
        ]

    def _active_targets(self, conn: Conn, targets: list[tuple[str, int]]) -> set[tuple[str, int]]:
        """The targets with an active work job. One SELECT per target joined by UNION ALL, each searching the
        (repo, number, status) index: ORed targets made SQLite's planner scan every queued job instead."""
        one = f"SELECT repo, number FROM jobs WHERE repo = ? AND number = ? AND status IN ({marks(ACTIVE)}) AND kind IN ({marks(WORK_KINDS)})"
        busy: set[tuple[str, int]] = set()
        for start in range(0, len(targets), COMPOUND_LIMIT):
            chunk = targets[start : start + COMPOUND_LIMIT]
            params = [value for repo, number in chunk for value in (repo, number, *ACTIVE, *WORK_KINDS)]
            busy.update(
                (repo, int(number)) for repo, number in conn.execute(" UNION ALL ".join([one] * len(chunk)), params)
            )
        return busy

    def cancel_where(self, conn: Conn, where: str, params: Sequence[object], reason: str) -> list[int]:
        """Cancel queued and waiting work jobs at once and ask running ones to stop at their next checkpoint."""
        rows = conn.execute(
            f"SELECT id, status FROM jobs WHERE {where} AND status IN ({marks(ACTIVE)}) AND kind IN ({marks(WORK_KINDS)})",
            (*params, *ACTIVE, *WORK_KINDS),
        ).fetchall()
        now = self.clock()
        for job_id, status in rows:
            if status != RUNNING:
                conn.execute(
                    f"UPDATE jobs SET status = '{CANCELLED}', reason = ?, updated_at = ? WHERE id = ? AND status = ?",
                    (reason, now, job_id, status),
                )
                self.history.add(conn, job_id, CANCELLED, {"reason": reason})
            else:
                conn.execute(
                    "UPDATE jobs SET cancel_requested = 1, reason = ?, updated_at = ? WHERE id = ?",
                    (reason, now, job_id),
                )
                self.history.add(conn, job_id, "cancel_requested", {"reason": reason})
        return [int(r[0]) for r in rows]

    def cancel_target(self, repo: str, number: int, reason: str, *, by: str = "") -> list[int]:
        """`/agent stop`: cancel or stop the target's jobs; one awaiting approval is woken to end itself with a comment."""
        with self.db.transaction() as conn:
            stopped = self.cancel_where(
                conn, f"repo = ? AND number = ? AND status != '{AWAITING_APPROVAL}'", (repo, number), reason
            )
            woken = self.waiting.answer(conn, repo, number, PlanAnswer(action="stop", by=by))
        return stopped + ([woken] if woken is not None else [])
