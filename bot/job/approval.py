"""The approval stage of a GitHub job: plan, show the two approaches in the issue comment, wait without a worker,
and act on the maintainer's answer.

It runs between the contract and the loop when the contract asks for approval (`approval: plan`, the
`ai-fix:plan` label, `/agent plan`), for issue jobs only: later rounds start from a writer's explicit
feedback. Its state (`ctx.state["planning"]`) holds every plan made, a revision asked for and not yet
made, the deadline and the approval, so each wake-up (an answer, or the deadline) carries on from it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from bot.checks.models import SetupReport
from bot.contract.approach import ApprovedApproach, Estimate, Proposal
from bot.contract.models import TaskContract
from bot.delivery.models import Progress
from bot.delivery.plan import PlanView, render_plan
from bot.job.paths import trace_file
from bot.loop.planning import PlanResult
from bot.loop.report import Phase as LoopPhase
from bot.loop.result import Cost, Outcome
from bot.loop.session import Toolkit, plan_session
from bot.queue.models import PlanAnswer
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from bot.workspace import opening
from bot.workspace.branch import branch_name

DAY = 86_400.0
ENDS: dict[str, Literal["failed", "needs_clarification", "handed_off"]] = {
    "failed": "failed",
    "needs_clarification": "needs_clarification",
}
"""How a planning phase without a proposal ends the job (anything else: handed off)."""


class PlanRound(BaseModel):
    """One plan shown on the issue: the first, or one made again after `/agent revise`."""

    revision: int
    proposal: Proposal
    estimates: list[Estimate]
    feedback: str = ""
    feedback_by: str = ""
    cost: Cost = Field(default_factory=Cost)


class PlanningState(BaseModel):
    """What `ctx.state["planning"]` keeps across the job's wake-ups."""

    rounds: list[PlanRound] = Field(default_factory=list)
    revise: PlanAnswer | None = None
    """A `/agent revise` taken and not planned yet."""
    deadline: float = 0.0
    approved: ApprovedApproach | None = None
    cancelled: str = ""


class Host(Protocol):
    """What the stage uses of the job's attempt (`bot.job.pipeline.Attempt`)."""

    ctx: JobContext
    kit: Toolkit
    snapshot: Snapshot
    progress: Progress

    def secrets(self) -> list[str]: ...

    def post_progress(self) -> str: ...

    def save(self) -> None: ...

    def finish_progress(self, outcome: Outcome, reason: str) -> None: ...


class PlanReporter:
    """The planning phase's lines join the job's history; each is a chance to stop (`/agent stop`, shutdown)."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    def phase(self, phase: LoopPhase) -> None:
        self.ctx.record("phase", phase=f"planning: {phase}")
        self.ctx.checkpoint()

    def say(self, line: str) -> None:
        self.ctx.record("loop", line=line)
        self.ctx.checkpoint()

    def setup(self, report: SetupReport) -> None:
        self.ctx.record("setup", **report.model_dump(), line=report.describe())
        self.ctx.checkpoint()


def wants_plan(contract: TaskContract, snapshot: Snapshot) -> bool:
    return contract.approval.mode == "plan" and snapshot.kind == "issue"


class ApprovalStage:
    def __init__(self, host: Host, contract: TaskContract, *, clock: Callable[[], float] = time.time) -> None:
        self.host, self.contract, self.clock = host, contract, clock
        self.ctx = host.ctx
        self.state = PlanningState.model_validate(self.ctx.state.get("planning") or {})

    def save(self) -> None:
        self.ctx.state["planning"] = self.state.model_dump(mode="json")
        self.host.save()

    def decide(self) -> ApprovedApproach | JobOutcome:
        """The approved approach to run, or how the job ends for now (waiting, cancelled, no plan)."""
        if (answer := self.ctx.take_answer()) is not None:
            self.take(answer)
            self.save()
        s = self.state
        if s.approved is None and not s.cancelled and (not s.rounds or s.revise is not None):
            if (failed := self.plan()) is not None:
                return failed
        self.show()
        if s.approved is not None:
            return s.approved
        if s.cancelled:
            return JobOutcome(status="cancelled", reason=s.cancelled)
        n = s.rounds[-1].revision
        return JobOutcome(
            status="awaiting_approval",
            reason=f"plan {n} posted; waiting for /agent approve, revise or stop",
            until=s.deadline,
            data={"revision": n, "until": s.deadline},
        )

    def take(self, answer: PlanAnswer) -> None:
        s = self.state
        self.ctx.record("plan_answer", action=answer.action, by=answer.by, approach=answer.approach)
        if answer.action == "approve" and s.rounds:
            last = s.rounds[-1]
            n = answer.approach or last.proposal.recommended
            s.approved = ApprovedApproach(
                number=n,
                approach=last.proposal.approaches[n - 1],
                recommended=last.proposal.recommended,
                approved_by=answer.by,
                revision=last.revision,
                estimate=last.estimates[n - 1],
            )
        elif answer.action == "revise":
            s.revise = answer
        elif answer.action == "stop":
            s.cancelled = f"stopped by @{answer.by} (/agent stop) while the plan awaited approval"
        else:
            s.cancelled = f"no answer to the plan within {self.contract.approval.wait_words()} (approval_timeout_days)"

    def plan(self) -> JobOutcome | None:
        """Make a plan (again, with the feedback of a revise); None once it is on the issue, else how the job ends."""
        s, snap = self.state, self.host.snapshot
        revision = len(s.rounds) + 1
        feedback, by = (s.revise.feedback, s.revise.by) if s.revise else ("", "")
        self.host.progress.current = "plan"
        self.host.progress.waiting = False
        self.host.post_progress()
        self.save()
        root = (
            self.host.kit.work_dir
            / "jobs"
            / (f"{snap.repo.replace('/', '--')}-{snap.number}-{self.ctx.job_id}-plan-{revision}")
        )
        shutil.rmtree(root, ignore_errors=True)
        token = self.ctx.github.token.get_secret_value()
        ws = opening.clone(snap.clone_url, root, branch=branch_name(snap.number, snap.title), token=token)
        try:
            result = plan_session(
                self.contract,
                ws,
                self.host.kit,
                repo=snap.repo,
                secrets=self.host.secrets(),
                trace_path=trace_file(root),
                reporter=PlanReporter(self.ctx),
                feedback=feedback,
                earlier=s.rounds[-1].proposal if s.rounds else None,
                revision=revision,
            )
        finally:
            ws.remove()  # nothing was changed; the trace stays beside the folder
        return self.keep(result, revision, feedback, by)

    def keep(self, result: PlanResult, revision: int, feedback: str, by: str) -> JobOutcome | None:
        s = self.state
        if result.proposal is None:
            reason = f"the planning phase ended without a proposal: {result.reason}"
            self.host.progress.run_url = ""
            self.host.progress.handoff = [
                reason,
                "",
                "Edit the issue if needed and label it again (or comment `/agent plan`) to plan again.",
            ]
            status = ENDS.get(result.outcome, "handed_off")
            self.host.finish_progress(status, reason)
            return JobOutcome(status=status, reason=reason)
        plan = PlanRound(
            revision=revision,
            proposal=result.proposal,
            estimates=result.estimates,
            feedback=feedback,
            feedback_by=by,
            cost=result.cost,
        )
        s.rounds.append(plan)
        s.revise = None
        s.deadline = self.clock() + self.contract.approval.timeout_days * DAY
        self.ctx.record(
            "plan",
            revision=revision,
            recommended=result.proposal.recommended,
            approaches=[a.title for a in result.proposal.approaches],
            estimates=[e.model_dump(mode="json") for e in result.estimates],
            cost=result.cost.model_dump(mode="json"),
        )
        self.save()
        return None

    def show(self) -> None:
        """The latest plan in the issue comment, waiting for an answer, approved, or cancelled."""
        s, progress = self.state, self.host.progress
        if not s.rounds:
            return
        last = s.rounds[-1]
        progress.plan = render_plan(
            PlanView(
                proposal=last.proposal,
                estimates=last.estimates,
                revision=last.revision,
                feedback=last.feedback,
                feedback_by=last.feedback_by,
                planning_usd=last.cost.usd,
                deadline=s.deadline,
                approved=s.approved,
            )
        )
        progress.current = "plan"
        progress.waiting = s.approved is None and not s.cancelled
        progress.cancelled = s.cancelled
        if s.cancelled or s.approved is None:
            progress.run_url = ""  # the loop has not run: its page would be empty
        self.host.post_progress()
        self.save()
