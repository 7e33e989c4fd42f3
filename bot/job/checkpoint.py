"""What a round job keeps between its attempts (`RoundJobState`), and saving it: each save is also a chance to stop."""

from __future__ import annotations

import contextlib

from bot.job.state import RoundJobState, RoundState
from bot.loop.records import Spent
from bot.queue.pipeline import JobContext, JobInterrupted


class Checkpoint:
    """The round job's typed state and its saving into the job's store."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.job = RoundJobState.model_validate(ctx.state)
        self.saving_work = False
        """Set while the work of a stopped or crashed run is being saved: a stop request must not cut that short."""

    @property
    def state(self) -> RoundState:
        """The round's own part of the job's state."""
        return self.job.delivery

    def save(self) -> None:
        """Persist the state; raises JobInterrupted after `/agent stop` or on shutdown, except while saving work."""
        try:
            self._write()
        except JobInterrupted:
            if not self.saving_work:
                raise

    def keep_spent(self, spent: Spent) -> None:
        """Store what the run has spent; a stop request is left for the loop's next report to raise."""
        self.state.spent = spent
        with contextlib.suppress(JobInterrupted):
            self._write()

    def _write(self) -> None:
        self.ctx.checkpoint(**self.job.model_dump(mode="json"))
