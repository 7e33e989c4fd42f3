"""What a stored delivery means, applied to the store: its job, trigger and history rows, or an installation change.

Synchronous and transactional; `bot.intake.writer` decides when it runs (with the delivery's own
commit when idle, or after a burst, from the stored rows marked unprocessed).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass

from bot.errors import StoreUnavailable
from bot.intake.events import Event
from bot.intake.triggers import Decision, InstallationChange, Triggered
from bot.queue.models import Trigger
from bot.queue.store import Store


@dataclass(frozen=True)
class Incoming:
    event: Event
    body: bytes
    decision: Decision
    received_at: float


@dataclass(frozen=True)
class Ack:
    outcome: str
    """ping | ignored | installation | queued | merged | duplicate, or accepted: stored, its meaning applied soon after."""
    reason: str = ""
    job_id: int | None = None


def _apply_installation(store: Store, conn: sqlite3.Connection, change: InstallationChange, now: float) -> None:
    row = conn.execute("SELECT repos FROM installations WHERE id = ?", (change.installation_id,)).fetchone()
    repos = set(json.loads(row[0])) if row else set()
    repos = (repos | set(change.repos_added)) - set(change.repos_removed)
    status = {"deleted": "deleted", "suspend": "suspended"}.get(change.action, "active")
    if status == "deleted":
        repos = set()
    conn.execute(
        "INSERT INTO installations (id, account, status, repos, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET account = excluded.account, status = excluded.status, repos = excluded.repos, "
        "updated_at = excluded.updated_at",
        (change.installation_id, change.account, status, json.dumps(sorted(repos)), now),
    )
    if change.stops_work:
        store.cancel_where(conn, "installation_id = ?", (change.installation_id,), f"the App installation was {status}")
    for repo in change.repos_removed:
        store.cancel_where(
            conn, "installation_id = ? AND repo = ?", (change.installation_id, repo), f"the App was removed from {repo}"
        )


def _work(decision: Decision) -> str | None:
    """What processing the delivery will need, stored with it; None for a delivery that needs none."""
    if isinstance(decision, Triggered):
        return decision.trigger.model_dump_json()
    if isinstance(decision, InstallationChange):
        return json.dumps(dataclasses.asdict(decision))
    return None


def _apply_meaning(store: Store, conn: sqlite3.Connection, decision: Decision, received_at: float) -> Ack:
    reason = getattr(decision, "reason", "")
    if isinstance(decision, Triggered):
        job_id, outcome = store.enqueue(conn, decision.trigger, received_at)
        return Ack(outcome, job_id=job_id)
    if isinstance(decision, InstallationChange):
        _apply_installation(store, conn, decision, received_at)
    return Ack(decision.outcome, reason)


def apply_delivery(store: Store, conn: sqlite3.Connection, item: Incoming, *, defer: bool = False) -> Ack:
    """Store one delivery and, unless `defer`, what it means; a delivery id seen before changes nothing."""
    event, decision = item.event, item.decision
    work = _work(decision)
    deferred = defer and work is not None
    cur = conn.execute(
        "INSERT INTO deliveries (id, event, action, outcome, reason, payload, received_at, work, processed) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (
            event.delivery_id,
            event.name,
            event.action,
            decision.outcome,
            getattr(decision, "reason", ""),
            item.body.decode("utf-8", "replace"),
            item.received_at,
            work,
            0 if deferred else 1,
        ),
    )
    if cur.rowcount == 0:
        return Ack("duplicate", "this delivery was received before")
    if deferred:
        return Ack("accepted")
    return _apply_meaning(store, conn, decision, item.received_at)


def apply_batch(store: Store, items: list[Incoming], *, defer: bool = False) -> list[Ack | Exception]:
    """One transaction for the batch. If it fails, each delivery is tried alone so one bad one sinks only itself."""
    try:
        with store.transaction() as conn:
            return [apply_delivery(store, conn, item, defer=defer) for item in items]
    except StoreUnavailable:
        if len(items) == 1:
            raise
    results: list[Ack | Exception] = []
    for item in items:
        try:
            with store.transaction() as conn:
                results.append(apply_delivery(store, conn, item, defer=defer))
        except StoreUnavailable as exc:
            results.append(exc)
    return results


def _stored_decision(outcome: str, work: str) -> Decision:
    if outcome == "trigger":
        return Triggered(Trigger.model_validate_json(work))
    return InstallationChange(**json.loads(work))


def process_pending(store: Store, limit: int) -> int:
    """Apply the meaning of up to `limit` stored, unprocessed deliveries, oldest first; returns how many were found.

    One transaction: it holds the write lock from its start, and each delivery is marked processed in it,
    so whichever process or thread comes next finds them done.
    """
    with store.transaction() as conn:
        rows = conn.execute(
            "SELECT id, outcome, work, received_at FROM deliveries WHERE processed = 0 ORDER BY received_at LIMIT ?",
            (limit,),
        ).fetchall()
        for delivery_id, outcome, work, received_at in rows:
            if conn.execute(
                "UPDATE deliveries SET processed = 1 WHERE id = ? AND processed = 0", (delivery_id,)
            ).rowcount:
                _apply_meaning(store, conn, _stored_decision(outcome, work), received_at)
    return len(rows)
