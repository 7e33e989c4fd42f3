"""The contract's limits: checked before every model call, with a reserve for the final checks and the handoff.

What can take long inside a step (a model call, a run of checks) is also bounded by the wall time left, so a
step that would run past the limit is cut off there, not only noticed before the next model call.
"""

from __future__ import annotations

from bot.contract.models import Budget
from bot.loop.exits import HandedOff
from bot.loop.harness import Harness
from bot.loop.state import Meter, RunState


def limits_left(h: Harness, state: RunState) -> str:
    b, stats = h.contract.budget, state.change.stats()
    cost = f"${state.meter.cost:.2f}/${b.max_cost_usd:.2f}" if state.meter.cost_known else "unknown"
    return (
        f"steps {state.meter.steps}/{b.max_steps}, cost {cost}, wall {(h.clock() - state.meter.started) / 60:.1f}/{b.max_wall_minutes} min, "
        f"files {len(stats.files)}/{b.max_files_changed}, lines {stats.lines}/{b.max_lines_changed}"
    )


def spent_limit(meter: Meter, budget: Budget, now: float, reserve: float) -> str:
    """Which of the budget's step, cost and wall-time limits the meter has reached ("" when none): checked before
    every model call of every job, the loop's and a rebase's alike."""
    keep = 1 - reserve
    if meter.steps >= budget.max_steps:
        return f"the step limit ({budget.max_steps}) was reached"
    if meter.cost_known and meter.cost >= budget.max_cost_usd * keep:
        return (
            f"the cost limit (${budget.max_cost_usd:g}, {reserve:.0%} kept in reserve) was reached at ${meter.cost:.4f}"
        )
    if now - meter.started >= budget.max_wall_minutes * 60 * keep:
        return f"the wall-time limit ({budget.max_wall_minutes} min, {reserve:.0%} kept in reserve) was reached"
    return ""


def check_limits(h: Harness, state: RunState) -> None:
    """Raise HandedOff when a limit is reached; the reserve leaves room to commit, check and hand off."""
    b = h.contract.budget
    stats = state.change.stats()
    reason = spent_limit(state.meter, b, h.clock(), h.config.reserve)
    if not reason and (len(stats.files) > b.max_files_changed or stats.lines > b.max_lines_changed):
        reason = f"the change ({len(stats.files)} files, {stats.lines} lines) is over the budget's file or line limit"
    if reason:
        raise HandedOff(
            f"budget: {reason}",
            question="Continue from the work so far, or raise the budget in .github/ai-fix.yml and retry?",
        )


def time_left(h: Harness, state: RunState, *, ending: bool = False) -> float:
    """Seconds before the wall-time limit: the reserve is kept back for the ending, which may use it (`ending`)."""
    keep = 1 if ending else 1 - h.config.reserve
    return max(0.0, state.meter.started + h.contract.budget.max_wall_minutes * 60 * keep - h.clock())
