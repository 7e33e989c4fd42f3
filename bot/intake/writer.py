"""Storing deliveries: one transaction per batch (group commit) on the event loop's thread, one fsync per batch.

Every delivery in a batch is committed and the WAL fsynced before any of them is acknowledged, so a
202 always means "on disk". Batching amortises the fsync over the requests that arrived meanwhile.

What a delivery means (its job, trigger and history rows, or an installation change) is applied in
the same transaction when the writer is idle (a lone delivery: the answer then names the job). Under
load (several deliveries in one batch, or older ones still unprocessed) only the delivery row, with
its decision, is committed before the answer (`accepted`); its meaning is applied once no delivery
has arrived for QUIET_BEFORE_PROCESSING, in batches, each in a transaction that also marks the
delivery processed: a crash in between loses nothing (the next start applies it) and two processes
sharing the database never both apply one (each transaction holds the write lock and re-checks the
mark).

On PostgreSQL a commit is a round trip to the server, durable when it returns: the gathered deliveries
are committed by a thread of their own (whatever arrived meanwhile joins the next batch), not on the
event loop, and there is no WAL for the writer to fsync or checkpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.errors import StoreUnavailable
from bot.intake.apply import Ack, Incoming, apply_batch, process_pending
from bot.queue.health import check_write
from bot.queue.store import Store
from bot.vocabulary import ACCEPTED

log = logging.getLogger(__name__)


class IntakeWriter:
    """Group commit on the event loop's own thread; the fsync, the deferred work and checkpoints in threads.

    The deliveries a loop reads in one pass are gathered; one callback, scheduled when the first of them
    arrives, commits them all in one transaction on the loop's thread (no hand-off to a writer thread
    and back: that cost more CPU than the insert, the two threads contending for the interpreter lock).
    That commit writes the WAL without waiting for the disk; the syncer thread then fsyncs the WAL
    (`fdatasync`, which releases the interpreter lock, so the loop reads and commits the next batch
    meanwhile) and only then are the batch's deliveries answered: a 202 still means "on disk", and
    every batch committed while one fsync ran is covered by the next one.
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
    SYNC_TIMEOUT = 10.0
    """A delivery whose fsync has not returned after this long (a hung disk) is refused (503): GitHub redelivers
    it later, and if it did reach the disk the redelivery is recognised as a duplicate."""

    def __init__(self, store: Store, *, max_batch: int = 256, sync: Callable[[int], None] = os.fdatasync) -> None:
        self.store = store
        self.max_batch = max_batch
        self.sync = sync
        self._last_commit = 0.0
        self._uncheckpointed = 0
        self._gathering: dict[asyncio.AbstractEventLoop, list[_Pending]] = {}
        self._processor = threading.Thread(target=self._run, name="ai-fix-intake-processor", daemon=True)
        self._checkpointer = threading.Thread(target=self._checkpoints, name="ai-fix-wal-checkpoint", daemon=True)
        self._syncer = threading.Thread(target=self._sync_wal, name="ai-fix-wal-sync", daemon=True)
        self._committer = threading.Thread(target=self._commit_queued, name="ai-fix-intake-commit", daemon=True)
        self._queued: list[_Pending] = []
        """Gathered for the committer thread (databases whose commit waits on the network)."""
        self._to_commit = threading.Event()
        self._stopped = threading.Event()
        self._write_lock = threading.Lock()
        """Held around each transaction of this process: a commit waits on it, not in SQLite's sleeping busy handler."""
        self._unsynced: list[_Pending] = []
        self._unsynced_lock = threading.Lock()
        self._to_sync = threading.Event()
        self._wal: tuple[int, int] | None = None
        """The WAL's file descriptor and inode, reopened if SQLite ever replaces the file."""
        self._pending = False
        """Some deliveries this writer stored are not processed yet (or processing them failed)."""
        self._last_look = time.monotonic()
        self._retry_at = 0.0

    def start(self) -> None:
        """Apply what the last run acknowledged but did not process (after a crash), then take deliveries."""
        self._process_all()
        if self.store.db.commit_in_thread:
            self._committer.start()
        self._syncer.start()
        self._processor.start()
        self._checkpointer.start()

    def stop(self) -> None:
        """Answer what was committed (after its fsync), then process what was acknowledged (SIGTERM's drain)."""
        if not self._stopped.is_set():
            self._stopped.set()
            self._to_commit.set()
            if self._committer.is_alive():
                self._committer.join(timeout=self.SYNC_TIMEOUT)
            self._to_sync.set()
            self._syncer.join(timeout=self.SYNC_TIMEOUT)
            self._processor.join(timeout=10)
            self._checkpointer.join(timeout=10)
            if self._wal is not None:
                os.close(self._wal[0])
                self._wal = None

    def check_write(self) -> None:
        """Commit a health write between this process's own transactions (blocking; StoreUnavailable if it fails)."""
        with self._write_lock:
            check_write(self.store)

    async def submit(self, item: Incoming) -> Ack:
        """Store the delivery; returns once it is committed and fsynced. StoreUnavailable if it could not be."""
        if self._stopped.is_set():
            raise StoreUnavailable("the intake writer is not running; the server is shutting down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Ack] = loop.create_future()
        gathering = self._gathering.setdefault(loop, [])
        if not gathering:
            loop.call_soon(self._commit_gathered, loop)
        gathering.append(_Pending(item, future, loop))
        return await future

    def _commit_gathered(self, loop: asyncio.AbstractEventLoop) -> None:
        gathered = self._gathering.pop(loop)
        if self._stopped.is_set():  # stopped during this loop pass: the syncer and processor are gone
            _settle(
                [
                    (p.future, StoreUnavailable("the intake writer stopped; the server is shutting down"))
                    for p in gathered
                ]
            )
            return
        if self.store.db.commit_in_thread:
            with self._unsynced_lock:
                self._queued += gathered
            self._to_commit.set()
            return
        for start in range(0, len(gathered), self.max_batch):
            self._commit(loop, gathered[start : start + self.max_batch])

    def _commit_queued(self) -> None:
        """The committer thread: everything gathered since its last commit goes into the next one."""
        while True:
            if not self._stopped.is_set():
                self._to_commit.wait()
            self._to_commit.clear()
            with self._unsynced_lock:
                gathered, self._queued = self._queued, []
            if not gathered and self._stopped.is_set():
                return
            self._commit_and_answer(gathered)
            del gathered  # nothing of an answered batch is kept while this thread waits

    def _commit_and_answer(self, gathered: list[_Pending]) -> None:
        for start in range(0, len(gathered), self.max_batch):
            batch = gathered[start : start + self.max_batch]
            results = self._store_batch(batch)
            _answer_on_loops(batch, [(p.future, r) for p, r in zip(batch, results)])

    def _store_batch(self, batch: list[_Pending]) -> list[Ack | Exception]:
        try:
            with self._write_lock:  # also orders this read of _pending after the processor's update of it
                defer = (
                    self._pending or len(batch) > 1
                )  # earlier deliveries are processed first; a burst is answered first
                self.store.db.prepare_writer()
                results: list[Ack | Exception] = apply_batch(self.store, [p.item for p in batch], defer=defer)
        except StoreUnavailable as exc:
            log.error("job store unavailable, %d deliveries refused: %s", len(batch), exc)
            results = [exc] * len(batch)
        except Exception as exc:  # the event loop must outlive a bug or a broken store: refuse (503), never hang
            log.exception("could not store %d deliveries", len(batch))
            results = [StoreUnavailable(f"could not store the delivery ({exc.__class__.__name__})")] * len(batch)
        self._pending = self._pending or any(isinstance(r, Ack) and r.outcome == ACCEPTED for r in results)
        self._last_commit = time.monotonic()
        self._uncheckpointed += len(batch)
        return results

    def _commit(self, loop: asyncio.AbstractEventLoop, batch: list[_Pending]) -> None:
        results = self._store_batch(batch)
        if not self.store.db.needs_wal_sync:  # synchronous=normal: committed to the WAL is what was asked for
            _settle([(p.future, r) for p, r in zip(batch, results)])
            return
        acked: list[tuple[_Pending, Ack]] = []
        for pending, result in zip(batch, results):
            if isinstance(result, Exception):
                _settle([(pending.future, result)])
            else:
                acked.append((pending, result))
        if acked:
            timed_out = StoreUnavailable(f"job store did not flush to disk within {self.SYNC_TIMEOUT:g} s; retry later")
            refusals: list[tuple[asyncio.Future[Ack], Ack | Exception]] = [(p.future, timed_out) for p, _ in acked]
            # Cancelled once the batch is answered: a timer left to run would keep every future and answer of
            # the batch alive for SYNC_TIMEOUT, and under load those survivors made the collector walk the heap.
            timer = loop.call_later(self.SYNC_TIMEOUT, _settle, refusals)
            with self._unsynced_lock:
                self._unsynced += [dataclasses.replace(p, ack=ack, timer=timer) for p, ack in acked]
            self._to_sync.set()

    def _sync_wal(self) -> None:
        while True:
            if not self._stopped.is_set():
                self._to_sync.wait()
            self._to_sync.clear()
            with self._unsynced_lock:
                batch, self._unsynced = self._unsynced, []
            if batch:
                self._sync_and_answer(batch)
            elif self._stopped.is_set():
                return
            del batch  # nothing of an answered batch is kept while this thread waits

    def _sync_and_answer(self, batch: list[_Pending]) -> None:
        try:
            self.sync(self._wal_fd())
            answers: list[tuple[asyncio.Future[Ack], Ack | Exception]] = [(p.future, p.ack) for p in batch if p.ack]
        except OSError as exc:
            # Committed but perhaps not on disk: refused, so GitHub redelivers (a duplicate if it did get there).
            log.error("could not fsync the job store's WAL, %d deliveries refused: %s", len(batch), exc)
            answers = [
                (p.future, StoreUnavailable(f"job store could not flush to disk ({exc}); retry later")) for p in batch
            ]
        _answer_on_loops(batch, answers)

    def _wal_fd(self) -> int:
        path = self.store.db.wal_file
        assert path is not None  # only databases with a WAL of their own need this fsync
        inode = os.stat(path).st_ino
        if self._wal is None or self._wal[1] != inode:
            if self._wal is not None:
                os.close(self._wal[0])
            self._wal = (os.open(path, os.O_RDONLY), inode)
        return self._wal[0]

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
        while not self._stopped.wait(min(self._idle_wait(), self.QUIET_BEFORE_PROCESSING)):
            if self._idle_wait() == 0:
                self._process_some()
        # Shutting down (SIGTERM): what was acknowledged is processed now; if the store fails, the next start does it.
        self._process_all()

    def _idle_wait(self) -> float:
        """Seconds to wait before processing stored deliveries (0: process now)."""
        now = time.monotonic()
        due = self._last_commit + self.QUIET_BEFORE_PROCESSING if self._pending else self._last_look + self.POLL_SECONDS
        return max(due - now, self._retry_at - now, 0.0)

    def _process_some(self) -> None:
        try:
            with self._write_lock:
                self._pending = process_pending(self.store, self.PROCESS_BATCH) == self.PROCESS_BATCH
        except Exception as exc:  # noqa: BLE001 - the deliveries stay stored and unprocessed; tried again later
            log.warning("could not process stored deliveries (tried again in %.0f s): %s", self.POLL_SECONDS, exc)
            self._pending = True
            self._retry_at = time.monotonic() + self.POLL_SECONDS
        self._last_look = time.monotonic()

    def _process_all(self) -> None:
        try:
            while True:
                with self._write_lock:
                    if not process_pending(self.store, self.PROCESS_BATCH * 4):
                        break
            self._pending = False
        except Exception as exc:  # noqa: BLE001 - left stored and unprocessed, for a later pass or the next start
            log.warning("could not process stored deliveries (a later pass or the next start will): %s", exc)
            self._pending = True


@dataclass(frozen=True)
class _Pending:
    item: Incoming
    future: asyncio.Future[Ack]
    loop: asyncio.AbstractEventLoop
    ack: Ack | None = None
    """Set once committed, while it waits for the fsync."""
    timer: asyncio.TimerHandle | None = None
    """The refusal its batch gets if the fsync does not return in time."""


def _answer_on_loops(batch: list[_Pending], answers: list[tuple[asyncio.Future[Ack], Ack | Exception]]) -> None:
    """From another thread: each answer settled on its request's loop, with the batch's refusal timers cancelled."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Ack], Ack | Exception]]] = {}
    timers: dict[asyncio.AbstractEventLoop, set[asyncio.TimerHandle]] = {}
    for pending, answer in zip(batch, answers):
        by_loop.setdefault(pending.loop, []).append(answer)
        if pending.timer is not None:
            timers.setdefault(pending.loop, set()).add(pending.timer)
    for loop, loop_answers in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, loop_answers, timers.get(loop, ()))
        except RuntimeError:  # that loop has closed: nobody is waiting any more
            pass


def _settle(
    answers: list[tuple[asyncio.Future[Ack], Ack | Exception]], timers: Iterable[asyncio.TimerHandle] = ()
) -> None:
    """Answer on the loop's thread, and cancel the timers of the batches answered (they held them)."""
    for timer in timers:
        timer.cancel()
    for future, result in answers:
        if future.done():
            continue
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)
