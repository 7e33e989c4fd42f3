"""The planning phase: before any change, the model reads (the editor's `view`, `search_code`) and proposes two
approaches through `propose`; the harness checks them against the scope and estimates what each would cost.

It is the loop's machinery with fewer tools: the same preflight (setup and the baseline, no other check),
prompt layers, model accounting and tool dispatch; nothing is edited and no branch is pushed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bot.checks.models import CheckRun
from bot.contract.approach import ApprovedApproach, Estimate, Proposal
from bot.errors import AiFixError
from bot.loop.accounting import ask, run_cost
from bot.loop.budget import check_limits
from bot.loop.estimate import estimate
from bot.loop.exits import HandedOff, NeedsClarification, RunEnded
from bot.loop.harness import Harness
from bot.loop.preflight import prepare
from bot.loop.prompt import (
    MAX_RESULT_CHARS,
    clip,
    failure_text,
    focus_layer,
    plan_tool_definitions,
    relevant_code,
    stable_layer,
)
from bot.loop.records import (
    PLAN_TOOL_INPUTS,
    ActionRecord,
    EditInput,
    Observation,
    ProposalRecord,
    ProposeInput,
    SearchInput,
    StepRecord,
)
from bot.loop.result import Cost
from bot.loop.state import RunState
from bot.loop.tools import NO_CALL, do_edit, do_search, observe, parse, rejected
from bot.model.base import ModelRequest, ToolCall, estimate_tokens
from bot.vocabulary import FAILED, HANDED_OFF, NEEDS_CLARIFICATION, PlanOutcome

PLAN_STEPS = 8
"""The most model calls the planning phase makes; the last one must `propose`."""
READ_ONLY = "the planning phase is read-only: only `view` and `search_code` run now; propose the change instead"


class PlanResult(BaseModel):
    outcome: PlanOutcome
    reason: str = ""
    """Why there is no proposal."""
    proposal: Proposal | None = None
    estimates: list[Estimate] = Field(default_factory=list)
    """One per approach, in order."""
    baseline: CheckRun | None = None
    steps: int = 0
    cost: Cost = Field(default_factory=Cost)


class Planner:
    def __init__(self, harness: Harness, *, feedback: str = "", earlier: Proposal | None = None, revision: int = 1):
        self.h = harness
        self.state = RunState.begin(harness)
        self.feedback, self.earlier, self.revision = feedback, earlier, revision
        self.max_steps = min(PLAN_STEPS, harness.contract.budget.max_steps)
        self.read: list[str] = []
        """Everything the model read so far, for the next request."""
        self.proposal: Proposal | None = None

    def run(self) -> PlanResult:
        h, state = self.h, self.state
        try:
            prepare(h, state, planning=True)
            while self.proposal is None:
                self.step()
            result = PlanResult(outcome="proposed", proposal=self.proposal, estimates=self.estimates(self.proposal))
        except RunEnded as end:
            unclear = isinstance(end, NeedsClarification)
            result = PlanResult(outcome=NEEDS_CLARIFICATION if unclear else HANDED_OFF, reason=end.reason)
        except AiFixError as exc:
            result = PlanResult(outcome=FAILED, reason=f"{type(exc).__name__}: {exc}")
        result.baseline, result.steps, result.cost = state.baseline, state.steps, run_cost(h, state)
        h.trace.append(
            ProposalRecord(
                revision=self.revision,
                feedback=self.feedback,
                proposal=result.proposal,
                estimates=result.estimates,
                reason=result.reason,
                steps=result.steps,
                cost=result.cost,
            )
        )
        h.reporter.say(f"planning: {result.outcome}" + (f" ({result.reason})" if result.reason else ""))
        return result

    def step(self) -> None:
        h, state = self.h, self.state
        if state.steps >= self.max_steps:
            raise HandedOff(f"the planning phase made {state.steps} model calls without a valid proposal")
        check_limits(h, state)
        began = h.clock()
        record = StepRecord(step=state.steps + 1)
        try:
            response = ask(h, state, self.request(record), record)
            state.steps += 1
            record.intent = response.text
            state.last_results = []
            if not response.tool_calls:
                observe(
                    state,
                    record,
                    ActionRecord(tool="", decision="malformed", observation=Observation(ok=False, text=NO_CALL)),
                )
            for call in response.tool_calls:
                self.act(call, record)
            self.read += state.last_results
        finally:
            record.duration_s = round(h.clock() - began, 4)
            h.trace.append(record)

    def act(self, call: ToolCall, record: StepRecord) -> None:
        h, state = self.h, self.state
        args = parse(call, PLAN_TOOL_INPUTS)
        if isinstance(args, str):
            return rejected(state, record, call, "malformed", args)
        if isinstance(args, EditInput) and args.command == "view":
            observation = do_edit(h, state, args, "")
        elif isinstance(args, SearchInput):
            observation = do_search(h, args)
        elif isinstance(args, ProposeInput):
            observation = self.propose(args)
        else:
            return rejected(state, record, call, "refused", READ_ONLY)
        decision: Literal["executed", "refused"] = "executed" if observation.ok else "refused"
        observe(
            state, record, ActionRecord(tool=call.name, input=call.input, decision=decision, observation=observation)
        )

    def propose(self, args: ProposeInput) -> Observation:
        """Accepted when every file of both approaches lies inside the scope (the gate's own check)."""
        refused = [
            f"approach {n}: {d.reason}"
            for n, approach in enumerate(args.approaches, 1)
            for d in map(self.state.gate.check_path, approach.files)
            if not d.allowed
        ]
        if refused:
            return Observation(ok=False, text="proposal refused, it leaves the scope: " + "; ".join(refused))
        self.proposal = Proposal.model_validate(args.model_dump())
        return Observation(ok=True, text="proposal recorded; a maintainer chooses one")

    def request(self, record: StepRecord) -> ModelRequest:
        h, state = self.h, self.state
        failure = failure_text(state.latest)
        focus = focus_layer(scope_note=state.scope_note, slices=relevant_code(h, state, failure, ""))
        baseline = "\n".join(f"{r.name}: {r.status}" for r in state.baseline.results) if state.baseline else ""
        parts = ["## Baseline on the base commit\n" + (baseline or "(no checks)") + ("\n" + failure if failure else "")]
        if self.earlier is not None:
            parts.append("## Your earlier proposal\n" + self.earlier.model_dump_json(indent=1))
        if self.feedback:
            parts.append("## A maintainer's feedback on it: propose again accordingly\n" + self.feedback)
        last = state.steps + 1 >= self.max_steps
        parts += [
            "## What you read so far\n" + (clip("\n\n".join(self.read), 2 * MAX_RESULT_CHARS) or "(nothing yet)"),
            f"## Limits left\nplanning calls {state.steps}/{self.max_steps}",
            "This is the last planning call: call `propose` now."
            if last
            else "Read what you need, then call `propose`.",
        ]
        volatile = "\n\n".join(parts)
        record.context_tokens = {"stable": estimate_tokens(state.stable), "volatile": estimate_tokens(focus + volatile)}
        return ModelRequest(
            model=h.config.model,
            system=state.stable,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": h.redact(focus), "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": h.redact(volatile)},
                    ],
                }
            ],
            tools=plan_tool_definitions(),
            tool_choice={"type": "tool", "name": "propose"} if last else {"type": "any"},
            max_tokens=h.config.max_tokens,
        )

    def estimates(self, proposal: Proposal) -> list[Estimate]:
        h, state = self.h, self.state
        repo_map = h.context.repo_map(h.config.repo_map_tokens)
        out = []
        for n, approach in enumerate(proposal.approaches, 1):
            approved = ApprovedApproach(number=n, approach=approach, recommended=proposal.recommended, approved_by="")
            stable = stable_layer(h.contract.model_copy(update={"approach": approved}), repo_map)
            out.append(
                estimate(
                    approach,
                    model=h.config.model,
                    budget=h.contract.budget,
                    stable_tokens=estimate_tokens(stable),
                    planning_stable_tokens=estimate_tokens(state.stable),
                    planning=state.usage,
                    planning_calls=state.steps,
                    planning_usd=state.cost if state.cost_known else None,
                )
            )
        return out
