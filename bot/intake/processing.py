"""Applying what stored deliveries mean, after the fact: the intake writer's processing thread.

A delivery's meaning is applied with its commit; what is left unprocessed (a delivery whose meaning failed,
those stored after it meanwhile, what a crash or another process left) is applied here once no delivery
is waiting for its answer and none has arrived for QUIET_BEFORE_PROCESSING, in batches
(`process_pending`): processing does not compete with a burst for the write lock or the CPU, but for one
batch each MAX_DEFERRAL under a load that never lets up.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager

from bot.intake.activity import Activity
from bot.intake.apply import process_pending
from bot.queue.store import Store

log = logging.getLogger(__name__)


class DeferredProcessing:
    """A thread processing what this writer stored (and, when idle, what another process stored and did not)."""

    QUIET_BEFORE_PROCESSING = 0.05
    """Deferred deliveries are processed once none is in flight and none has arrived for this long."""
    PROCESS_BATCH = 64
    """Deliveries processed per transaction: a delivery arriving meanwhile waits for at most one such batch."""
    POLL_SECONDS = 1.0
    """When idle, how often to look for deliveries another process stored and did not process (it crashed)."""
    MAX_DEFERRAL = 1.0
    """Deliveries waiting this long get one batch processed all the same, under a load that never lets up (jobs are
    not put off for ever, and /healthz's backlog check holds); a shorter burst is not interrupted."""

    def __init__(self, store: Store, write_lock: AbstractContextManager[object], activity: Activity) -> None:
        self.store = store
        self.write_lock = write_lock
        self.activity = activity
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ai-fix-intake-processor", daemon=True)
        self._last_look = time.monotonic()
        self._retry_at = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Process what was acknowledged (SIGTERM's drain), then end the thread."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stopped.wait(min(self._idle_wait(), self.QUIET_BEFORE_PROCESSING)):
            if self._idle_wait() == 0:
                self._process_some()
        # Shutting down (SIGTERM): what was acknowledged is processed now; if the store fails, the next start does it.
        self.process_all()

    def _idle_wait(self) -> float:
        """Seconds to wait before processing stored deliveries (0: process now)."""
        now = time.monotonic()
        if self.activity.unprocessed:
            quiet_since = self.activity.quiet_since()
            quiet = now if quiet_since is None else quiet_since  # while deliveries are in flight, it is not quiet yet
            due = min(quiet + self.QUIET_BEFORE_PROCESSING, self.activity.waiting_since + self.MAX_DEFERRAL)
        else:
            due = self._last_look + self.POLL_SECONDS
        return max(due - now, self._retry_at - now, 0.0)

    def _process_some(self) -> None:
        try:
            with self.write_lock:  # so a batch committed after this pass marks its deliveries after it, not before
                self.store.db.leave_checkpoints_to_intake()  # a checkpoint here would hold the write lock
                self.activity.processed(
                    all_of_them=process_pending(self.store, self.PROCESS_BATCH) < self.PROCESS_BATCH
                )
        except Exception as exc:  # noqa: BLE001 - the deliveries stay stored and unprocessed; tried again later
            log.warning("could not process stored deliveries (tried again in %.0f s): %s", self.POLL_SECONDS, exc)
            self.activity.processed(all_of_them=False)
            self._retry_at = time.monotonic() + self.POLL_SECONDS
        self._last_look = time.monotonic()

    def process_all(self) -> None:
        """Everything stored and unprocessed, now (at start, before deliveries are taken, and at shutdown)."""
        try:
            while True:
                with self.write_lock:
                    if not process_pending(self.store, self.PROCESS_BATCH * 4):
                        break
            self.activity.processed(all_of_them=True)
        except Exception as exc:  # noqa: BLE001 - left stored and unprocessed, for a later pass or the next start
            log.warning("could not process stored deliveries (a later pass or the next start will): %s", exc)
            self.activity.processed(all_of_them=False)
