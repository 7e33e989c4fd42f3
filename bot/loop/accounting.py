"""Every model call goes through `ask`: timed, recorded in the step, its tokens and cost added to the run."""

from __future__ import annotations

from bot.errors import ModelError
from bot.loop.budget import check_limits, time_left
from bot.loop.harness import Harness
from bot.loop.records import ModelCall, RequestMeta, StepRecord
from bot.loop.result import Cost
from bot.loop.state import RunState
from bot.model.base import ModelRequest, ModelResponse


def ask(h: Harness, state: RunState, request: ModelRequest, record: StepRecord) -> ModelResponse:
    """One model call, given no more time than the wall-time budget has left; a call that fails because that
    ran out is a budget stop (HandedOff), not a failure of the run."""
    began = h.clock()
    try:
        response = h.model.complete(request.model_copy(update={"timeout_s": time_left(h, state)}))
    except ModelError:
        record.model_s += h.clock() - began
        check_limits(h, state)
        raise
    record.model_s += h.clock() - began
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
    if state.meter.add(response.usage, response.cost_usd):
        h.reporter.say(
            f"{response.model} has no price: its tokens are counted, its cost is unknown and the cost limit "
            f"(${h.contract.budget.max_cost_usd:g}) cannot apply; AIFIX_MODEL_PRICES gives it one"
        )
    if response.cost_usd is None:
        record.cost_usd = None
    elif record.cost_usd is not None:
        record.cost_usd += response.cost_usd
    what = "answered" if request.purpose == "step" else "compressed the history"
    h.reporter.say(f"step {state.meter.steps + 1}: {response.model} {what}; spend so far {state.meter.spend()}")
    return response


def run_cost(h: Harness, state: RunState) -> Cost:
    """What the run has used so far: tokens, dollars (None when a model is not in the price table), wall time."""
    u = state.meter.usage
    return Cost(
        model=h.config.model,
        small_model=h.config.small_model,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_read_tokens=u.cache_read_tokens,
        cache_write_tokens=u.cache_write_tokens,
        usd=round(state.meter.cost, 6) if state.meter.cost_known else None,
        wall_s=round(h.clock() - state.meter.started, 3),
    )
