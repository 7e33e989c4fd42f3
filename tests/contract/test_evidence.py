"""Reproducible evidence: what lets a request without stated criteria be verified."""

from __future__ import annotations

import pytest

from bot.contract.evidence import find_evidence

CASES = [
    ('Traceback (most recent call last):\n  File "a.py", line 1', ["traceback"]),
    ("    at parse (src/parse.js:10:5)", ["traceback"]),
    ("panic: runtime error: index out of range", ["traceback"]),
    ("thread 'main' panicked at src/main.rs:2:5", ["traceback"]),
    ("KeyError: 'name'", ["error message"]),
    ("error[E0308]: mismatched types", ["error message"]),
    ("the process ends with exit code 3", ["error message"]),
    ("FAILED tests/test_a.py::test_b - assert 1 == 2", ["failing command or test"]),
    ("2 failed, 10 passed", ["failing command or test"]),
    ("$ make check", ["failing command or test"]),
    ("I expected 3 but got 4.", ["expected against actual behaviour"]),
    ("Expected: a list. Actual: None.", ["expected against actual behaviour"]),
    ("```\nparse('')\n```", ["code sample"]),
    ("Please make the parser nicer.", []),
    ("It works as expected, thanks.", []),
    ("0 failed, 0 errors", []),
    ("```\n\n```", []),
]


@pytest.mark.parametrize(("text", "kinds"), CASES)
def test_find_evidence(text: str, kinds: list[str]) -> None:
    assert find_evidence(text) == kinds
