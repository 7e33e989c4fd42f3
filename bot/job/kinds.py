"""The Pipeline the worker runs: each job kind to the job that does it.

`issue`, `retry` and `review` jobs are rounds (`bot.job.pipeline`); a `ci` job decides about its pull
request's CI and may run a round (`bot.job.ci`); a `rebase` job merges the base branch in
(`bot.job.rebase`); a `scan` job finds the pull requests a push or a commit status concerns (`bot.job.scan`).
"""

from __future__ import annotations

from bot.job.ci import CiJob
from bot.job.pipeline import RoundPipeline
from bot.job.rebase import RebaseJob
from bot.job.scan import ScanJob
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot


class GitHubJobs:
    def __init__(self, rounds: RoundPipeline) -> None:
        self.rounds = rounds

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        if snapshot.kind == "ci":
            return CiJob(self.rounds, snapshot, ctx).run()
        if snapshot.kind == "rebase":
            return RebaseJob(self.rounds, snapshot, ctx).run()
        if snapshot.kind == "scan":
            return ScanJob(snapshot, ctx).run()
        return self.rounds.run(snapshot, ctx)
