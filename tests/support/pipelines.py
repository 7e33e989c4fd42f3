"""Pipelines for tests, loadable by name (AIFIX_PIPELINE=tests.support.pipelines:Gate) in another process too.

They coordinate with the test through files in `settings.work_dir`, which works across processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from bot.job.checkpoint import Checkpoint
from bot.job.contract_stage import ContractStage
from bot.publish.github_out import GitHubOutput
from bot.publish.models import Progress
from bot.publish.progress import render_progress
from bot.queue.pipeline import JobContext, JobOutcome
from bot.settings import Settings
from bot.snapshot import Snapshot


class SnapshotOnly:
    """Stores the snapshot (the worker did) and ends: for tests of what happens before a pipeline's own work."""

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        ctx.checkpoint()
        return JobOutcome(status="done", reason=f"snapshot of {snapshot.repo}#{snapshot.number} stored")


class ContractOnly:
    """The contract stage alone: the job ends once the contract, or the request for clarification, is on the issue."""

    def __init__(self, stage: ContractStage | None = None) -> None:
        self.stage = stage or ContractStage()

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        decision = self.stage.prepare(snapshot, Checkpoint(ctx), issue_comment(snapshot, ctx))
        return decision.outcome() or JobOutcome(
            status="done",
            reason="contract posted; no execution stage is configured",
            data={"comment": decision.comment_url},
        )


def issue_comment(snapshot: Snapshot, ctx: JobContext) -> Callable[[str, bool], str]:
    """A `post` for the contract stage: its section in the issue's one ai-fix comment, as the job shows it."""
    out = GitHubOutput(ctx.github, secrets=ctx.secrets)
    progress = Progress(issue_number=snapshot.number)

    def post(section: str, open_: bool) -> str:
        progress.contract, progress.contract_open = section, open_
        return str(out.comments.upsert_progress(snapshot.number, render_progress(progress), None).get("html_url", ""))

    return post


class Gate:
    """Writes `started-<job>`, then checkpoints every 20 ms until `release-<job>` (or `release-all`) exists."""

    def __init__(self, settings: Settings) -> None:
        self.dir = Path(settings.work_dir)
        self.dir.mkdir(parents=True, exist_ok=True)

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        (self.dir / f"started-{ctx.job_id}").write_text(
            f"{os.getpid()} attempt={ctx.attempt} step={ctx.state.get('step', 0)}"
        )
        step = int(ctx.state.get("step", 0))
        while not ((self.dir / f"release-{ctx.job_id}").exists() or (self.dir / "release-all").exists()):
            step += 1
            ctx.checkpoint(step=step)
            time.sleep(0.02)
        ctx.record("gate_passed", steps=step, resumed_from=ctx.state.get("resumed_from", 0))
        return JobOutcome(status="done", reason=f"passed the gate after {step} steps")


class Ledger:
    """Appends "<job> <pid>" to `claims.log` and finishes: shows which process ran which job."""

    def __init__(self, settings: Settings) -> None:
        self.log = Path(settings.work_dir) / "claims.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        with self.log.open("a") as f:
            f.write(f"{ctx.job_id} {os.getpid()}\n")
        time.sleep(0.01)
        return JobOutcome(status="done", reason="recorded")


def wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear within {timeout} s")
        time.sleep(0.01)
    return path.read_text()


class Fleet:
    """Gate for issue 1 (the job a test kills its worker in), Ledger for every other issue."""

    def __init__(self, settings: Settings) -> None:
        self.gate, self.ledger = Gate(settings), Ledger(settings)

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        return (self.gate if snapshot.number == 1 else self.ledger).run(snapshot, ctx)


class Parks:
    """Waits for an answer (a year at most) without a worker; once woken, ends with what the answer said."""

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        answer = ctx.take_answer()
        if answer is None:
            ctx.checkpoint(parked=int(ctx.state.get("parked", 0)) + 1)
            return JobOutcome(status="awaiting_approval", reason="waiting", until=time.time() + 365 * 86_400)
        if answer.action == "revise":
            ctx.checkpoint(revised=answer.feedback)
            return JobOutcome(status="awaiting_approval", reason="revised", until=time.time() + 365 * 86_400)
        return JobOutcome(
            status="cancelled" if answer.action == "stop" else "done",
            reason=f"{answer.action} {answer.approach} by {answer.by}; parked {ctx.state['parked']} time(s), "
            f"revised {ctx.state.get('revised', '-')!r}",
        )
