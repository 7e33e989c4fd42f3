"""WAL checkpoints at quiet moments: the intake writer's checkpoint thread."""

from __future__ import annotations

import logging
import threading
import time

from bot.errors import StoreUnavailable
from bot.intake.activity import Activity
from bot.queue.store import Store

log = logging.getLogger(__name__)


class Checkpoints:
    """Copying the WAL into the database doubles the bytes written; done during a burst it delays every
    acknowledgement. So: in the first quiet moment, or when the WAL holds too many deliveries."""

    CHECK_EVERY = 0.1
    QUIET_SECONDS = 0.3
    MAX_UNCHECKPOINTED = 4000
    """Deliveries (about 14 KB each) the WAL may hold before a checkpoint is forced, even mid-burst."""

    def __init__(self, store: Store, activity: Activity) -> None:
        self.store = store
        self.activity = activity
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ai-fix-wal-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stopped.wait(self.CHECK_EVERY):
            quiet = time.monotonic() - self.activity.last_commit > self.QUIET_SECONDS
            if self.activity.uncheckpointed and (quiet or self.activity.uncheckpointed >= self.MAX_UNCHECKPOINTED):
                self.activity.uncheckpointed = 0
                try:
                    self.store.checkpoint()
                except StoreUnavailable as exc:
                    log.warning("%s", exc)
