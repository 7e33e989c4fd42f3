"""The Pipeline the worker runs: each job kind to the job that does it, by table.

`issue`, `retry` and `review` jobs are rounds (`bot.job.pipeline`); a `ci` job decides about its pull
request's CI and may run a round (`bot.job.ci`); a `rebase` job merges the base branch in
(`bot.job.rebase`); a `scan` job finds the pull requests a push or a commit status concerns (`bot.job.scan`).
Every job is made the same way, from the job tools, the snapshot and the job's context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from bot.job.ci import CiJob
from bot.job.pipeline import RoundPipeline
from bot.job.rebase import RebaseJob
from bot.job.scan import ScanJob
from bot.job.tools import JobTools
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from bot.vocabulary import WorkKind


class Job(Protocol):
    def run(self) -> JobOutcome: ...


class RoundJob:
    """An `issue`, `retry` or `review` job: one round."""

    def __init__(self, tools: JobTools, snapshot: Snapshot, ctx: JobContext) -> None:
        self.round = RoundPipeline(tools).round(snapshot, ctx)

    def run(self) -> JobOutcome:
        return self.round.run()


JOBS: Mapping[WorkKind, Callable[[JobTools, Snapshot, JobContext], Job]] = {
    "issue": RoundJob,
    "retry": RoundJob,
    "review": RoundJob,
    "ci": CiJob,
    "rebase": RebaseJob,
    "scan": lambda _tools, snapshot, ctx: ScanJob(snapshot, ctx),  # it only reads and queues: no tools
}
"""Every work kind's job (`tests/job/test_kinds.py` holds the table to the vocabulary's WORK_KINDS)."""


class GitHubJobs:
    def __init__(self, tools: JobTools) -> None:
        self.tools = tools

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        return JOBS[snapshot.kind](self.tools, snapshot, ctx).run()
