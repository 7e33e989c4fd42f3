"""The classes and the figures per variant (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.eval.classify import classify, summarize, wilson
from bot.eval.models import Class, HiddenResult, TaskRecord, Tokens
from bot.vocabulary import TestState


def hidden(f2p: list[TestState], p2p: list[TestState] | None = None) -> HiddenResult:
    return HiddenResult(
        fail_to_pass={f"f{i}": s for i, s in enumerate(f2p)},
        pass_to_pass={f"p{i}": s for i, s in enumerate(p2p or [])},
    )


@pytest.mark.parametrize(
    ("outcome", "result", "expected"),
    [
        ("accepted", hidden(["pass", "pass"], ["pass"]), "automatic"),
        ("accepted", hidden(["pass", "fail"], ["pass"]), "incorrect"),
        ("accepted", hidden(["pass"], ["fail"]), "incorrect"),
        ("accepted", hidden(["pass"], ["not_run"]), "incorrect"),
        ("unverified", hidden(["pass"], ["pass"]), "partial"),
        ("handed_off", hidden(["pass", "fail"]), "partial"),
        ("handed_off", hidden(["fail", "error"], ["pass"]), "refused"),
        ("needs_clarification", hidden(["not_run"]), "refused"),
        ("failed", HiddenResult(applied=False), "refused"),
    ],
)
def test_classes(outcome: str, result: HiddenResult, expected: str) -> None:
    assert classify(outcome, result) == expected


def test_wilson_interval() -> None:
    half = wilson(5, 10)
    assert (
        half.rate == 0.5
        and half.low == pytest.approx(0.2366, abs=1e-4)
        and half.high == pytest.approx(0.7634, abs=1e-4)
    )
    none = wilson(0, 6)
    assert none.low == 0.0 and none.high == pytest.approx(0.3903, abs=1e-4)
    every = wilson(6, 6)
    assert every.high == 1.0 and every.low == pytest.approx(0.6097, abs=1e-4)
    assert wilson(0, 0).rate is None


def record(klass: Class, outcome: str, **fields: Any) -> TaskRecord:
    return TaskRecord(instance_id="t", variant="v", model="m", config="default", klass=klass, outcome=outcome, **fields)


def test_summary_counts_errors_apart_and_sums_the_cache_share() -> None:
    figures = {"rounds": (2, 1), "steps": (5, 3), "usd": (0.02, 0.04), "wall_s": (10, 20), "rolled_back": (False, True)}
    incorrect, partial = ({k: v[i] for k, v in figures.items()} for i in (0, 1))
    records = [
        record(
            "incorrect",
            "accepted",
            hidden=hidden(["fail"]),
            tokens=Tokens(input=100, output=10, cache_read=300),
            **incorrect,
        ),
        record("partial", "unverified", hidden=hidden(["pass"]), tokens=Tokens(input=100, output=30), **partial),
        record("error", "", error="the index is down"),
    ]
    s = summarize("v", records)
    assert (s.tasks, s.errors) == (2, 1)
    assert s.classes["incorrect"].k == 1 and s.classes["automatic"].k == 0 and s.classes["partial"].n == 2
    assert s.resolved.k == 1 and s.takeover.k == 1 and s.rollback.k == 1
    assert (s.rounds, s.steps, s.usd_per_task, s.wall_s_per_task) == (1.5, 4.0, pytest.approx(0.03), 15.0)
    assert s.tokens.input == 100 and s.tokens.cache_read == 150 and s.cached_share == pytest.approx(0.6)


def test_an_unpriced_model_makes_the_cost_unknown() -> None:
    s = summarize("v", [record("refused", "failed", usd=None), record("refused", "failed", usd=0.1)])
    assert s.usd_per_task is None
