"""Storing deliveries: one transaction per batch (group commit) from a single writer thread.

Every delivery in a batch is committed (WAL fsynced) before any of them is acknowledged, so a 202
always means "on disk". Batching amortises the fsync over the requests that arrived meanwhile.

What a delivery means (its job, trigger and history rows, or an installation change) is applied in
the same transaction when the writer is idle (a lone delivery: the answer then names the job). Under
load (several deliveries in one batch, or older ones still unprocessed) only the delivery row, with
its decision, is committed before the answer (`accepted`); its meaning is applied once no delivery
has arrived for QUIET_BEFORE_PROCESSING, in batches, each in a transaction that also marks the
delivery processed: a crash in between loses nothing (the next start applies it) and two processes
sharing the database never both apply one (each transaction holds the write lock and re-checks the
mark).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass

from bot.errors import StoreUnavailable
from bot.intake.events import Event
from bot.intake.triggers import Decision, InstallationChange, Triggered
from bot.queue.models import Trigger
from bot.queue.store import Store

log = logging.getLogger(__name__)


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

    @property
    def duplicate(self) -> bool:
        return self.outcome == "duplicate"


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
        store.cancel_where(conn, "installation_id = ? AND repo = ?", (change.installation_id, repo), f"the App was removed from {repo}")


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
        (event.delivery_id, event.name, event.action, decision.outcome, getattr(decision, "reason", ""),
         item.body.decode("utf-8", "replace"), item.received_at, work, 0 if deferred else 1),
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
            "SELECT id, outcome, work, received_at FROM deliveries WHERE processed = 0 ORDER BY received_at LIMIT ?", (limit,)
        ).fetchall()
        for delivery_id, outcome, work, received_at in rows:
            if conn.execute("UPDATE deliveries SET processed = 1 WHERE id = ? AND processed = 0", (delivery_id,)).rowcount:
                _apply_meaning(store, conn, _stored_decision(outcome, work), received_at)
    return len(rows)


class IntakeWriter:
    """The single writer thread: takes whatever deliveries are waiting and commits them together.

    Deliveries cross to the writer once per event-loop iteration (all those the loop read in that pass,
    in one list), and answers go back in one call per batch: not one thread wake-up per delivery.
    A batch of one, with nothing left unprocessed, is applied at once; otherwise see the module's doc.
    """

    QUIET_BEFORE_PROCESSING = 0.05
    """Deferred deliveries are processed once none has arrived for this long (so not during a burst)."""
    PROCESS_BATCH = 64
    """Deliveries processed per transaction: a delivery arriving meanwhile waits for at most one such batch."""
    POLL_SECONDS = 1.0
    """When idle, how often to look for deliveries another process stored and did not process (it crashed)."""
    CHECK_EVERY = 0.1
    QUIET_SECONDS = 0.3
    MAX_UNCHECKPOINTED = 4000
    """Deliveries (about 14 KB each) the WAL may hold before a checkpoint is forced, even mid-burst."""

    def __init__(self, store: Store, *, max_batch: int = 256) -> None:
        self.store = store
        self.max_batch = max_batch
        self._last_commit = 0.0
        self._uncheckpointed = 0
        self._queue: queue.SimpleQueue[list[_Pending] | None] = queue.SimpleQueue()
        self._gathering: dict[asyncio.AbstractEventLoop, list[_Pending]] = {}
        self._thread = threading.Thread(target=self._run, name="ai-fix-intake-writer", daemon=True)
        self._checkpointer = threading.Thread(target=self._checkpoints, name="ai-fix-wal-checkpoint", daemon=True)
        self._stopped = threading.Event()
        self._pending = False
        """Some deliveries this writer stored are not processed yet (or processing them failed)."""
        self._last_look = time.monotonic()
        self._retry_at = 0.0

    def start(self) -> None:
        """Apply what the last run acknowledged but did not process (after a crash), then take deliveries."""
        self._process_all()
        self._thread.start()
        self._checkpointer.start()

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._checkpointer.join(timeout=10)

    async def submit(self, item: Incoming) -> Ack:
        """Store the delivery; returns once it is committed. StoreUnavailable if it could not be."""
        if self._stopped.is_set() or not self._thread.is_alive():
            raise StoreUnavailable("the intake writer is not running; the server is shutting down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Ack] = loop.create_future()
        gathering = self._gathering.setdefault(loop, [])
        if not gathering:
            loop.call_soon(self._hand_over, loop)
        gathering.append(_Pending(item, future, loop))
        return await future

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        gathered = self._gathering.pop(loop)
        if self._stopped.is_set():  # stopped during this loop iteration: the writer will not read the queue again
            _settle([(p.future, StoreUnavailable("the intake writer stopped; the server is shutting down")) for p in gathered])
        else:
            self._queue.put(gathered)

    def _checkpoints(self) -> None:
        # Copying the WAL into the database doubles the bytes written; done during a burst it delays every
        # acknowledgement. So: in the first quiet moment, or when the WAL holds too many deliveries.
        while not self._stopped.wait(self.CHECK_EVERY):
            quiet = time.monotonic() - self._last_commit > self.QUIET_SECONDS
            if self._uncheckpointed and (quiet or self._uncheckpointed >= self.MAX_UNCHECKPOINTED):
                self._uncheckpointed = 0
                try:
                    self.store.checkpoint()
                except StoreUnavailable as exc:
                    log.warning("%s", exc)

    def _run(self) -> None:
        try:
            self.store.connection().execute("PRAGMA wal_autocheckpoint=0")
        except Exception as exc:  # noqa: BLE001 - the store may be down at start; commits will report it
            log.warning("intake writer could not configure its connection: %s", exc)
        while True:
            wait = self._idle_wait()
            try:
                first = self._queue.get(timeout=wait) if wait else self._queue.get_nowait()
            except queue.Empty:
                if self._idle_wait() == 0:
                    self._process_some()
                continue
            if first is None:
                break
            batch = list(first)
            stop = False
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch += nxt
            for start in range(0, len(batch), self.max_batch):
                self._commit(batch[start : start + self.max_batch])
            if stop:
                break
        # Shutting down (SIGTERM): what was acknowledged is processed now; if the store fails, the next start does it.
        self._process_all()

    def _idle_wait(self) -> float:
        """Seconds to wait for a delivery before processing stored ones (0: process now)."""
        now = time.monotonic()
        due = self._last_commit + self.QUIET_BEFORE_PROCESSING if self._pending else self._last_look + self.POLL_SECONDS
        return max(due - now, self._retry_at - now, 0.0)

    def _process_some(self) -> None:
        try:
            self._pending = process_pending(self.store, self.PROCESS_BATCH) == self.PROCESS_BATCH
        except Exception as exc:  # noqa: BLE001 - the deliveries stay stored and unprocessed; tried again later
            log.warning("could not process stored deliveries (tried again in %.0f s): %s", self.POLL_SECONDS, exc)
            self._pending = True
            self._retry_at = time.monotonic() + self.POLL_SECONDS
        self._last_look = time.monotonic()

    def _process_all(self) -> None:
        try:
            while process_pending(self.store, self.PROCESS_BATCH * 4):
                pass
            self._pending = False
        except Exception as exc:  # noqa: BLE001 - left stored and unprocessed, for a later pass or the next start
            log.warning("could not process stored deliveries (a later pass or the next start will): %s", exc)
            self._pending = True

    def _commit(self, batch: list[_Pending]) -> None:
        defer = self._pending or len(batch) > 1  # earlier deliveries are processed first; a burst is answered first
        try:
            results: list[Ack | Exception] = apply_batch(self.store, [p.item for p in batch], defer=defer)
        except StoreUnavailable as exc:
            log.error("job store unavailable, %d deliveries refused: %s", len(batch), exc)
            results = [exc] * len(batch)
        except Exception as exc:  # the writer must outlive a bug: refuse (503), never hang
            log.exception("could not store %d deliveries", len(batch))
            results = [StoreUnavailable(f"could not store the delivery ({exc.__class__.__name__})")] * len(batch)
        self._pending = self._pending or any(isinstance(r, Ack) and r.outcome == "accepted" for r in results)
        self._last_commit = time.monotonic()
        self._uncheckpointed += len(batch)
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Ack], Ack | Exception]]] = {}
        for pending, result in zip(batch, results):
            by_loop.setdefault(pending.loop, []).append((pending.future, result))
        for loop, answers in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, answers)
            except RuntimeError:  # that loop has closed: nobody is waiting any more
                pass


@dataclass(frozen=True)
class _Pending:
    item: Incoming
    future: asyncio.Future[Ack]
    loop: asyncio.AbstractEventLoop


def _settle(answers: list[tuple[asyncio.Future[Ack], Ack | Exception]]) -> None:
    for future, result in answers:
        if future.done():
            continue
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)
