"""What a round job keeps between its attempts, and saving it: each save is also a chance to stop."""

from __future__ import annotations

import contextlib

from pydantic import BaseModel, Field

from bot.loop.records import Spent
from bot.loop.result import RunResult
from bot.publish.models import RoundRecord
from bot.queue.pipeline import JobContext, JobInterrupted

STATE_KEY = "delivery"
"""Where `ctx.state` keeps a round's state: the name jobs stored by earlier versions use (renaming it would orphan
the state of jobs in flight across an upgrade)."""


class RoundState(BaseModel):
    """What `ctx.state[STATE_KEY]` keeps between attempts of one job."""

    job_dir: str = ""
    branch: str = ""
    pr_number: int | None = None
    comment_id: int | None = None
    rounds: list[RoundRecord] | None = None
    """The PR's rounds before this job, as read when the job first ran."""
    result: RunResult | None = None
    """Set once the loop has ended: a later attempt only delivers it."""
    delivered: bool = False
    replied: list[int] = Field(default_factory=list)
    spent: Spent = Field(default_factory=Spent)
    """Steps, tokens, cost and wall time the job's runs have spent, stored after every step: the budget counts
    across attempts."""


class Checkpoint:
    """The round's state and its saving into the job's store."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.state = RoundState.model_validate(ctx.state.get(STATE_KEY) or {})
        self.saving_work = False
        """Set while the work of a stopped or crashed run is being saved: a stop request must not cut that short."""

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
        self.ctx.checkpoint(**{STATE_KEY: self.state.model_dump(mode="json")})
