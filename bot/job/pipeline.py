"""The whole job: snapshot → contract → workspace → loop → push, PR, check run, progress, replies.

Built by `bot.commands.toolkit.delivery_pipeline` (the default AIFIX_PIPELINE). A job keeps its progress in its typed
state (`RoundJobState`, `bot.job.state`: the round, the job directory, the run's result once it exists), so an attempt after a
worker died continues from the last checkpoint: a finished run is delivered again rather than
re-run, an unfinished one resumes on the job directory's last checkpoint. Work is never lost: a
handoff, a budget stop, `/agent stop` or a crash after edits still pushes the checkpoints and opens
or updates the draft PR with the Handoff section filled.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from bot.checks.models import SetupReport
from bot.contract.models import TaskContract
from bot.job.approval import ApprovalStage, wants_plan
from bot.job.checkout import Checkout
from bot.job.checkpoint import Checkpoint
from bot.job.pr_side import PullRequestSide
from bot.job.progress_comment import ProgressComment
from bot.job.rounds import RoundInput, rounds_feedback
from bot.job.state import trace_file
from bot.job.tools import JobTools
from bot.loop.result import Handoff, RunResult
from bot.loop.session import RunInput, run_session
from bot.publish.evidence import not_verified
from bot.publish.github_out import GitHubOutput
from bot.publish.handoff import handoff_lines
from bot.publish.models import Progress
from bot.queue.models import MAX_ATTEMPTS
from bot.queue.pipeline import JobContext, JobInterrupted, JobOutcome
from bot.redact import safe_outgoing
from bot.snapshot import Snapshot
from bot.vocabulary import (
    ACCEPTED,
    FAILED,
    HANDED_OFF,
    NEEDS_CLARIFICATION,
    UNVERIFIED,
    Outcome,
    RunPhase,
    comment_phase,
    job_status,
)
from bot.workspace.gate import PatchGate
from bot.workspace.git import Workspace

log = logging.getLogger(__name__)


class RoundPipeline:
    """Runs the rounds: `issue`, `retry` and `review` jobs, and the round of a `ci` job (`bot.job.kinds`)."""

    def __init__(self, tools: JobTools) -> None:
        self.tools = tools

    def round(self, snapshot: Snapshot, ctx: JobContext, round_input: RoundInput | None = None) -> Round:
        link = self.tools.run_link
        return Round(self.tools, snapshot, ctx, round_input, link(ctx.store_identity(), ctx.job_id) if link else "")

    def run(self, snapshot: Snapshot, ctx: JobContext, round_input: RoundInput | None = None) -> JobOutcome:
        return self.round(snapshot, ctx, round_input).run()


class JobReporter:
    """The loop's phases move the progress comment; every line joins the job's history; each is a chance to stop."""

    def __init__(self, ctx: JobContext, comment: ProgressComment, checkpoint: Checkpoint) -> None:
        self.ctx, self.comment, self.checkpoint = ctx, comment, checkpoint

    def phase(self, phase: RunPhase) -> None:
        self.ctx.record("phase", phase=phase)
        moved = comment_phase(phase)
        if moved is not None:
            self.comment.move(moved)
        else:
            self.checkpoint.save()  # raises JobInterrupted after /agent stop or on shutdown

    def say(self, line: str) -> None:
        self.ctx.record("loop", line=line)
        self.checkpoint.save()

    def setup(self, report: SetupReport) -> None:
        self.ctx.record("setup", **report.model_dump(), line=report.describe())
        if report.status != "none":
            self.comment.progress.setup = report.describe()
        self.checkpoint.save()


class Round:
    """One attempt at one round job, its story in `run()`; every side effect on GitHub goes through `out`
    (redacted, fail-closed)."""

    def __init__(
        self, tools: JobTools, snapshot: Snapshot, ctx: JobContext, round_input: RoundInput | None, run_url: str
    ) -> None:
        self.tools, self.snapshot, self.ctx, self.round_input = tools, snapshot, ctx, round_input
        self.checkpoint = Checkpoint(ctx)
        self.checkout = Checkout(tools, snapshot, ctx, self.checkpoint)
        self.out = GitHubOutput(ctx.github, secrets=self.checkout.secrets)
        progress = Progress(issue_number=snapshot.number, round_kind=snapshot.kind, run_url=run_url)
        self.comment = ProgressComment(self.out, self.checkpoint, progress)
        self.pull = PullRequestSide(self.out, snapshot, self.checkpoint, self.comment, round_input, run_url)

    @property
    def result(self) -> RunResult | None:
        """The run's result, once the loop has ended (in this attempt or an earlier one)."""
        return self.checkpoint.state.result

    def run(self) -> JobOutcome:
        with self.failure_shown():
            return self.story()

    def story(self) -> JobOutcome:
        self.pull.find()
        state = self.checkpoint.state
        if state.result is None:
            self.comment.move("contract")
            decision = self.tools.stage.prepare(self.snapshot, self.checkpoint, self.comment.show_contract)
            self.comment.progress.contract = decision.section
            if decision.contract is None or decision.status != "ready":
                outcome = decision.outcome() or JobOutcome(status=FAILED, reason="no contract")
                self.comment.progress.run_url = ""  # the loop never ran: its page would be empty
                self.comment.finish(
                    NEEDS_CLARIFICATION if decision.status == NEEDS_CLARIFICATION else FAILED, outcome.reason
                )
                return outcome
            extra = self.round_input.feedback if self.round_input else []
            feedback = [*decision.contract.feedback, *rounds_feedback(self.pull.rounds, self.snapshot), *extra]
            contract = decision.contract.model_copy(update={"feedback": feedback})
            if wants_plan(contract, self.snapshot):
                approved = ApprovalStage(
                    contract, self.tools, self.snapshot, self.comment, self.checkpoint, self.checkout.secrets
                ).decide()
                if isinstance(approved, JobOutcome):
                    return approved
                contract = contract.model_copy(update={"approach": approved})
            state.result = self.execute(contract)
            self.checkpoint.save()
        return self.deliver(state.result)

    @contextlib.contextmanager
    def failure_shown(self) -> Iterator[None]:
        """An error on the job's last attempt is said in the progress comment (else it would say "in progress" forever)."""
        try:
            yield
        except JobInterrupted:
            raise
        except Exception as exc:
            if self.ctx.attempt >= MAX_ATTEMPTS:
                reason = f"failed on all {MAX_ATTEMPTS} attempts; last error: {type(exc).__name__}: {exc}"
                try:
                    self.comment.finish(FAILED, reason)
                except Exception as again:  # noqa: BLE001 - the job's own error is what the worker records
                    log.error(
                        "job %s: could not say on the issue that it failed: %s", self.ctx.job_id, type(again).__name__
                    )
            raise

    def execute(self, contract: TaskContract) -> RunResult:
        ws = self.checkout.open(self.pull.pr, self.pull.first_base)
        state = self.checkpoint.state
        try:
            run = RunInput(
                contract,
                ws,
                repo=self.snapshot.repo,
                secrets=self.checkout.secrets(),
                trace_path=trace_file(state.job_dir),
                reporter=JobReporter(self.ctx, self.comment, self.checkpoint),
                attempt=self.ctx.attempt,
                spent=state.spent,
                keep_spent=self.checkpoint.keep_spent,
            )
            return run_session(run, self.tools.kit)
        except JobInterrupted:
            if self.ctx.stop_requested():
                self.save_work(ws, contract, HANDED_OFF, "stopped by /agent stop")
            raise
        except Exception as exc:
            self.save_work(ws, contract, FAILED, f"the run crashed: {type(exc).__name__}: {exc}")
            raise

    def save_work(self, ws: Workspace, contract: TaskContract, outcome: Outcome, reason: str) -> None:
        """Push the checkpoints and open or update the draft PR with a handoff, before the error goes on."""
        self.checkpoint.saving_work = True
        try:
            # Edits made since the loop's last checkpoint are kept too, if the patch gate allows them.
            message = safe_outgoing(f"ai-fix: work in progress ({reason})", self.checkout.secrets())
            ws.save_work(message, gate=PatchGate.over(ws, contract.scope, contract.budget))
            if ws.head_sha == ws.base_sha and self.pull.pr is None:
                self.comment.finish(outcome, reason)
                return
            self.checkout.push(ws)
            self.deliver(work_in_progress(ws, contract, outcome, reason), final=False)
            self.comment.finish(outcome, reason)
        except Exception as exc:  # noqa: BLE001 - the original error matters more; this one is only logged
            log.error("could not save the work of job %s: %s", self.ctx.job_id, type(exc).__name__)

    def deliver(self, result: RunResult, *, final: bool = True) -> JobOutcome:
        if final:
            self.comment.move("checks")
        state = self.checkpoint.state
        changed = bool(result.head_sha) and result.head_sha != result.base_sha
        if (changed or result.handoff.attempts_ref) and not state.delivered:
            # A later attempt delivering a recorded run finds the checkpoints in the job directory.
            self.checkout.push(self.checkout.current())
        if changed or self.pull.pr is not None:
            self.pull.publish(result)
        if final:
            progress = self.comment.progress
            progress.current = None
            progress.not_verified = not_verified(result) if result.outcome == UNVERIFIED else []
            progress.handoff = self.comment_handoff(result)
            self.comment.finish(result.outcome, result.reason)
            state.delivered = True
            self.checkpoint.save()
            self.checkout.remove()
        pr = self.pull.pr
        data = {"pr": pr.html_url if pr else "", "branch": result.branch, "head": result.head_sha}
        return JobOutcome(
            status=job_status(result.outcome), reason=result.reason, data=data, cost_usd=result.cost.usd or 0.0
        )

    def comment_handoff(self, result: RunResult) -> list[str]:
        """The handoff in the issue comment: in full when no pull request carries it."""
        if result.outcome in (ACCEPTED, NEEDS_CLARIFICATION):
            return []
        if self.pull.pr is not None:
            return [f"The handoff is in the pull request's *Handoff* section: {self.pull.pr.html_url}"]
        return handoff_lines(result, next_round="Edit the issue if needed and label it again to start another round.")


def work_in_progress(ws: Workspace, contract: TaskContract, outcome: Outcome, reason: str) -> RunResult:
    """What a stopped or crashed run leaves for its draft PR: the checkpoints so far, and a handoff saying so."""
    stats = ws.stats()
    return RunResult(
        outcome=outcome,
        reason=reason,
        contract=contract,
        branch=ws.branch,
        base_sha=ws.base_sha,
        head_sha=ws.head_sha,
        diff=stats,
        handoff=Handoff(
            done=[
                f"changed {', '.join(f.path for f in stats.files) or 'nothing'} up to the last checkpoint {ws.head_sha[:7]}"
            ],
            not_done=["the contract checks were not verified after the last checkpoint"],
            next_steps=["comment `/agent retry` on this PR to continue from the pushed branch"],
        ),
    )
