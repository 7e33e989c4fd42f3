"""A run's phases and lines join the job's history (`GET /tasks/{id}`), each a chance to stop: for the runs of a job
that has no progress comment to move (the planning phase, a rebase)."""

from __future__ import annotations

from bot.checks.models import SetupReport
from bot.queue.pipeline import JobContext
from bot.vocabulary import RunPhase


class HistoryReporter:
    def __init__(self, ctx: JobContext, *, what: str) -> None:
        self.ctx, self.what = ctx, what
        """`what`: the run the phases belong to ("planning", "rebase")."""

    def phase(self, phase: RunPhase) -> None:
        self.ctx.record("phase", phase=f"{self.what}: {phase}")
        self.ctx.checkpoint()

    def say(self, line: str) -> None:
        self.ctx.record("loop", line=line)
        self.ctx.checkpoint()

    def setup(self, report: SetupReport) -> None:
        self.ctx.record("setup", **report.model_dump(), line=report.describe())
        self.ctx.checkpoint()
