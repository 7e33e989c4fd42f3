"""The progress policy, pure: from the checks' results and what was good before, what the harness does next.

- keep: a check newly passes, or fails with fewer of its failing tests, and none got worse (and the model's
  expectation held): a checkpoint.
- continue: nothing failed, or a failure not yet seen `max_retries` times in a row.
- narrow: the same failure `max_retries` times: roll back to the last good checkpoint, narrow the scope.
- hand_off: the same again after narrowing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bot.checks.models import CheckResult, CheckRun
from bot.evidence.failures import FAILING, failing_tests
from bot.loop.records import Expectation
from bot.markdown import first_line

Verdict = Literal["keep", "continue", "narrow", "hand_off"]


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    key: str = ""
    """What makes this failure "the same" as an earlier one; empty when nothing failed."""
    attempt: int = 0
    """How many times in a row that failure has now been seen."""


def signature(run: CheckRun) -> str:
    """What makes two failures "the same": each failing check's normalised signature."""
    return " | ".join(sorted(f"{r.name}:{r.signature or r.status}" for r in run.failing()))


def expectation_met(expect: str, run: CheckRun) -> Expectation:
    """Judge "tests: test_add passes" / "lint fails" against what ran; unclear wording judges by overall pass."""
    lowered = expect.casefold()
    wants_fail = bool(re.search(r"\b(fail|fails|failing|error)\b", lowered)) and not re.search(
        r"\bno longer fail", lowered
    )
    named = [r for r in run.results if r.name.casefold() in lowered]
    tests = [t for r in run.results for t in r.tests if t.id.rsplit("::", 1)[-1].casefold() in lowered]
    if tests:
        passed = all(t.status == "pass" for t in tests)
        actual = ", ".join(f"{t.id} {t.status}" for t in tests)
    else:
        pool = named or run.results
        passed = all(r.status == "pass" for r in pool)
        actual = ", ".join(f"{r.name} {r.status}" for r in pool)
    return Expectation(expect=expect, met=passed != wants_fail, actual=actual)


def better(now: CheckResult, then: CheckResult | None) -> bool:
    """A check newly passes, or fails with fewer of the tests it failed with and no other."""
    if now.status == "pass":
        return then is None or then.status != "pass"
    if then is None or not (now.tests and then.tests) or now.status not in FAILING or then.status not in FAILING:
        return False
    return set(failing_tests(now)) < set(failing_tests(then))


def worse(now: CheckResult, then: CheckResult | None) -> bool:
    """A check that passed fails now, or fails with a test it did not fail with."""
    if now.status == "pass" or then is None:
        return False
    if then.status == "pass":
        return True
    return bool(now.tests and then.tests) and not set(failing_tests(now)) <= set(failing_tests(then))


def judge(
    run: CheckRun,
    expectation: Expectation | None,
    *,
    good: Mapping[str, CheckResult],
    failures: Mapping[str, int],
    max_retries: int,
    narrowed: bool,
) -> Judgement:
    wrong = expectation is not None and not expectation.met
    improved = any(better(r, good.get(r.name)) for r in run.results)
    regressed = [r.name for r in run.failing() if worse(r, good.get(r.name))]
    if improved and not regressed and not wrong:
        return Judgement("keep")
    if not run.failing() and not wrong:
        return Judgement("continue")
    key = signature(run) + (f" | expectation not met: {expectation.expect}" if wrong and expectation else "")
    attempt = failures.get(key, 0) + 1
    if attempt < max_retries:
        return Judgement("continue", key, attempt)
    return Judgement("hand_off" if narrowed else "narrow", key, attempt)


def failure_line(run: CheckRun) -> str:
    """The failure in one line: the first failing test and how it failed, else the check's own first words."""
    for r in run.failing():
        for t in r.tests:
            if t.status in ("fail", "error"):
                return f"{t.id}: {first_line(t.message) or t.status}"
        detail = [line.strip() for line in (r.summary or "").splitlines()[1:] if line.strip()]
        return f"{r.name} {r.status}: " + (detail[0] if detail else r.reason or first_line(r.output) or "no output")
    return ""
