"""The estimate's arithmetic, against the price table, the budget's caps, and an unpriced model."""

from __future__ import annotations

import pytest

from bot.contract.approach import Approach, EstimateCheck
from bot.contract.models import Budget
from bot.loop.estimate import estimate
from bot.model.base import Usage
from bot.model.prices import price_for

APPROACH = Approach(title="t", steps=["a", "b"], files=["x.py"], tests=["test_x"])  # 2 + 2 + 1 + 1 = 6 steps
# Two planning calls: 8,000 prompt tokens and 300 output tokens each, its own stable layer 2,500 tokens.
PLANNING = Usage(input_tokens=6000, cache_write_tokens=5000, cache_read_tokens=5000, output_tokens=600)


def made(model: str = "claude-sonnet-4-5", budget: Budget | None = None, stable: int = 3000):
    return estimate(
        APPROACH,
        model=model,
        budget=budget or Budget(),
        stable_tokens=stable,
        planning_stable_tokens=2500,
        planning=PLANNING,
        planning_calls=2,
        planning_usd=0.05,
    )


def test_steps_tokens_and_dollars_from_the_measured_planning_and_the_price_table() -> None:
    e = made()
    assert (e.steps.low, e.steps.high) == (6, 12)
    # Per step: 3,000 stable (written once, then read from the cache) + 8,000 - 2,500 volatile; 300 out.
    assert (e.input_tokens.low, e.input_tokens.high) == (6 * 8500, 12 * 8500)
    assert (e.cached_tokens.low, e.cached_tokens.high) == (5 * 3000, 11 * 3000)
    assert (e.output_tokens.low, e.output_tokens.high) == (1800, 3600)
    p = price_for("claude-sonnet-4-5")
    assert p is not None
    low = (6 * 5500 * p.input + 3000 * p.cache_write + 5 * 3000 * p.cache_read + 1800 * p.output) / 1e6
    assert e.usd is not None and e.usd.low == pytest.approx(low)
    assert e.capped == [] and e.basis == {
        "stable_tokens": 3000,
        "step_volatile_tokens": 5500,
        "step_output_tokens": 300,
        "planning_calls": 2,
        "planning_usd": 0.05,
    }


def test_the_budget_caps_steps_and_dollars_and_says_so() -> None:
    e = made(budget=Budget(max_steps=8, max_cost_usd=0.05))
    assert (e.steps.low, e.steps.high) == (6, 8)
    assert e.usd is not None and e.usd.high == 0.05
    assert e.capped == ["steps: the budget stops a run at 8", "cost: the budget stops a run at $0.05"]


def test_an_unpriced_model_has_no_dollar_figure() -> None:
    e = made(model="ollama:qwen3-coder:30b")
    assert e.usd is None and e.steps.low == 6 and e.input_tokens.low > 0


def test_the_check_against_the_actual_run() -> None:
    e = made()
    check = EstimateCheck.of(e, steps=7, prompt=60_000, cached=20_000, output=5000, usd=None)
    assert check.within == {"steps": True, "input_tokens": True, "output_tokens": False, "usd": False}
