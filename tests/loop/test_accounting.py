"""The one accounted path for model calls outside the loop (a rebase's resolver): each call a step of the job's trace
with its cost, held to the contract's step, cost and wall-time limits before it is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.contract.models import Budget
from bot.loop.accounting import Account, BudgetReached
from bot.loop.records import Spent
from bot.loop.state import Meter
from bot.loop.trace import Trace
from bot.model.base import ModelRequest
from bot.model.scripted import ScriptedModel, turn

REQUEST = ModelRequest(model="claude-haiku-4-5", system="Resolve.", messages=[{"role": "user", "content": "hunks"}])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def account(tmp_path: Path, clock: Clock, budget: Budget, kept: list[Spent]) -> Account:
    return Account(
        meter=Meter.resumed(Spent(), clock()),
        budget=budget,
        trace=Trace(tmp_path / "job.trace.jsonl", ["sk-secret-value-123"]),
        clock=clock,
        say=lambda _line: None,
        keep_spent=kept.append,
    )


def test_each_call_is_a_step_of_the_trace_with_its_cost_and_what_was_spent_is_kept(tmp_path: Path) -> None:
    clock, kept = Clock(), []
    acct = account(tmp_path, clock, Budget(), kept)
    response = acct.call(ScriptedModel([turn("Resolved.")]), REQUEST.model_copy(update={"purpose": "resolve"}))
    [step] = [json.loads(line) for line in (tmp_path / "job.trace.jsonl").read_text().splitlines()]
    assert step["kind"] == "step" and step["step"] == 1 and step["intent"] == "Resolved."
    assert step["model_calls"][0]["request"]["purpose"] == "resolve"
    assert step["cost_usd"] == pytest.approx(response.cost_usd) and response.cost_usd
    assert kept[-1].steps == 1 and kept[-1].cost_usd == pytest.approx(response.cost_usd)


def test_no_call_is_made_past_the_wall_time_or_cost_limit(tmp_path: Path) -> None:
    clock = Clock()
    model = ScriptedModel([turn("one"), turn("two")])
    late = account(tmp_path / "late", clock, Budget(max_wall_minutes=1), [])
    clock.now += 61
    with pytest.raises(BudgetReached, match=r"budget: the wall-time limit \(1 min"):
        late.call(model, REQUEST)
    spent = account(tmp_path / "cost", clock, Budget(max_cost_usd=0.000001), [])
    spent.call(model, REQUEST)
    with pytest.raises(BudgetReached, match=r"budget: the cost limit \(\$1e-06"):
        spent.call(model, REQUEST)
    assert not (tmp_path / "late" / "job.trace.jsonl").exists(), "nothing was called, nothing recorded"


def test_no_job_code_calls_a_model_but_through_the_accounted_path() -> None:
    """The model router dispatches to providers; `ai-fix doctor` (checkup.py) sends the operator's key one 16-token
    request outside any job, so there is no job's meter, budget or trace to charge it to. Nothing else calls."""
    import ast

    root = Path(__file__).resolve().parents[2]
    callers = sorted(
        str(path.relative_to(root))
        for path in (root / "bot").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "complete"
    )
    assert callers == ["bot/commands/checkup.py", "bot/loop/accounting.py", "bot/model/providers.py"]
