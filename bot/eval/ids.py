"""Hidden test ids as the published datasets spell them, matched against the tests that ran (pure).

SWE-bench's FAIL_TO_PASS / PASS_TO_PASS lists were cut from test logs: an id is cut at its first space
(`test_get_assertion_exprs[assert` for a parameter holding spaces), a progress marker rides along
(`test_x [100%]`, or `[100%]` alone), and parameters may be spelled with or without pytest's escapes. An id
matches a test when, cleaned of that debris, it is the test's id, the end of it after `::`, its file, or, when it
was cut inside its brackets, the start of one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.checks.models import TestCase
from bot.vocabulary import SKIPPED, TestState

_PROGRESS = re.compile(r"\s*\[\s*\d{1,3}%\]\s*$")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")


def cleaned(published: str) -> str:
    """The id without a log's progress marker; "" when nothing but debris is left."""
    return _PROGRESS.sub("", published).strip()


def _norm(test_id: str) -> str:
    """One spelling for a parametrized id: pytest's `\\uXXXX` escapes decoded, runs of whitespace made one space."""
    decoded = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), test_id)
    return " ".join(decoded.split())


def _cut(wanted: str) -> bool:
    """An id cut inside its parameter's brackets (at the space the published lists split on)."""
    return wanted.count("[") > wanted.count("]")


def matches(published: str, tests: Sequence[TestCase]) -> list[TestCase]:
    """The tests a published id names (none for debris or an id that names nothing that ran)."""
    wanted = _norm(cleaned(published))
    if not wanted:
        return []
    found = [
        t for t in tests if (n := _norm(t.id)) == wanted or n.endswith(f"::{wanted}") or n.split("::", 1)[0] == wanted
    ]
    if found or not _cut(wanted):
        return found
    return [t for t in tests if (n := _norm(t.id)).startswith(wanted) or f"::{wanted}" in n]


def state(found: Sequence[TestCase]) -> TestState:
    """The worst status among the tests an id names (`not_run` when it names none)."""
    if not found:
        return "not_run"
    for status in ("error", "fail", SKIPPED):
        if any(t.status == status for t in found):
            return status
    return "pass"
