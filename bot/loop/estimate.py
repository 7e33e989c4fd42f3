"""What a run of one approach is expected to cost, worked out from measured figures (pure).

- **Steps.** A run calls `plan`, then about one model step per step of the approach, one per file it reads
  before changing it, one per test it adds, and `finish`: that is the low end. The high end allows one
  failed attempt per such step (twice the low end). Both are cut at the budget's `max_steps`.
- **Tokens per step.** Each step sends the stable layer (system prompt, contract, approved approach,
  conventions, repo map: its size is computed for the run, approach included) plus the volatile part
  (relevant code, results, limits): the planning phase's measured prompt tokens per call, less its own
  stable layer. Output per step is the planning phase's measured output per call.
- **Cost.** The stable layer is written to the prompt cache on the first step and read from it on
  every later one; the rest is ordinary input. Each end of the step range is priced with the price
  table (`bot/model/prices.json`) for the model the run will use, and cut at the budget's `max_cost_usd`.
"""

from __future__ import annotations

from bot.contract.approach import Approach, Estimate, Span
from bot.contract.models import Budget
from bot.model.base import Usage
from bot.model.prices import cost_usd

FIXED_STEPS = 2
"""`plan` and `finish`."""
RETRY_FACTOR = 2


def step_range(approach: Approach) -> tuple[int, int]:
    low = FIXED_STEPS + len(approach.steps) + len(approach.files) + len(approach.tests)
    return low, RETRY_FACTOR * low


def estimate(
    approach: Approach,
    *,
    model: str,
    budget: Budget,
    stable_tokens: int,
    planning_stable_tokens: int,
    planning: Usage,
    planning_calls: int,
    planning_usd: float | None,
) -> Estimate:
    """The estimate for a run of `approach` on `model`; `planning` is the planning phase's usage over its calls."""
    calls = max(planning_calls, 1)
    volatile = max(planning.prompt_tokens // calls - planning_stable_tokens, 0)
    output = planning.output_tokens // calls
    low, high = step_range(approach)
    capped = []
    if high > budget.max_steps:
        capped.append(f"steps: the budget stops a run at {budget.max_steps}")
    low, high = min(low, budget.max_steps), min(high, budget.max_steps)

    def usage(steps: int) -> Usage:
        return Usage(
            input_tokens=volatile * steps,
            output_tokens=output * steps,
            cache_write_tokens=stable_tokens,
            cache_read_tokens=stable_tokens * (steps - 1),
        )

    ends = usage(low), usage(high)
    costs = [cost_usd(model, u) for u in ends]
    usd: Span | None = None
    if costs[0] is not None and costs[1] is not None:
        if costs[1] > budget.max_cost_usd:
            capped.append(f"cost: the budget stops a run at ${budget.max_cost_usd:g}")
        usd = Span(low=min(costs[0], budget.max_cost_usd), high=min(costs[1], budget.max_cost_usd))
    return Estimate(
        model=model,
        steps=Span(low=low, high=high),
        input_tokens=Span(low=ends[0].prompt_tokens, high=ends[1].prompt_tokens),
        cached_tokens=Span(low=ends[0].cache_read_tokens, high=ends[1].cache_read_tokens),
        output_tokens=Span(low=ends[0].output_tokens, high=ends[1].output_tokens),
        usd=usd,
        capped=capped,
        basis={
            "stable_tokens": stable_tokens,
            "step_volatile_tokens": volatile,
            "step_output_tokens": output,
            "planning_calls": planning_calls,
            **({"planning_usd": round(planning_usd, 6)} if planning_usd is not None else {}),
        },
    )
