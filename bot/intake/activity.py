"""What the intake writer's parts tell each other about the deliveries committed so far."""

from __future__ import annotations


class Activity:
    """Written by the group commit, read by the processing and checkpoint threads (each field a single value)."""

    def __init__(self) -> None:
        self.last_commit = 0.0
        """time.monotonic() of the last batch committed."""
        self.unprocessed = False
        """Some deliveries this writer stored are not processed yet (or processing them failed)."""
        self.uncheckpointed = 0
        """Deliveries committed since the last checkpoint."""
