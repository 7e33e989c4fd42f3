"""What /healthz and /metrics check in the store besides answering: that a write commits, and the deliveries' state."""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.queue.models import MAX_DELIVERY_FAILURES
from bot.queue.store import Store
from bot.vocabulary import FINAL_STATUSES, QUEUED

BACKLOG_SECONDS = 60.0
"""A stored delivery not processed this long after it arrived means processing is stuck: the service is unhealthy."""


def check_write(store: Store) -> None:
    """Commit a write (with its fsync) to the file the store opened; StoreUnavailable if that fails."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO health (id, checked_at) VALUES (1, ?) "
            "ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
            (store.clock(),),
        )


def delivery_backlog(store: Store, older_than: float = BACKLOG_SECONDS) -> int:
    """Stored deliveries received more than `older_than` seconds ago and not processed yet."""
    with store.reading() as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM deliveries WHERE processed = 0 AND received_at < ?", (store.clock() - older_than,)
        ).fetchone()
    return int(row[0])


def quarantined_deliveries(store: Store) -> int:
    """Deliveries whose meaning failed to apply MAX_DELIVERY_FAILURES times (kept with their error, not retried)."""
    with store.reading() as conn:
        row = conn.execute("SELECT COUNT(*) FROM deliveries WHERE failures >= ?", (MAX_DELIVERY_FAILURES,)).fetchone()
    return int(row[0])


@dataclass(frozen=True)
class QueueFigures:
    """What /metrics reports from the store, which every intake and worker shares."""

    quarantined: int
    cost_by_repo: dict[str, float]
    """Dollars the finished jobs of each repository recorded."""
    outcomes: dict[tuple[str, str], int]
    """Jobs that ended, by (repository, final status)."""
    queued: int
    oldest_queued_seconds: float
    """Age of the oldest queued job (0 when none is queued)."""


def queue_figures(store: Store) -> QueueFigures:
    finals = sorted(FINAL_STATUSES)
    marks = ",".join("?" for _ in finals)
    with store.reading() as conn:
        rows = conn.execute(
            f"SELECT repo, status, COUNT(*), COALESCE(SUM(cost_usd), 0) FROM jobs WHERE status IN ({marks}) "
            "GROUP BY repo, status",
            finals,
        ).fetchall()
        queued, oldest = conn.execute(
            f"SELECT COUNT(*), MIN(created_at) FROM jobs WHERE status = '{QUEUED}'"
        ).fetchone()
    cost: dict[str, float] = {}
    for repo, _, _, usd in rows:
        cost[repo] = cost.get(repo, 0.0) + float(usd)
    return QueueFigures(
        quarantined=quarantined_deliveries(store),
        cost_by_repo=cost,
        outcomes={(r[0], r[1]): int(r[2]) for r in rows},
        queued=int(queued),
        oldest_queued_seconds=max(store.clock() - float(oldest), 0.0) if oldest is not None else 0.0,
    )


def event_counts(store: Store, event: str, key: str) -> dict[str, int]:
    """How many history events named `event` the store holds, by the value of `key` in their data."""
    counts: dict[str, int] = {}
    with store.reading() as conn:
        for (data,) in conn.execute("SELECT data FROM events WHERE event = ?", (event,)):
            value = str(json.loads(data).get(key, ""))
            counts[value] = counts.get(value, 0) + 1
    return counts


def job_counts(store: Store) -> dict[tuple[str, str], int]:
    """Jobs by (kind, status)."""
    with store.reading() as conn:
        rows = conn.execute("SELECT kind, status, COUNT(*) FROM jobs GROUP BY kind, status").fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}
