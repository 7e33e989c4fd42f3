"""Old failures and new ones (pure): what the base commit already failed is never held against a change.

A check that fails after the change fails only with old failures when every test failing in it failed on the base
commit too (for a runner that reports no single tests: the same failure signature as on the base commit). Such a
check does not block acceptance; its failures are listed, with both messages, as known risks. Any other failure
(a test that passed on the base commit or did not exist there, a timeout, a killed run, a flaky check) is new.
"""

from __future__ import annotations

import re

from bot.checks.models import CheckResult, CheckRun
from bot.evidence.models import OldFailure

FAILING = ("fail", "error")


def failing_tests(result: CheckResult) -> dict[str, str]:
    """Test id → its message, for the tests failing or erroring in a check's result."""
    return {t.id: t.message for t in result.tests if t.status in FAILING}


def only_old(after: CheckResult, base: CheckResult | None) -> bool:
    """True when a failing check fails with nothing the base commit did not fail with too."""
    if after.status not in FAILING or base is None or base.status not in FAILING:
        return False
    failing = failing_tests(after)
    if failing:
        return set(failing) <= set(failing_tests(base))
    return after.signature is not None and after.signature == base.signature


def new_failures(base: CheckRun | None, after: CheckRun) -> list[CheckResult]:
    """The checks that did not pass after the change for a reason the base commit did not show (not-run ones aside)."""
    return [
        r
        for r in after.results
        if r.status not in ("pass", "not_run") and not only_old(r, base.result(r.name) if base else None)
    ]


def old_failures(base: CheckRun | None, after: CheckRun) -> list[OldFailure]:
    """Every failure after the change that the base commit already had, with how it failed there and now."""
    found: list[OldFailure] = []
    for r in after.results:
        b = base.result(r.name) if base else None
        if b is None or r.status not in FAILING or b.status not in FAILING:
            continue
        before = failing_tests(b)
        if r.tests and failing_tests(r):
            found += [
                OldFailure(test=test, check=r.name, base=short(before[test]), after=short(message))
                for test, message in failing_tests(r).items()
                if test in before
            ]
        elif only_old(r, b):
            found.append(
                OldFailure(
                    test=r.name, check=r.name, base=short(b.summary or b.output), after=short(r.summary or r.output)
                )
            )
    return found


def short(message: str) -> str:
    """How a test failed, in one line: pytest's `E ` line with the exception, else the last line of the text."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    exception = next((e for e in errors if re.match(r"^[\w.]*(?:Error|Exception|Exit)\b", e)), None)
    return exception or (errors[0] if errors else lines[-1] if lines else "")
