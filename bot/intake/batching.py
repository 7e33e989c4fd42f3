"""Group commit: the deliveries that arrived together are stored in one transaction, made durable by one fsync
(on SQLite) and answered together once they are.

The event loop only gathers: the deliveries its tasks submit in one pass of the loop are handed, in one
piece, to the committer thread, which stores them with what they mean (`apply_batch`: one INSERT for their
rows and, for a burst of triggers, one each for their jobs, triggers and history). Where the commit itself
did not reach the disk (SQLite's WAL, `WalFile`), the committed batch goes to the syncer thread, which
fsyncs the WAL once for every batch committed since its last fsync and then answers each request on its
loop; meanwhile the committer stores the next batch, so a commit and an fsync overlap instead of taking
turns. Whatever arrives while the committer stores is its next batch. The loop never waits on the store:
not on a commit, a lock, an fsync or a round trip to PostgreSQL; SQLite and psycopg release the interpreter
lock while they write or wait, so that work overlaps the loop's reading and verifying the next requests.

A batch that cannot be stored answers each of its requests with the error a lone delivery would get
(503: GitHub redelivers it), and so does one whose commit and fsync have not returned after
SYNC_TIMEOUT (a hung disk or database server): if it did get stored, the redelivery is a duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from contextlib import AbstractContextManager

from bot.errors import StoreUnavailable
from bot.intake.activity import Activity
from bot.intake.answering import Answer, Waiting, answer_on_loops, settle
from bot.intake.apply import Ack, Incoming, apply_batch
from bot.intake.handoff import Handoff
from bot.intake.wal_file import WalFile
from bot.queue.store import Store
from bot.vocabulary import STORED

log = logging.getLogger(__name__)

SYNC_TIMEOUT = 10.0
"""A delivery not stored durably this long after it was handed over is refused (503)."""

Committed = tuple[list[Waiting], list[Ack | Exception]]
"""A batch committed and waiting for the WAL's fsync, with what each of its deliveries is answered once it returns."""


class GroupCommit:
    """`submit` returns once the delivery is committed (and its WAL fsynced) with its job: the answer names it.
    While deliveries stored earlier are still unprocessed (one whose meaning failed, or a crash's), only the
    deliveries' rows are committed, and `bot.intake.processing` applies them in order."""

    def __init__(
        self,
        store: Store,
        write_lock: AbstractContextManager[object],
        activity: Activity,
        *,
        wal: WalFile,
        max_batch: int,
        timeout: float = SYNC_TIMEOUT,
    ) -> None:
        self.store = store
        self.write_lock = write_lock
        self.activity = activity
        self.wal = wal
        self.max_batch = max_batch
        self.timeout = timeout
        self._gathering: dict[asyncio.AbstractEventLoop, list[tuple[Incoming, asyncio.Future[Ack]]]] = {}
        self._committer = Handoff[list[Waiting]]("ai-fix-intake-commit", self._commit)
        self._syncer = Handoff[Committed]("ai-fix-intake-sync", self._sync_and_answer)
        self._stopped = threading.Event()

    def start(self) -> None:
        self._committer.start()
        self._syncer.start()

    def stop(self) -> None:
        """Take no more deliveries; store and answer those handed over."""
        self._stopped.set()
        self._committer.stop(timeout=self.timeout)
        self._syncer.stop(timeout=self.timeout)

    async def submit(self, item: Incoming) -> Ack:
        """Store the delivery; returns once it is durable. StoreUnavailable if it could not be."""
        if self._stopped.is_set():
            raise StoreUnavailable("the intake writer is not running; the server is shutting down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Ack] = loop.create_future()
        gathering = self._gathering.setdefault(loop, [])
        if not gathering:
            loop.call_soon(self._hand_over, loop)
        gathering.append((item, future))
        self.activity.arrived()
        try:
            return await future
        finally:
            self.activity.answered()

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop's thread, once a pass has read what arrived: the gathered deliveries go to the committer."""
        gathered = self._gathering.pop(loop)
        if self._stopped.is_set():  # stopped during this loop pass: the committer is gone
            settle(
                [(f, StoreUnavailable("the intake writer stopped; the server is shutting down")) for _, f in gathered]
            )
            return
        timed_out = StoreUnavailable(
            f"job store did not commit and flush to disk within {self.timeout:g} s; retry later"
        )
        groups = []
        for start in range(0, len(gathered), self.max_batch):
            group = gathered[start : start + self.max_batch]
            refusals: list[Answer] = [(f, timed_out) for _, f in group]
            # Cancelled once the group is answered (it is never split between batches): a timer left to run would
            # keep its futures and answers alive for the timeout, and under load the collector kept walking those.
            timer = loop.call_later(self.timeout, settle, refusals)
            groups.append([Waiting(item, future, loop, timer) for item, future in group])
        self._committer.put(groups)

    def _commit(self, groups: list[list[Waiting]]) -> None:
        """The committer thread: everything handed over since its last commit goes into the next one (or more,
        of at most `max_batch` deliveries each)."""
        batch: list[Waiting] = []
        for group in groups:
            if batch and len(batch) + len(group) > self.max_batch:
                self._commit_batch(batch)
                batch = []
            batch += group
        if batch:
            self._commit_batch(batch)

    def _commit_batch(self, batch: list[Waiting]) -> None:
        results = self._store_batch(batch)
        if self.store.db.needs_wal_sync and any(isinstance(r, Ack) for r in results):
            self._syncer.put([(batch, results)])  # fsynced while the committer stores the next batch
        else:
            answer_on_loops(batch, [(w.future, r) for w, r in zip(batch, results)])

    def _store_batch(self, batch: list[Waiting]) -> list[Ack | Exception]:
        try:
            with self.write_lock:
                # Deliveries stored earlier and not processed yet (one whose meaning failed, or a crash's) go first.
                defer = self.activity.unprocessed
                self.store.db.prepare_writer()
                results: list[Ack | Exception] = apply_batch(self.store, [w.item for w in batch], defer=defer)
        except StoreUnavailable as exc:
            log.error("job store unavailable, %d deliveries refused: %s", len(batch), exc)
            results = [exc] * len(batch)
        except Exception as exc:  # the committer must outlive a bug or a broken store: refuse (503), never hang
            log.exception("could not store %d deliveries", len(batch))
            results = [StoreUnavailable(f"could not store the delivery ({exc.__class__.__name__})")] * len(batch)
        self.activity.committed(len(batch), deferred=any(isinstance(r, Ack) and r.outcome == STORED for r in results))
        return results

    def _sync_and_answer(self, committed: list[Committed]) -> None:
        """The syncer thread: one fsync of the WAL for every batch committed before it began, then their answers."""
        batch = [w for waiting, _ in committed for w in waiting]
        results = [r for _, batch_results in committed for r in batch_results]
        try:
            self.wal.flush()
        except OSError as exc:
            # Committed but perhaps not on disk: refused, so GitHub redelivers (a duplicate if it did get there).
            log.error("could not fsync the job store's WAL, %d deliveries refused: %s", len(results), exc)
            refused = StoreUnavailable(f"job store could not flush to disk ({exc}); retry later")
            results = [r if isinstance(r, Exception) else refused for r in results]
        answer_on_loops(batch, [(w.future, r) for w, r in zip(batch, results)])
