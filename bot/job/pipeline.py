"""The whole job: snapshot → contract → workspace → loop → push, PR, check run, progress, replies.

Built by `bot.commands.services.delivery_pipeline` (the default AIFIX_PIPELINE). A job keeps its progress in `ctx.state`
(`delivery`: the round, the job directory, the run's result once it exists), so an attempt after a
worker died continues from the last checkpoint: a finished run is delivered again rather than
re-run, an unfinished one resumes on the job directory's last checkpoint. Work is never lost: a
handoff, a budget stop, `/agent stop` or a crash after edits still pushes the checkpoints and opens
or updates the draft PR with the Handoff section filled.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bot.checks.models import SetupReport
from bot.ci.models import CiRecord, ci_record, read_ci_record
from bot.contract.models import TaskContract
from bot.delivery.checkrun import render_check_run
from bot.delivery.ci_notes import answered, round_note
from bot.delivery.evidence import not_verified
from bot.delivery.github_out import GitHubOutput, PullRef
from bot.delivery.handoff import handoff_lines
from bot.delivery.models import Phase, Progress, RoundRecord, read_rounds
from bot.delivery.progress import render_progress
from bot.delivery.render import render_pr_body
from bot.delivery.replies import render_reply
from bot.job.approval import ApprovalStage, wants_plan
from bot.job.contract_stage import ContractStage
from bot.job.paths import trace_file
from bot.job.rounds import RoundInput, ready_for_review, rounds_feedback
from bot.loop.records import Spent
from bot.loop.report import Phase as LoopPhase
from bot.loop.result import Handoff, Outcome, RunResult
from bot.loop.session import Toolkit, run_session
from bot.queue.pipeline import JobContext, JobInterrupted, JobOutcome
from bot.redact import safe_outgoing
from bot.secrets import repo_secrets
from bot.snapshot import Snapshot
from bot.workspace import opening
from bot.workspace.branch import branch_name
from bot.workspace.gate import PatchGate
from bot.workspace.git import Workspace

log = logging.getLogger(__name__)

STATUS: dict[Outcome, Literal["done", "unverified", "handed_off", "failed", "needs_clarification"]] = {
    "accepted": "done",
    "unverified": "unverified",
    "handed_off": "handed_off",
    "failed": "failed",
    "needs_clarification": "needs_clarification",
}
COMMENT_PHASES: dict[LoopPhase, Phase] = {"baseline": "baseline", "steps": "round", "final_checks": "checks"}
"""Loop phases that move the progress comment to its next phase."""


class DeliveryState(BaseModel):
    """What `ctx.state["delivery"]` keeps between attempts of one job."""

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


class DeliveryPipeline:
    """Runs the rounds: `issue`, `retry` and `review` jobs, and the round of a `ci` job (`bot.job.kinds`)."""

    def __init__(
        self, kit: Toolkit, *, stage: ContractStage | None = None, run_link: Callable[[int], str] | None = None
    ) -> None:
        self.kit = kit
        self.stage = stage or ContractStage()
        self.run_link = run_link
        """Job id → the signed link to its page in the run viewer; None when links are off."""

    def run(self, snapshot: Snapshot, ctx: JobContext, round_input: RoundInput | None = None) -> JobOutcome:
        return Attempt(self, snapshot, ctx, round_input).run()


class JobReporter:
    """The loop's phases move the progress comment; every line joins the job's history; each is a chance to stop."""

    def __init__(self, attempt: Attempt) -> None:
        self.attempt = attempt

    def phase(self, phase: LoopPhase) -> None:
        self.attempt.ctx.record("phase", phase=phase)
        if phase in COMMENT_PHASES:
            self.attempt.phase(COMMENT_PHASES[phase])
        else:
            self.attempt.save()  # raises JobInterrupted after /agent stop or on shutdown

    def say(self, line: str) -> None:
        self.attempt.ctx.record("loop", line=line)
        self.attempt.save()

    def setup(self, report: SetupReport) -> None:
        self.attempt.ctx.record("setup", **report.model_dump(), line=report.describe())
        if report.status != "none":
            self.attempt.progress.setup = report.describe()
        self.attempt.save()


class Attempt:
    """One attempt at one job; every side effect on GitHub goes through `out` (redacted, fail-closed)."""

    def __init__(
        self, pipeline: DeliveryPipeline, snapshot: Snapshot, ctx: JobContext, round_input: RoundInput | None = None
    ) -> None:
        self.p, self.snapshot, self.ctx, self.round_input = pipeline, snapshot, ctx, round_input
        self.kit = pipeline.kit
        self.state = DeliveryState.model_validate(ctx.state.get("delivery") or {})
        self.extra_secrets: list[str] = []
        self.out = GitHubOutput(ctx.github, secrets=self.secrets)
        self.issue = snapshot.number
        self.pr: PullRef | None = None
        self.ws: Workspace | None = None
        self.saving_work = False
        self.rounds: list[RoundRecord] = []
        self.ci = CiRecord()
        self.run_url = pipeline.run_link(ctx.job_id) if pipeline.run_link else ""
        self.progress = Progress(issue_number=self.issue, round_kind=snapshot.kind, run_url=self.run_url)

    def secrets(self) -> list[str]:
        return [*self.ctx.secrets(), *self.extra_secrets]

    def save(self) -> None:
        """Persist the state; raises JobInterrupted after `/agent stop` or on shutdown, except while saving work."""
        try:
            self.ctx.checkpoint(delivery=self.state.model_dump(mode="json"))
        except JobInterrupted:
            if not self.saving_work:
                raise

    # ---- the job --------------------------------------------------------------------------

    def run(self) -> JobOutcome:
        self.pr = self.find_pr()
        if self.state.rounds is None:
            # Read once per job: after this job publishes, the PR body also records this job's own round.
            self.state.rounds = read_rounds(self.pr.body) if self.pr else []
        self.rounds = self.state.rounds
        self.ci = self.progress.ci = read_ci_record(self.pr.body) if self.pr else CiRecord()
        self.progress.rounds, self.progress.round_n = self.rounds, len(self.rounds) + 1
        self.progress.pr_url = self.pr.html_url if self.pr else ""
        if self.state.result is None:
            self.phase("contract")
            decision = self.p.stage.prepare(self.snapshot, self.ctx, self.show_contract)
            self.progress.contract = decision.section
            if decision.contract is None or decision.status != "ready":
                outcome = decision.outcome() or JobOutcome(status="failed", reason="no contract")
                self.progress.run_url = ""  # the loop never ran: its page would be empty
                self.finish_progress(
                    "needs_clarification" if decision.status == "needs_clarification" else "failed", outcome.reason
                )
                return outcome
            extra = self.round_input.feedback if self.round_input else []
            feedback = [*decision.contract.feedback, *rounds_feedback(self.rounds, self.snapshot), *extra]
            contract = decision.contract.model_copy(update={"feedback": feedback})
            if wants_plan(contract, self.snapshot):
                approved = ApprovalStage(self, contract).decide()
                if isinstance(approved, JobOutcome):
                    return approved
                contract = contract.model_copy(update={"approach": approved})
            self.state.result = self.execute(contract)
            self.save()
        return self.deliver(self.state.result)

    def find_pr(self) -> PullRef | None:
        if self.state.pr_number is not None:
            return self.out.get_pr(self.state.pr_number)
        if self.snapshot.pr_number is not None:
            return self.out.get_pr(self.snapshot.pr_number)
        return self.out.find_pr(self.issue, branch_name(self.issue, self.snapshot.title))

    def show_contract(self, section: str, open_: bool) -> str:
        """The contract stage's section in the issue comment; the comment's URL."""
        self.progress.contract, self.progress.contract_open = section, open_
        return self.post_progress()

    def phase(self, phase: Phase) -> None:
        self.progress.current = phase
        self.post_progress()
        self.save()

    def finish_progress(self, outcome: Outcome, reason: str) -> None:
        self.progress.outcome, self.progress.reason = outcome, reason
        self.post_progress()

    def post_progress(self) -> str:
        comment = self.out.upsert_progress(self.issue, render_progress(self.progress), self.state.comment_id)
        self.state.comment_id = int(comment["id"])
        return str(comment.get("html_url", ""))

    # ---- workspace and loop ---------------------------------------------------------------

    def workspace(self) -> Workspace:
        """Resume this job's directory, continue the PR's branch, or start a new branch from the default one."""
        if self.state.job_dir and Path(self.state.job_dir, "workspace.json").is_file():
            return opening.resume(self.state.job_dir)
        root = (
            self.kit.work_dir
            / "jobs"
            / f"{self.snapshot.repo.replace('/', '--')}-{self.issue}-{self.ctx.job_id}-{self.ctx.attempt}"
        )
        shutil.rmtree(root, ignore_errors=True)
        token = self.ctx.github.token.get_secret_value()
        url = self.snapshot.clone_url
        if self.pr is not None:
            # Evidence is taken against the pull request's original base, so round 1's reproduction stays valid.
            first = self.rounds[0].base_sha if self.rounds else ""
            base = first or f"refs/remotes/origin/{self.snapshot.default_branch}"
            ws = opening.checkout_existing(url, root, branch=self.pr.head_ref, token=token, evidence_base=base)
        else:
            ws = opening.clone(url, root, branch=branch_name(self.issue, self.snapshot.title), token=token, ref=None)
        self.state.job_dir, self.state.branch = str(root), ws.branch
        self.save()
        return ws

    def attach(self, ws: Workspace) -> Workspace:
        """Work in `ws`; the secrets its repository holds (.env files and the like) join what redaction removes."""
        self.ws = ws
        self.extra_secrets = repo_secrets(ws.path)
        return ws

    def execute(self, contract: TaskContract) -> RunResult:
        ws = self.attach(self.workspace())
        try:
            return run_session(
                contract,
                ws,
                self.kit,
                repo=self.snapshot.repo,
                secrets=self.secrets(),
                trace_path=trace_file(self.state.job_dir),
                reporter=JobReporter(self),
                attempt=self.ctx.attempt,
                spent=self.state.spent,
                keep_spent=self.keep_spent,
            )
        except JobInterrupted:
            if self.ctx.stop_requested():
                self.save_work(ws, contract, "handed_off", "stopped by /agent stop")
            raise
        except Exception as exc:
            self.save_work(ws, contract, "failed", f"the run crashed: {type(exc).__name__}: {exc}")
            raise

    def keep_spent(self, spent: Spent) -> None:
        """Store what the run has spent; a stop request is left for the loop's next report to raise."""
        self.state.spent = spent
        with contextlib.suppress(JobInterrupted):
            self.ctx.checkpoint(delivery=self.state.model_dump(mode="json"))

    def push(self, ws: Workspace) -> None:
        """Push the checkpoints, and the rolled-back attempts (no-ops when the remote has them; never forced)."""
        token = self.ctx.github.token.get_secret_value()
        if ws.head_sha != ws.base_sha:
            ws.push(token=token)
        if ws.has_attempts:
            ws.push(token=token, attempts=True)

    def save_work(self, ws: Workspace, contract: TaskContract, outcome: Outcome, reason: str) -> None:
        """Push the checkpoints and open or update the draft PR with a handoff, before the error goes on."""
        self.saving_work = True
        try:
            # Edits made since the loop's last checkpoint are kept too, if the patch gate allows them.
            message = safe_outgoing(f"ai-fix: work in progress ({reason})", self.secrets())
            ws.save_work(message, gate=PatchGate.over(ws, contract.scope, contract.budget))
            if ws.head_sha == ws.base_sha and self.pr is None:
                self.finish_progress(outcome, reason)
                return
            self.push(ws)
            stats = ws.stats()
            result = RunResult(
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
            self.deliver(result, final=False)
            self.finish_progress(outcome, reason)
        except Exception as exc:  # noqa: BLE001 - the original error matters more; this one is only logged
            log.error("could not save the work of job %s: %s", self.ctx.job_id, type(exc).__name__)

    # ---- delivery -------------------------------------------------------------------------

    def deliver(self, result: RunResult, *, final: bool = True) -> JobOutcome:
        if final:
            self.phase("checks")
        changed = bool(result.head_sha) and result.head_sha != result.base_sha
        if (changed or result.handoff.attempts_branch) and not self.state.delivered:
            # A later attempt delivering a recorded run finds the checkpoints in the job directory.
            self.push(self.ws or self.attach(opening.resume(self.state.job_dir)))
        if changed or self.pr is not None:
            self.publish(result)
        if final:
            self.progress.current = None
            self.progress.not_verified = not_verified(result) if result.outcome == "unverified" else []
            self.progress.handoff = self.comment_handoff(result)
            self.finish_progress(result.outcome, result.reason)
            self.state.delivered = True
            self.save()
            if self.ws is not None:
                self.ws.remove()  # everything is pushed; the trace stays beside the job directory
        data = {"pr": self.pr.html_url if self.pr else "", "branch": result.branch, "head": result.head_sha}
        return JobOutcome(
            status=STATUS[result.outcome], reason=result.reason, data=data, cost_usd=result.cost.usd or 0.0
        )

    def comment_handoff(self, result: RunResult) -> list[str]:
        """The handoff in the issue comment: in full when no pull request carries it."""
        if result.outcome in ("accepted", "needs_clarification"):
            return []
        if self.pr is not None:
            return [f"The handoff is in the pull request's *Handoff* section: {self.pr.html_url}"]
        return handoff_lines(result, next_round="Edit the issue if needed and label it again to start another round.")

    def publish(self, result: RunResult) -> None:
        self.progress.current = "pull_request"
        ci = answered(self.round_input.ci, result) if self.round_input else None
        if ci is not None and not self.ci.has_note("round", ci.head_sha):
            self.ci.add(round_note(ci, result, len(self.rounds) + 1))
        kept = [ci_record(self.ci)] if self.ci.notes or self.ci.reruns else []
        body = render_pr_body(
            result,
            issue_number=self.issue,
            rounds=self.rounds,
            kind=self.snapshot.kind,
            run_url=self.run_url,
            ci=ci,
            records=kept,
        )
        self.pr = self.out.upsert_pr(
            issue_number=self.issue,
            branch=result.branch,
            base=self.snapshot.default_branch,
            title=f"ai-fix: {self.snapshot.title}",
            body=body,
            existing=self.pr,
        )
        self.state.pr_number = self.pr.number
        self.progress.pr_url = self.pr.html_url
        self.save()
        self.out.request_review(self.pr, self.snapshot.sender)
        self.pr = self.out.set_ready(self.pr, ready_for_review(result))
        self.out.set_outcome_label(self.pr, result.outcome)
        if result.head_sha:
            self.out.publish_check_run(
                result.head_sha,
                render_check_run(result, pr_url=self.pr.html_url, run_url=self.run_url),
                details_url=self.run_url or self.pr.html_url,
            )
        for comment in self.snapshot.review_comments:
            if comment.id in self.state.replied:
                continue
            reply = render_reply(comment, result, round_diff=result.diff, pr_url=self.pr.html_url)
            self.out.reply_once(self.pr, comment.id, reply, key=f"comment={comment.id} head={result.head_sha[:12]}")
            self.state.replied.append(comment.id)
            self.save()
