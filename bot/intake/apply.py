"""What a stored delivery means, applied to the store: its job, trigger and history rows, or an installation change.

Synchronous and transactional; `bot.intake.writer` decides when it runs (with the delivery's own
commit when idle, or after a burst, from the stored rows marked unprocessed).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from bot.errors import StoreUnavailable
from bot.intake.events import Event
from bot.intake.triggers import Decision, InstallationChange, LabelRemoved, Triggered
from bot.queue.database import Conn, insert_sql, is_outage, savepoint
from bot.queue.models import MAX_DELIVERY_FAILURES, Trigger
from bot.queue.store import Store
from bot.vocabulary import DUPLICATE, STORED, IntakeAnswer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Incoming:
    event: Event
    body: bytes
    decision: Decision
    received_at: float


@dataclass(frozen=True)
class Ack:
    outcome: IntakeAnswer
    """What the delivery meant, or became (queued, merged); `stored`: stored, its meaning applied soon after."""
    reason: str = ""
    job_id: int | None = None


def _apply_installation(store: Store, conn: Conn, change: InstallationChange, now: float) -> None:
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
        store.work.cancel_where(
            conn, "installation_id = ?", (change.installation_id,), f"the App installation was {status}"
        )
    for repo in change.repos_removed:
        store.work.cancel_where(
            conn, "installation_id = ? AND repo = ?", (change.installation_id, repo), f"the App was removed from {repo}"
        )
    for chore in change.label_chores():
        store.work.enqueue(conn, chore, now)


def _work(decision: Decision) -> str | None:
    """What processing the delivery will need, stored with it; None for a delivery that needs none."""
    if isinstance(decision, Triggered):
        return decision.trigger.model_dump_json()
    if isinstance(decision, InstallationChange | LabelRemoved):
        return decision.model_dump_json()
    return None


def _apply_meaning(store: Store, conn: Conn, decision: Decision, received_at: float) -> Ack:
    reason = getattr(decision, "reason", "")
    if isinstance(decision, Triggered):
        job_id, outcome = store.work.enqueue(conn, decision.trigger, received_at)
        return Ack(outcome, job_id=job_id)
    if isinstance(decision, InstallationChange):
        _apply_installation(store, conn, decision, received_at)
    if isinstance(decision, LabelRemoved):
        target = (decision.installation_id, decision.repo, decision.number)
        where = "installation_id = ? AND repo = ? AND number = ? AND kind = 'issue'"
        store.work.cancel_where(conn, where, target, reason)
    return Ack(decision.outcome, reason)


def _stored_decision(outcome: str, work: str) -> Decision:
    if outcome == "trigger":
        return Triggered(Trigger.model_validate_json(work))
    if outcome == LabelRemoved.outcome:
        return LabelRemoved.model_validate_json(work)
    return InstallationChange.model_validate_json(work)


def _process(
    store: Store, conn: Conn, delivery_id: str, decision: Callable[[], Decision], received_at: float
) -> Ack | None:
    """Mark one stored delivery processed and apply what it means, in a savepoint of the caller's transaction.

    A failure that is the delivery's own (a value the database refuses, a stored decision that no longer
    reads) rolls back only this delivery and counts against it: after MAX_DELIVERY_FAILURES it is quarantined, and
    the deliveries after it go on. A failure of the store itself is raised (the whole pass is retried).
    None when another process processed it first, or when it failed.
    """
    try:
        with savepoint(conn):
            if not conn.execute(
                "UPDATE deliveries SET processed = 1 WHERE id = ? AND processed = 0", (delivery_id,)
            ).rowcount:
                return None
            return _apply_meaning(store, conn, decision(), received_at)
    except Exception as exc:
        if is_outage(exc):
            raise
        error = f"{exc.__class__.__name__}: {' '.join(str(exc).split())}"[:1000]
        failures = _record_failure(conn, delivery_id, error)
        if failures >= MAX_DELIVERY_FAILURES:
            log.error("delivery %s quarantined after %d failures: %s", delivery_id, failures, error)
        else:
            log.warning(
                "delivery %s not processed (failure %d of %d): %s", delivery_id, failures, MAX_DELIVERY_FAILURES, error
            )
        return None


def _record_failure(conn: Conn, delivery_id: str, error: str) -> int:
    """Count a failure against a stored delivery (quarantined, i.e. done with, at the last); returns its failures."""
    conn.execute(
        "UPDATE deliveries SET failures = failures + 1, error = ?, "
        "processed = CASE WHEN failures + 1 >= ? THEN 1 ELSE 0 END WHERE id = ?",
        (error, MAX_DELIVERY_FAILURES, delivery_id),
    )
    return int(conn.execute("SELECT failures FROM deliveries WHERE id = ?", (delivery_id,)).fetchone()[0])


_COLUMNS = ("id", "event", "action", "outcome", "reason", "payload", "received_at", "work", "processed")
_DUPLICATE = Ack(DUPLICATE, "this delivery was received before")


def _row(item: Incoming, *, applied: bool = False) -> tuple[object, ...]:
    """The delivery's row (`_COLUMNS`): what it is, what the trigger rules decided, and the work it still needs
    (`applied`: none, its meaning is applied in the same transaction)."""
    event, decision = item.event, item.decision
    work = _work(decision)
    return (
        event.delivery_id,
        event.name,
        event.action,
        decision.outcome,
        getattr(decision, "reason", ""),
        item.body.decode("utf-8", "replace"),
        item.received_at,
        work,
        1 if work is None or applied else 0,
    )


def _stored(decision: Decision, work: object) -> Ack:
    """The answer for a delivery stored and not applied yet: `stored` if it has work left, else what it means."""
    if work is not None or isinstance(decision, Triggered):
        return Ack(STORED)
    return Ack(decision.outcome, getattr(decision, "reason", ""))


def apply_delivery(store: Store, conn: Conn, item: Incoming) -> Ack:
    """Store one delivery and what it means; a delivery id seen before changes nothing."""
    row = _row(item)
    if conn.execute(insert_sql("deliveries", _COLUMNS, 1), row).rowcount == 0:
        return _DUPLICATE
    ack = _stored(item.decision, row[7])
    if ack.outcome != STORED:
        return ack
    # Applied now; if that fails, it is stored and left for the processor, which tries it again.
    return _process(store, conn, item.event.delivery_id, lambda: item.decision, item.received_at) or ack


def store_deliveries(store: Store, items: list[Incoming]) -> list[Ack]:
    """Store the deliveries' rows with one INSERT, their meaning left for `process_pending`; a delivery id seen
    before, or earlier in `items`, is a duplicate."""
    with store.transaction() as conn:
        return _stored_once(store, conn, items, lambda fresh: [_stored(i.decision, _work(i.decision)) for i in fresh])


def apply_together(store: Store, conn: Conn, items: list[Incoming]) -> list[Ack]:
    """Store the deliveries and what they mean, in the caller's transaction: one INSERT for their rows, and a burst
    of triggers queued together (`WorkQueue.enqueue_many`: a few statements for all of them); anything else is
    applied one delivery after the other, in order. A delivery id seen before, or earlier in `items`, is a duplicate."""
    return _stored_once(store, conn, items, lambda fresh: _meanings(store, conn, fresh), applied=True)


def _stored_once(
    store: Store,
    conn: Conn,
    items: list[Incoming],
    acks_for: Callable[[list[Incoming]], list[Ack]],
    *,
    applied: bool = False,
) -> list[Ack]:
    """Insert the rows of the deliveries not stored yet (the first copy of each id); their acks from `acks_for`."""
    rows = [_row(item, applied=applied) for item in items]
    first = {row[0]: row for row in reversed(rows)}  # the first copy of each delivery id in the batch
    inserted = store.db.insert_new(conn, "deliveries", _COLUMNS, list(first.values()))
    fresh: list[int] = []
    for n, row in enumerate(rows):
        if row[0] in inserted:
            inserted.discard(row[0])  # a second copy in this batch is the duplicate
            fresh.append(n)
    acks = [_DUPLICATE] * len(items)
    for n, ack in zip(fresh, acks_for([items[n] for n in fresh])):
        acks[n] = ack
    return acks


def _meanings(store: Store, conn: Conn, items: list[Incoming]) -> list[Ack]:
    """What each delivery means, applied in order; when none cancels or changes an installation, the triggers are
    queued together (their order between different issues does not matter)."""
    if any(isinstance(item.decision, InstallationChange | LabelRemoved) for item in items):
        return [_apply_meaning(store, conn, item.decision, item.received_at) for item in items]
    triggers = [(item.decision.trigger, item.received_at) for item in items if isinstance(item.decision, Triggered)]
    queued = iter(store.work.enqueue_many(conn, triggers))
    acks = []
    for item in items:
        if isinstance(item.decision, Triggered):
            job_id, outcome = next(queued)
            acks.append(Ack(outcome, job_id=job_id))
        else:
            acks.append(Ack(item.decision.outcome, getattr(item.decision, "reason", "")))
    return acks


def _apply_all(store: Store, items: list[Incoming], *, defer: bool) -> list[Ack]:
    if defer:
        return store_deliveries(store, items)
    with store.transaction() as conn:
        if len(items) == 1:  # alone, a delivery whose meaning fails is still stored, for `process_pending`
            return [apply_delivery(store, conn, items[0])]
        return apply_together(store, conn, items)


def apply_batch(store: Store, items: list[Incoming], *, defer: bool = False) -> list[Ack | Exception]:
    """One transaction for the batch (`defer`: only the deliveries' rows). If it fails, each delivery is tried
    alone so one bad one sinks only itself."""
    try:
        return list(_apply_all(store, items, defer=defer))
    except Exception:
        if len(items) == 1:
            raise
    results: list[Ack | Exception] = []
    for item in items:
        try:
            results += _apply_all(store, [item], defer=defer)
        except Exception as exc:  # noqa: BLE001 - refused (503) alone; the others are stored
            results.append(exc if isinstance(exc, StoreUnavailable) else StoreUnavailable(f"cannot store it ({exc})"))
    return results


def process_pending(store: Store, limit: int) -> int:
    """Apply the meaning of up to `limit` stored, unprocessed deliveries, oldest first; returns how many were found.

    One transaction: it holds the write lock from its start (on PostgreSQL: the rows it read, SKIP LOCKED, so
    another process takes others), and each delivery is marked processed in it, so whichever process or
    thread comes next finds them done. Each delivery is applied on its own
    (see `_process`): one that fails is counted, never blocks the others.
    """
    with store.transaction() as conn:
        rows = conn.execute(
            "SELECT id, outcome, work, received_at FROM deliveries WHERE processed = 0 ORDER BY received_at LIMIT ?"
            f"{store.db.for_update}{store.db.skip_locked}",
            (limit,),
        ).fetchall()
        for delivery_id, outcome, work, received_at in rows:
            _process(store, conn, delivery_id, functools.partial(_stored_decision, outcome, work), received_at)
    return len(rows)
