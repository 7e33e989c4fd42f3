"""What the intake writer's parts tell each other about the deliveries arriving and committed."""

from __future__ import annotations

import time


class Activity:
    """Updated by the group commit, read by the processing and checkpoint threads (each field a single value)."""

    def __init__(self) -> None:
        self.in_flight = 0
        """Deliveries submitted and not answered yet."""
        self.last_arrival = 0.0
        """time.monotonic() when the last delivery was submitted."""
        self.last_commit = 0.0
        """time.monotonic() when the last batch was committed."""
        self.unprocessed = False
        """Some deliveries this writer stored are not processed yet (or processing them failed)."""
        self.waiting_since = 0.0
        """time.monotonic() since when they wait (since the last processing pass that left some)."""
        self.uncheckpointed = 0
        """Deliveries committed since the last checkpoint."""

    def arrived(self) -> None:
        self.in_flight += 1
        self.last_arrival = time.monotonic()

    def answered(self) -> None:
        self.in_flight -= 1

    def committed(self, count: int, *, deferred: bool) -> None:
        """A batch of `count` was committed; `deferred`: some of it was stored without its meaning applied."""
        if deferred and not self.unprocessed:
            self.unprocessed, self.waiting_since = True, time.monotonic()
        self.last_commit = time.monotonic()
        self.uncheckpointed += count

    def processed(self, *, all_of_them: bool) -> None:
        """A processing pass ended; unless it processed `all_of_them`, the rest wait from now."""
        self.unprocessed = not all_of_them
        self.waiting_since = time.monotonic()

    def quiet_since(self) -> float | None:
        """time.monotonic() since when no delivery is in flight or has arrived; None while one is in flight."""
        return None if self.in_flight else max(self.last_arrival, self.last_commit)
