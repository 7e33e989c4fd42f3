"""The fsync that makes a batch's commit durable where the commit itself did not wait for the disk (SQLite's WAL)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable

from bot.errors import StoreUnavailable
from bot.intake.answering import Answer, Waiting, answer_on_loops, settle
from bot.intake.apply import Ack
from bot.intake.handoff import Handoff
from bot.queue.database import Database

log = logging.getLogger(__name__)

SYNC_TIMEOUT = 10.0
"""A delivery whose fsync has not returned after this long (a hung disk) is refused (503): GitHub redelivers
it later, and if it did reach the disk the redelivery is recognised as a duplicate."""


class WalSync:
    """A thread `fdatasync`s the WAL (which releases the interpreter lock, so the loop reads and commits the next
    batch meanwhile) and only then answers the batches committed before it: one fsync covers every frame written
    before it, so every batch committed while one fsync ran is covered by the next one."""

    def __init__(self, db: Database, sync: Callable[[int], None], *, timeout: float = SYNC_TIMEOUT) -> None:
        self.db = db
        self.sync = sync
        self.timeout = timeout
        self._wal: tuple[int, int] | None = None
        """The WAL's file descriptor and inode, reopened if SQLite ever replaces the file."""
        self._syncer = Handoff[Waiting]("ai-fix-wal-sync", self._sync_and_answer)

    def start(self) -> None:
        self._syncer.start()

    def stop(self) -> None:
        """Fsync and answer what was committed, then close the WAL."""
        self._syncer.stop(timeout=self.timeout)
        if self._wal is not None:
            os.close(self._wal[0])
            self._wal = None

    def after_commit(self, loop: asyncio.AbstractEventLoop, acked: list[tuple[Waiting, Ack]]) -> None:
        """On the loop's thread: answer these committed deliveries once the WAL is fsynced, or refuse them after the timeout."""
        timed_out = StoreUnavailable(f"job store did not flush to disk within {self.timeout:g} s; retry later")
        refusals: list[Answer] = [(w.future, timed_out) for w, _ in acked]
        # Cancelled once the batch is answered: a timer left to run would keep every future and answer of
        # the batch alive for the timeout, and under load those survivors made the collector walk the heap.
        timer = loop.call_later(self.timeout, settle, refusals)
        self._syncer.put([dataclasses.replace(w, ack=ack, timer=timer) for w, ack in acked])

    def _sync_and_answer(self, batch: list[Waiting]) -> None:
        try:
            self.sync(self._wal_fd())
            answers: list[Answer] = [(w.future, w.ack) for w in batch if w.ack]
        except OSError as exc:
            # Committed but perhaps not on disk: refused, so GitHub redelivers (a duplicate if it did get there).
            log.error("could not fsync the job store's WAL, %d deliveries refused: %s", len(batch), exc)
            answers = [
                (w.future, StoreUnavailable(f"job store could not flush to disk ({exc}); retry later")) for w in batch
            ]
        answer_on_loops(batch, answers)

    def _wal_fd(self) -> int:
        path = self.db.wal_file
        assert path is not None  # only databases with a WAL of their own need this fsync
        inode = os.stat(path).st_ino
        if self._wal is None or self._wal[1] != inode:
            if self._wal is not None:
                os.close(self._wal[0])
            self._wal = (os.open(path, os.O_RDONLY), inode)
        return self._wal[0]
