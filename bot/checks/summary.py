"""What the model is shown of a failed check: the failing tests, their assertions and the frames that matter."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from bot.checks.classify import tests_failed
from bot.checks.models import TestCase
from bot.checks.traceback import ANSI, Frame, error_types, frames, in_project, relative_paths
from bot.redact import redact
from bot.vocabulary import CheckStatus

MAX_TESTS = 10
MAX_ERROR_LINES = 12
MAX_DIAGNOSTICS = 30
TAIL_LINES = 40
LIMIT = 6000

_DIAGNOSTIC = re.compile(r"^\S+?\.\w+:\d+(?::\d+)?:? .+$", re.M)  # ruff, flake8, mypy, tsc, eslint-compact
_SUMMARY_LINE = re.compile(r"^(?:FAILED|ERROR) \S+.*$", re.M)


def summarize(
    status: CheckStatus,
    reason: str,
    output: str,
    tests: list[TestCase],
    *,
    workdir: str = "",
    changed_files: Collection[str] = (),
    secrets: Iterable[str] = (),
    limit: int = LIMIT,
) -> str:
    """A short, redacted account of a failure; "" for a pass."""
    if status == "pass":
        return ""
    output = ANSI.sub("", output)
    lines: list[str] = [f"{status}: {reason}"] if reason else [status]
    failing = tests_failed(tests)
    if failing:
        for test in failing[:MAX_TESTS]:
            lines.append(f"FAILED {test.id}")
            lines += ["  " + line for line in _digest(test.message, workdir, changed_files)]
        if len(failing) > MAX_TESTS:
            lines.append(f"... and {len(failing) - MAX_TESTS} more failing tests")
    else:
        digest = _digest(output, workdir, changed_files)
        lines += digest or _tail(relative_paths(output, workdir))
    text = fold_repeats("\n".join(lines))
    if len(text) > limit:
        text = text[:limit] + f"\n[... summary cut at {limit} characters ...]"
    return redact(text, secrets)


def _digest(text: str, workdir: str, changed_files: Collection[str]) -> list[str]:
    text = relative_paths(text, workdir)
    out = _SUMMARY_LINE.findall(text)[:MAX_TESTS]
    out += _error_lines(text)
    out += _DIAGNOSTIC.findall(text)[:MAX_DIAGNOSTICS] if not out else []
    found = frames(text, workdir)
    key = next((f for f in found if in_project(f)), None)
    if key is not None:
        out.append(f"first frame in the project: {_frame(key)}")
    changed = set(changed_files)
    seen: set[Frame] = {key} if key else set()
    for frame in found:
        if frame.path in changed and frame not in seen:
            seen.add(frame)
            out.append(f"frame in a changed file: {_frame(frame)}")
    return out


def _error_lines(text: str) -> list[str]:
    """pytest's `E` lines, else the exception lines of a plain traceback."""
    e_lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if e_lines:
        return e_lines[:MAX_ERROR_LINES]
    types = set(error_types(text))
    return [line.strip() for line in text.splitlines() if line.split(":", 1)[0].strip() in types][:MAX_ERROR_LINES]


def _frame(frame: Frame) -> str:
    return f"{frame.path}:{frame.line} in {frame.func}" if frame.func else f"{frame.path}:{frame.line}"


def _tail(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()][-TAIL_LINES:]


def fold_repeats(text: str) -> str:
    """Runs of identical lines become one line and a count."""
    out: list[str] = []
    count = 0
    for line in text.splitlines():
        if out and line == out[-1]:
            count += 1
            continue
        if count:
            out.append(f"[previous line repeated {count} more times]")
            count = 0
        out.append(line)
    if count:
        out.append(f"[previous line repeated {count} more times]")
    return "\n".join(out)
