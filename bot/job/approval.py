"""The approval stage of a GitHub job: plan, show the two approaches in the issue comment, wait without a worker,
and act on the maintainer's answer.

It runs between the contract and the loop when the contract asks for approval (`approval: plan`, the
`ai-fix:plan` label, `/agent plan`), for issue jobs only: later rounds start from a writer's explicit
feedback. Its state (`PlanningState`, in the round job's state) holds every plan made, a revision asked for and
not yet made, the deadline and the approval, so each wake-up (an answer, or the deadline) carries on from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.contract.approach import ApprovedApproach
from bot.contract.models import TaskContract
from bot.job.checkpoint import Checkpoint
from bot.job.history import HistoryReporter
from bot.job.progress_comment import ProgressComment
from bot.job.state import PlanningState, PlanRound, trace_file
from bot.job.tools import JobTools
from bot.loop.planning import PlanResult
from bot.loop.session import RunInput, plan_session
from bot.publish.plan import PlanView, render_plan
from bot.queue.models import PlanAnswer
from bot.queue.pipeline import JobOutcome
from bot.snapshot import Snapshot
from bot.vocabulary import AWAITING_APPROVAL, CANCELLED, plan_end_status
from bot.workspace.branch import branch_name

DAY = 86_400.0


def wants_plan(contract: TaskContract, snapshot: Snapshot) -> bool:
    return contract.approval.mode == "plan" and snapshot.kind == "issue"


class ApprovalStage:
    def __init__(
        self,
        contract: TaskContract,
        tools: JobTools,
        snapshot: Snapshot,
        comment: ProgressComment,
        checkpoint: Checkpoint,
        secrets: Callable[[], list[str]],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.contract, self.tools, self.snapshot, self.ctx, self.clock = (
            contract,
            tools,
            snapshot,
            checkpoint.ctx,
            clock,
        )
        self.comment, self.checkpoint, self.secrets = comment, checkpoint, secrets
        self.state = checkpoint.job.planning

    def save(self) -> None:
        self.checkpoint.save()

    def decide(self) -> ApprovedApproach | JobOutcome:
        """The approved approach to run, or how the job ends for now (waiting, cancelled, no plan)."""
        if (answer := self.ctx.take_answer()) is not None:
            self.ctx.record("plan_answer", action=answer.action, by=answer.by, approach=answer.approach)
            take_answer(self.state, answer, self.contract.approval.wait_words())
            self.save()
        s = self.state
        if s.approved is None and not s.cancelled and (not s.rounds or s.revise is not None):
            if (failed := self.plan()) is not None:
                return failed
        self.show()
        if s.approved is not None:
            return s.approved
        if s.cancelled:
            return JobOutcome(status=CANCELLED, reason=s.cancelled)
        n = s.rounds[-1].revision
        return JobOutcome(
            status=AWAITING_APPROVAL,
            reason=f"plan {n} posted; waiting for /agent approve, revise or stop",
            until=s.deadline,
            data={"revision": n, "until": s.deadline},
        )

    def plan(self) -> JobOutcome | None:
        """Make a plan (again, with the feedback of a revise); None once it is on the issue, else how the job ends."""
        s, snap = self.state, self.snapshot
        revision = len(s.rounds) + 1
        feedback, by = (s.revise.feedback, s.revise.by) if s.revise else ("", "")
        self.comment.progress.current = "plan"
        self.comment.progress.waiting = False
        self.comment.post()
        self.save()
        name = f"{snap.number}-{self.ctx.job_id}-plan-{revision}"
        ws = self.tools.checkout(self.ctx, snap, name, branch=branch_name(snap.number, snap.title))
        try:
            run = RunInput(
                self.contract,
                ws,
                repo=snap.repo,
                secrets=self.secrets(),
                trace_path=trace_file(ws.root),
                reporter=HistoryReporter(self.ctx, what="planning"),
            )
            result = plan_session(
                run,
                self.tools.kit,
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
            self.comment.progress.run_url = ""
            self.comment.progress.handoff = [
                reason,
                "",
                "Edit the issue if needed and label it again (or comment `/agent plan`) to plan again.",
            ]
            status = plan_end_status(result.outcome)
            self.comment.finish(status, reason)
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
        s, progress = self.state, self.comment.progress
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
        self.comment.post()
        self.save()


def take_answer(s: PlanningState, answer: PlanAnswer, wait_words: str) -> None:
    """What an answer to the plan does to the planning state (`expired`: nobody answered within `wait_words`)."""
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
        s.cancelled = f"no answer to the plan within {wait_words} (approval_timeout_days)"
