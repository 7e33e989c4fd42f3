"""The leases one worker process holds: the jobs its threads are running, renewed by a heartbeat thread.

A lease not renewed for `lease_seconds` lets another worker take the job, so the heartbeat keeps
renewing while jobs drain on shutdown, until each has ended or been released.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from bot.errors import AiFixError
from bot.queue.store import Store

log = logging.getLogger(__name__)


class RunningJobs:
    """The jobs this process runs under `owner`, and the heartbeat that renews their leases."""

    def __init__(self, store: Store, owner: str, lease_seconds: float) -> None:
        self.store, self.owner, self.lease_seconds = store, owner, lease_seconds
        self._running: set[int] = set()
        self._lock = threading.Lock()
        self._released = threading.Event()
        """Set once every lease still held has been released: the heartbeat has nothing left to keep."""
        self._heartbeat: threading.Thread | None = None

    @contextmanager
    def holding(self, job_id: int) -> Iterator[None]:
        """The job counts as running here (its lease renewed, released on shutdown) until the block ends."""
        with self._lock:
            self._running.add(job_id)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(job_id)

    def start(self, stopping: threading.Event, workers: Sequence[threading.Thread]) -> None:
        """Renew every `lease_seconds / 3` until `stopping`, then while `workers` drain their jobs."""
        self._heartbeat = threading.Thread(
            target=self._renewing, args=(stopping, workers), name="ai-fix-heartbeat", daemon=True
        )
        self._heartbeat.start()

    def release_left(self) -> None:
        """Release the leases of the jobs still running (they missed the grace period) and end the heartbeat."""
        with self._lock:
            left = list(self._running)
        for job_id in left:
            if self.store.leases.release(job_id, self.owner):
                log.warning(
                    "job %d did not reach a checkpoint within the grace period; released for another worker", job_id
                )
        # Wait for the heartbeat, or it could still be inside SQLite while the caller closes the
        # store and the interpreter shuts down (a crash on exit).
        self._released.set()
        if self._heartbeat is not None and self._heartbeat.is_alive():
            self._heartbeat.join(timeout=self.lease_seconds)

    def _renewing(self, stopping: threading.Event, workers: Sequence[threading.Thread]) -> None:
        while not stopping.wait(self.lease_seconds / 3):
            self._renew()
        # Keep renewing while jobs drain, so nobody else takes them before they are released.
        while any(t.is_alive() for t in workers) and not self._all_released():
            self._renew()
            if self._released.wait(min(self.lease_seconds / 3, 0.5)):
                return

    def _all_released(self) -> bool:
        with self._lock:
            return not self._running

    def _renew(self) -> None:
        """Renew only the jobs running here: a job whose end could not be recorded (the store was down as it
        ended) is no longer running, and its lease must run out so another worker finishes it."""
        with self._lock:
            running = sorted(self._running)
        try:
            self.store.leases.renew(self.owner, self.lease_seconds, running)
        except AiFixError as exc:
            log.error("could not renew leases: %s", exc)
