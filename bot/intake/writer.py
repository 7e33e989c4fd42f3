"""Storing deliveries: one transaction and one fsync per batch (group commit), with what they mean.

Every delivery in a batch is committed (and, on SQLite, the WAL fsynced) before any of them is
acknowledged, so a 202 always means "on disk". Batching amortises the commit over the requests that
arrived meanwhile, and takes it off the event loop (`bot.intake.batching`).

What a delivery means (its job, trigger and history rows, or an installation change) is applied in
the same transaction, a burst of triggers together (`apply_together`), so the answer names the job. A
delivery whose meaning cannot be applied is stored all the same, marked unprocessed (`accepted`); while
any is, later deliveries are stored the same way, so that they are applied in order once it is quiet
(`bot.intake.processing`), each batch in a transaction that also marks the deliveries processed: a
crash in between loses nothing (the next start applies it) and two processes sharing the database
never both apply one (each transaction holds the write lock and re-checks the mark).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from bot.intake.activity import Activity
from bot.intake.apply import Ack, Incoming
from bot.intake.batching import SYNC_TIMEOUT, GroupCommit
from bot.intake.checkpoints import Checkpoints
from bot.intake.processing import DeferredProcessing
from bot.intake.wal_file import WalFile
from bot.queue.health import check_write
from bot.queue.store import Store


class IntakeWriter:
    """The intake's durable writer: the group commit, the deferred processing and the WAL's checkpoints."""

    def __init__(
        self,
        store: Store,
        *,
        max_batch: int = 256,
        sync: Callable[[int], None] = os.fdatasync,
        sync_timeout: float = SYNC_TIMEOUT,
    ) -> None:
        self.store = store
        activity = Activity()
        self.write_lock: AbstractContextManager[object] = threading.Lock() if store.db.one_writer else nullcontext()
        """Held around each transaction of this process where the database has one writer (SQLite): a commit
        waits on it, not in SQLite's sleeping busy handler. PostgreSQL commits while the processing runs."""
        self.wal = WalFile(store.db, sync)
        self.batches = GroupCommit(
            store, self.write_lock, activity, wal=self.wal, max_batch=max_batch, timeout=sync_timeout
        )
        self.processing = DeferredProcessing(store, self.write_lock, activity)
        self.checkpoints = Checkpoints(store, activity)
        self._stopped = False

    def start(self) -> None:
        """Apply what the last run acknowledged but did not process (after a crash), then take deliveries."""
        self.processing.process_all()
        self.batches.start()
        self.processing.start()
        self.checkpoints.start()

    def stop(self) -> None:
        """Answer what was handed over (once durable), then process what was acknowledged (SIGTERM's drain)."""
        if not self._stopped:
            self._stopped = True
            self.batches.stop()
            self.processing.stop()
            self.checkpoints.stop()
            self.wal.close()

    def check_write(self) -> None:
        """Commit a health write between this process's own transactions (blocking; StoreUnavailable if it fails)."""
        with self.write_lock:
            check_write(self.store)

    async def submit(self, item: Incoming) -> Ack:
        """Store the delivery; returns once it is committed and fsynced. StoreUnavailable if it could not be."""
        return await self.batches.submit(item)
