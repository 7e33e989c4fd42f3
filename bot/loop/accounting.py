"""Every model call of every job goes through `charge`: given no more time than the budget has left, recorded in its
step of the trace, its tokens and cost added to the meter the job's budget and the daily cap are held to.

The loop's steps (`ask`), the history compression, the planning phase and a rebase's conflict resolver all call it;
no other code calls `Model.complete`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.contract.models import Budget
from bot.errors import AiFixError, ModelError
from bot.loop.budget import check_limits, spent_limit, time_left
from bot.loop.harness import Harness
from bot.loop.records import ModelCall, RequestMeta, Spent, StepRecord
from bot.loop.result import Cost
from bot.loop.state import Meter, RunState
from bot.loop.trace import Trace
from bot.model.base import Model, ModelRequest, ModelResponse


def charge(
    model: Model,
    request: ModelRequest,
    meter: Meter,
    record: StepRecord,
    *,
    timeout_s: float,
    budget: Budget,
    clock: Callable[[], float],
    say: Callable[[str], None],
) -> ModelResponse:
    """One model call, bounded by `timeout_s`, recorded in `record` and counted in `meter`."""
    began = clock()
    try:
        response = model.complete(request.model_copy(update={"timeout_s": timeout_s}))
    finally:
        record.model_s += clock() - began
    record.model_calls.append(
        ModelCall(
            request=RequestMeta(
                purpose=request.purpose,
                model=request.model,
                tool_choice=request.tool_choice,
                tools=[t["name"] for t in request.tools],
                chars=len(request.system) + sum(len(str(m["content"])) for m in request.messages),
            ),
            response=response,
        )
    )
    record.usage = record.usage + response.usage
    if meter.add(response.usage, response.cost_usd):
        say(
            f"{response.model} has no price: its tokens are counted, its cost is unknown and the cost limit "
            f"(${budget.max_cost_usd:g}) cannot apply; AIFIX_MODEL_PRICES gives it one"
        )
    if response.cost_usd is None:
        record.cost_usd = None
    elif record.cost_usd is not None:
        record.cost_usd += response.cost_usd
    return response


class BudgetReached(AiFixError):
    """A job outside the loop (a rebase's resolver) reached its budget's step, cost or wall-time limit."""


@dataclass
class Account:
    """What the model calls of a job outside the loop are held to and recorded in: the job's meter (its steps, tokens,
    cost and wall time, counted across attempts), the contract's budget, the job's trace and its clock."""

    meter: Meter
    budget: Budget
    trace: Trace
    clock: Callable[[], float]
    say: Callable[[str], None]
    keep_spent: Callable[[Spent], None]
    """Stores what was spent after every call, so a later attempt counts it."""

    def call(self, model: Model, request: ModelRequest) -> ModelResponse:
        """One model call as a step of the trace; BudgetReached, before the call, once a limit is reached."""
        now = self.clock()
        if reason := spent_limit(self.meter, self.budget, now, reserve=0.0):
            raise BudgetReached(f"budget: {reason}")
        record = StepRecord(step=self.meter.steps + 1)
        left = self.meter.started + self.budget.max_wall_minutes * 60 - now
        try:
            response = charge(
                model, request, self.meter, record, timeout_s=left, budget=self.budget, clock=self.clock, say=self.say
            )
            record.intent = response.text
        finally:
            self.meter.step_done()
            record.duration_s = round(self.clock() - now, 4)
            self.trace.append(record)
            self.keep_spent(self.meter.spent(self.clock()))
        self.say(f"step {record.step}: {response.model} answered; spend so far {self.meter.spend()}")
        return response


def ask(h: Harness, state: RunState, request: ModelRequest, record: StepRecord) -> ModelResponse:
    """A model call of the loop, given no more time than the wall-time budget has left; a call that fails because
    that ran out is a budget stop (HandedOff), not a failure of the run."""
    try:
        response = charge(
            h.model,
            request,
            state.meter,
            record,
            timeout_s=time_left(h, state),
            budget=h.contract.budget,
            clock=h.clock,
            say=h.reporter.say,
        )
    except ModelError:
        check_limits(h, state)
        raise
    what = "answered" if request.purpose == "step" else "compressed the history"
    h.reporter.say(f"step {state.meter.steps + 1}: {response.model} {what}; spend so far {state.meter.spend()}")
    return response


def metered_cost(meter: Meter, *, model: str, small_model: str, now: float) -> Cost:
    """What a meter has counted: tokens, dollars (None when a model is not in the price table), wall time."""
    u = meter.usage
    return Cost(
        model=model,
        small_model=small_model,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens,
        usd=round(meter.cost, 6) if meter.cost_known else None,
        wall_s=round(now - meter.started, 3),
    )


def run_cost(h: Harness, state: RunState) -> Cost:
    """What the run has used so far."""
    return metered_cost(state.meter, model=h.config.model, small_model=h.config.small_model, now=h.clock())
