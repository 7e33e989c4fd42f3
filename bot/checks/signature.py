"""Failure signatures: equal signatures mean "the same failure again", so the loop can tell it from progress."""

from __future__ import annotations

import hashlib
import re

from bot.checks.classify import tests_failed
from bot.checks.models import TestCase
from bot.checks.traceback import error_types, frames, in_project, normalize
from bot.vocabulary import CheckStatus

TAIL_LINES = 15
_NUMBERS = re.compile(r"\d+")


def signature_text(status: CheckStatus, tests: list[TestCase], output: str, *, workdir: str = "") -> str:
    """The readable form: status, failing test ids, error type, first project frame (no line numbers)."""
    failing = tests_failed(tests)
    text = "\n".join(t.message for t in failing) if failing else output
    text = normalize(text, workdir)
    parts = [f"status: {status}"]
    if failing:
        parts.append("tests: " + " ".join(sorted(t.id for t in failing)))
    found = frames(text, workdir)
    types = error_types(text)
    if types:
        parts.append(f"error: {types[0]}")
    first = next((f for f in found if in_project(f)), None)
    if first is not None:
        parts.append(f"frame: {first.path} in {first.func}")
    if not failing and first is None:
        # Lint and type checkers: the last lines, with the line and column numbers an edit shifts removed.
        tail = [line.strip() for line in text.splitlines() if line.strip()][-TAIL_LINES:]
        parts.append("tail: " + " | ".join(_NUMBERS.sub("#", line) for line in tail))
    return "\n".join(parts)


def failure_signature(status: CheckStatus, tests: list[TestCase], output: str, *, workdir: str = "") -> str:
    digest = hashlib.sha256(signature_text(status, tests, output, workdir=workdir).encode()).hexdigest()
    return f"{status}:{digest[:16]}"
