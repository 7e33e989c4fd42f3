"""Running some of a check's tests: the command that runs only the tests in given files.

The harness, not the model, picks what runs: for pytest and unittest checks ai-fix rewrites the
contract's own command (same interpreter, same options, the test files instead of the folders);
other runners declare `run_tests` with a `{tests}` placeholder. A command it cannot rewrite safely
(shell operators, an option it does not know taking a value) runs whole.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from typing import Literal

from bot.checks.unittest_output import unittest_top
from bot.contract.models import Check

Runner = Literal["pytest", "unittest", "declared", "other"]

_SHELL = re.compile(r"&&|\|\||[;|`<>]|\$\(")
_TEST_WORDS = re.compile(
    r"\b(tests?|pytest|unittest|jest|vitest|mocha|spec|tox|nox|rspec|ctest|phpunit)\b|\bgo\s+test\b|\bcargo\s+test\b"
)
# pytest options that take a separate value; any other option followed by a bare word makes the command unsafe to rewrite.
_PYTEST_VALUE_OPTIONS = frozenset(
    "-k -m -c -p -o -W -n -r --rootdir --confcutdir --basetemp --deselect --ignore --ignore-glob --tb --maxfail "
    "--durations --log-level --import-mode --cov --cov-report --cov-config --junitxml --junit-xml --timeout "
    "--config-file --override-ini --pyargs --capture --color --dist --numprocesses".split()
)


def runner(check: Check) -> Runner:
    if check.run_tests:
        return "declared"
    try:
        words = shlex.split(check.run)
    except ValueError:  # unbalanced quotes: the shell will say so when the check runs
        words = check.run.split()
    if any(w.endswith("pytest") or w == "py.test" for w in words):
        return "pytest"
    if "unittest" in words:
        return "unittest"
    return "other"


def runs_tests(check: Check) -> bool:
    """Whether the check runs tests (not a linter or type checker): only those can reproduce a report."""
    return runner(check) != "other" or bool(_TEST_WORDS.search(f"{check.name} {check.run}"))


def test_files_for(check: Check, files: Sequence[str]) -> list[str]:
    """The changed test files a check's runner can be given."""
    if runner(check) in ("pytest", "unittest"):
        return [f for f in files if f.endswith(".py")]
    return list(files)


def selected_command(check: Check, files: Sequence[str]) -> str | None:
    """The check's command narrowed to the tests in `files`, or None when only the whole check can run."""
    if not files:
        return None
    kind = runner(check)
    if kind == "declared" and check.run_tests:
        return check.run_tests.replace("{tests}", " ".join(shlex.quote(f) for f in files))
    if _SHELL.search(check.run):
        return None
    words = shlex.split(check.run)
    if kind == "pytest":
        return _pytest(words, files)
    if kind == "unittest":
        return _unittest(words, check.run, files)
    return None


def _pytest(words: list[str], files: Sequence[str]) -> str | None:
    at = next(i for i, w in enumerate(words) if w.endswith("pytest") or w == "py.test")
    kept = words[: at + 1]
    rest = iter(words[at + 1 :])
    for word in rest:
        if not word.startswith("-"):
            continue  # a folder or file to collect: replaced by the test files
        kept.append(word)
        if "=" in word or (not word.startswith("--") and len(word) > 2 and word[:2] in _PYTEST_VALUE_OPTIONS):
            continue  # `--opt=value`, or a short option with its value attached (`-kname`)
        if word in _PYTEST_VALUE_OPTIONS:
            value = next(rest, None)
            if value is None:
                return None
            kept.append(value)
        elif word.startswith("--") and word not in _PYTEST_FLAGS:
            return None  # an option we do not know: it might take the next word as its value
    return shlex.join([*kept, *files])


_PYTEST_FLAGS = frozenset(
    "--verbose --quiet --exitfirst --lf --last-failed --ff --failed-first --nf --new-first --sw --stepwise "
    "--strict-markers --strict-config --showlocals --disable-warnings --no-header --no-summary --runxfail "
    "--doctest-modules --continue-on-collection-errors --cache-clear".split()
)


def _unittest(words: list[str], command: str, files: Sequence[str]) -> str | None:
    at = next((i for i in range(len(words) - 1) if words[i] == "-m" and words[i + 1] == "unittest"), None)
    if at is None:
        return None
    prefix = words[: at + 2]
    top = unittest_top(command) if re.search(r"(?:^|\s)(?:-t|--top-level-directory)\b", command) else ""
    start = unittest_top(command)
    runs = []
    for f in files:
        folder = posixpath.dirname(f) or "."
        root = top or (start if start and (f + "/").startswith(start + "/") else ".")
        runs.append(
            shlex.join([*prefix, "discover", "-v", "-s", folder, "-t", root or ".", "-p", posixpath.basename(f)])
        )
    # One run per file; the per-test results come from their verbose output, so the exit status does not matter.
    return "; ".join(runs)
