"""What /healthz and /metrics check in the store besides answering: that a write commits, and the deliveries' state."""

from __future__ import annotations

from bot.queue.models import MAX_DELIVERY_FAILURES
from bot.queue.store import Store

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
