"""Group commit: the deliveries that arrived together are committed in one transaction and answered together.

The deliveries a loop reads in one pass are gathered; one callback, scheduled when the first of them
arrives, commits them all in one transaction on the loop's thread (no hand-off to a writer thread and
back: that cost more CPU than the insert, the two threads contending for the interpreter lock). Where
the commit does not wait for the disk (SQLite's WAL), `WalSync` answers after its fsync. On
PostgreSQL a commit is a round trip to the server, durable when it returns: the gathered deliveries
are committed by a thread of their own (whatever arrived meanwhile joins the next batch), not on the
event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from bot.errors import StoreUnavailable
from bot.intake.activity import Activity
from bot.intake.answering import Waiting, answer_on_loops, settle
from bot.intake.apply import Ack, Incoming, apply_batch
from bot.intake.handoff import Handoff
from bot.intake.wal_sync import WalSync
from bot.queue.store import Store
from bot.vocabulary import ACCEPTED

log = logging.getLogger(__name__)


class GroupCommit:
    """`submit` returns once the delivery is committed (and fsynced where that is separate). A batch of one,
    with nothing left unprocessed, is applied at once; otherwise only the deliveries' rows are committed
    (`bot.intake.processing` applies them)."""

    def __init__(
        self, store: Store, write_lock: threading.Lock, activity: Activity, wal: WalSync, *, max_batch: int
    ) -> None:
        self.store = store
        self.write_lock = write_lock
        """Held around each transaction of this process: a commit waits on it, not in SQLite's sleeping busy handler."""
        self.activity = activity
        self.wal = wal
        self.max_batch = max_batch
        self._gathering: dict[asyncio.AbstractEventLoop, list[Waiting]] = {}
        self._committer = Handoff[Waiting]("ai-fix-intake-commit", self._commit_and_answer)
        """Commits what was gathered, for databases whose commit waits on the network."""
        self._stopped = threading.Event()

    def start(self) -> None:
        if self.store.db.commit_in_thread:
            self._committer.start()

    def stop(self) -> None:
        """Take no more deliveries; commit and answer what was handed over."""
        self._stopped.set()
        self._committer.stop(timeout=self.wal.timeout)

    async def submit(self, item: Incoming) -> Ack:
        """Store the delivery; returns once it is durable. StoreUnavailable if it could not be."""
        if self._stopped.is_set():
            raise StoreUnavailable("the intake writer is not running; the server is shutting down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Ack] = loop.create_future()
        gathering = self._gathering.setdefault(loop, [])
        if not gathering:
            loop.call_soon(self._commit_gathered, loop)
        gathering.append(Waiting(item, future, loop))
        return await future

    def _commit_gathered(self, loop: asyncio.AbstractEventLoop) -> None:
        gathered = self._gathering.pop(loop)
        if self._stopped.is_set():  # stopped during this loop pass: the syncer and processor are gone
            settle(
                [
                    (w.future, StoreUnavailable("the intake writer stopped; the server is shutting down"))
                    for w in gathered
                ]
            )
            return
        if self.store.db.commit_in_thread:
            self._committer.put(gathered)
            return
        for start in range(0, len(gathered), self.max_batch):
            self._commit(loop, gathered[start : start + self.max_batch])

    def _commit_and_answer(self, gathered: list[Waiting]) -> None:
        """The committer thread: everything gathered since its last commit goes into the next one."""
        for start in range(0, len(gathered), self.max_batch):
            batch = gathered[start : start + self.max_batch]
            results = self._store_batch(batch)
            answer_on_loops(batch, [(w.future, r) for w, r in zip(batch, results)])

    def _store_batch(self, batch: list[Waiting]) -> list[Ack | Exception]:
        try:
            with self.write_lock:  # also orders this read of `unprocessed` after the processor's update of it
                # Earlier deliveries are processed first; a burst is answered first.
                defer = self.activity.unprocessed or len(batch) > 1
                self.store.db.prepare_writer()
                results: list[Ack | Exception] = apply_batch(self.store, [w.item for w in batch], defer=defer)
        except StoreUnavailable as exc:
            log.error("job store unavailable, %d deliveries refused: %s", len(batch), exc)
            results = [exc] * len(batch)
        except Exception as exc:  # the event loop must outlive a bug or a broken store: refuse (503), never hang
            log.exception("could not store %d deliveries", len(batch))
            results = [StoreUnavailable(f"could not store the delivery ({exc.__class__.__name__})")] * len(batch)
        self.activity.unprocessed = self.activity.unprocessed or any(
            isinstance(r, Ack) and r.outcome == ACCEPTED for r in results
        )
        self.activity.last_commit = time.monotonic()
        self.activity.uncheckpointed += len(batch)
        return results

    def _commit(self, loop: asyncio.AbstractEventLoop, batch: list[Waiting]) -> None:
        results = self._store_batch(batch)
        if not self.store.db.needs_wal_sync:  # synchronous=normal: committed to the WAL is what was asked for
            settle([(w.future, r) for w, r in zip(batch, results)])
            return
        acked: list[tuple[Waiting, Ack]] = []
        for waiting, result in zip(batch, results):
            if isinstance(result, Exception):
                settle([(waiting.future, result)])
            else:
                acked.append((waiting, result))
        if acked:
            self.wal.after_commit(loop, acked)
