"""Limits shared by every worker of an organisation: running jobs per repository and installation, daily spend.

A job beyond a limit stays queued; `claim` passes it over (in SQL, so every worker of every machine
agrees) and `waiting_reasons` says what it waits behind, for the issue comment. Spend is what the
installation's jobs recorded (`jobs.cost_usd`) since 00:00 UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from bot.queue.database import Conn, Database
from bot.queue.history import History
from bot.queue.lookup import JobLookup
from bot.queue.models import Job
from bot.vocabulary import QUEUED, RUNNING, WORK_KINDS

_WORK = ",".join(f"'{kind}'" for kind in WORK_KINDS)


@dataclass(frozen=True)
class Limits:
    per_repo: int | None = None
    """Work jobs running at once in one repository (AIFIX_MAX_RUNNING_PER_REPO); None: no limit."""
    per_installation: int | None = None
    """… in one App installation (AIFIX_MAX_RUNNING_PER_INSTALLATION)."""
    daily_cost_usd: float | None = None
    """What one installation's jobs may spend per UTC day before new ones wait (AIFIX_DAILY_COST_USD)."""


NO_LIMITS = Limits()


def day_start(now: float) -> float:
    """00:00 UTC of the day `now` falls in, as epoch seconds."""
    day = dt.datetime.fromtimestamp(now, dt.UTC).date()
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()


def _running(column: str) -> str:
    return f"(SELECT COUNT(*) FROM jobs r WHERE r.{column} = j.{column} AND r.status = '{RUNNING}' AND r.kind IN ({_WORK}))"


def _spent() -> str:
    return "(SELECT COALESCE(SUM(c.cost_usd), 0) FROM jobs c WHERE c.installation_id = j.installation_id AND c.updated_at >= ?)"


def allowed(limits: Limits, now: float) -> tuple[str, list[Any]]:
    """SQL conditions on a queued job `j` that hold when it may start now, and their parameters."""
    sql = ""
    params: list[Any] = []
    if limits.per_repo is not None:
        sql += f" AND {_running('repo')} < ?"
        params.append(limits.per_repo)
    if limits.per_installation is not None:
        sql += f" AND {_running('installation_id')} < ?"
        params.append(limits.per_installation)
    if limits.daily_cost_usd is not None:
        sql += f" AND {_spent()} < ?"
        params += [day_start(now), limits.daily_cost_usd]
    return sql, params


def _numbers(conn: Conn, column: str, value: object) -> list[str]:
    rows = conn.execute(
        f"SELECT repo, number FROM jobs WHERE {column} = ? AND status = '{RUNNING}' AND kind IN ({_WORK}) ORDER BY id",
        (value,),
    ).fetchall()
    return [f"{r[0]}#{r[1]}" for r in rows]


def waiting_reason(conn: Conn, limits: Limits, job: Any, now: float) -> str:
    """Why the queued job (a `jobs` row) cannot start now; empty when nothing of these limits holds it."""
    for limit, column, where, setting in (
        (limits.per_repo, "repo", f"in {job['repo']}", "AIFIX_MAX_RUNNING_PER_REPO"),
        (
            limits.per_installation,
            "installation_id",
            "for this installation of the App",
            "AIFIX_MAX_RUNNING_PER_INSTALLATION",
        ),
    ):
        running = _numbers(conn, column, job[column]) if limit is not None else []
        if limit is not None and len(running) >= limit:
            return (
                f"Queued behind {', '.join(running)}: at most {limit} job(s) run at once {where} ({setting}). "
                "It starts when one of them ends."
            )
    if limits.daily_cost_usd is not None:
        start = day_start(now)
        spent = conn.execute(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM jobs WHERE installation_id = ? AND updated_at >= ?",
            (job["installation_id"], start),
        ).fetchone()[0]
        if spent >= limits.daily_cost_usd:
            tomorrow = dt.datetime.fromtimestamp(start + 86400, dt.UTC).strftime("%Y-%m-%d 00:00 UTC")
            return (
                f"Waiting until {tomorrow}: this installation's jobs spent ${spent:.2f} today, its daily budget is "
                f"${limits.daily_cost_usd:.2f} (AIFIX_DAILY_COST_USD). It starts on the next UTC day."
            )
    return ""


class _Store(Protocol):
    clock: Callable[[], float]
    db: Database
    history: History
    jobs: JobLookup

    def transaction(self) -> AbstractContextManager[Conn]: ...


def waiting_notices(store: _Store, limits: Limits, limit: int = 20) -> list[tuple[Job, str]]:
    """Queued jobs the limits hold whose reason changed since it was last told: (job, reason) to tell now.

    Each is handed to one caller only (the new reason is stored in the same transaction).
    """
    now = store.clock()
    told: list[tuple[int, str]] = []
    with store.transaction() as conn:
        rows = conn.execute(
            f"SELECT * FROM jobs WHERE status = '{QUEUED}' AND kind IN ({_WORK}) AND available_at <= ? "
            f"ORDER BY id LIMIT ?{store.db.for_update}{store.db.skip_locked}",
            (now, limit),
        ).fetchall()
        for row in rows:
            reason = waiting_reason(conn, limits, row, now)
            if reason != row["waiting"]:
                conn.execute("UPDATE jobs SET waiting = ? WHERE id = ?", (reason, row["id"]))
                if reason:
                    store.history.add(conn, row["id"], "waiting", {"reason": reason})
                    told.append((int(row["id"]), reason))
    return [(job, reason) for job_id, reason in told if (job := store.jobs.get(job_id)) is not None]
