"""Reproducible evidence in an issue: what lets ai-fix verify a fix without a stated criterion.

Kinds: a traceback, an error message, a failing command or test, expected against actual
behaviour, a code sample. Pure functions over sanitised text.
"""

from __future__ import annotations

import re

TRACEBACK = "traceback"
ERROR_MESSAGE = "error message"
FAILING_COMMAND = "failing command or test"
EXPECTED_ACTUAL = "expected against actual behaviour"
CODE_SAMPLE = "code sample"

_FENCED = re.compile(r"^\s{0,3}(`{3,}|~{3,})[^\n]*\n(?P<code>.*?)^\s{0,3}\1[`~]*\s*$", re.S | re.M)
_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)"  # Python
    r"|^\s+at \S.*\(\S+:\d+(?::\d+)?\)\s*$"  # JavaScript / Java frames
    r"|^panic: |^goroutine \d+ \["  # Go
    r"|thread '[^']*' panicked at",  # Rust
    re.M,
)
_ERROR = re.compile(
    r"^\s*(?:\w+\.)*\w*(?:Error|Exception|Warning)\b(?::|\s*$)"  # ValueError: ..., raised exceptions
    r"|^\s*(?:error|fatal)(?:\[\w+\])?:\s"  # compilers, git
    r"|\b(?:segmentation fault|core dumped|exit (?:code|status) [1-9]\d*)",
    re.M | re.I,
)
_FAILING = re.compile(
    r"^\s*(?:FAILED|FAIL|ERROR)\b[ :]\S+"  # pytest, go test, jest summaries
    r"|\b[1-9]\d* (?:failed|failing|errors?)\b"
    r"|^\s*\$ \S+",  # a shell transcript: the command that shows it
    re.M,
)
_EXPECTED = re.compile(r"\bexpect(?:ed|s|ing)?\b", re.I)
_ACTUAL = re.compile(
    r"\b(?:actual(?:ly)?|instead|but (?:got|get|gets|it|returns?|was|is)|got|returns? \S+ rather)\b", re.I
)


def find_evidence(text: str) -> list[str]:
    """The kinds of reproducible evidence in sanitised text, in a fixed order, each at most once."""
    kinds: list[str] = []
    if _TRACEBACK.search(text):
        kinds.append(TRACEBACK)
    if _ERROR.search(text):
        kinds.append(ERROR_MESSAGE)
    if _FAILING.search(text):
        kinds.append(FAILING_COMMAND)
    if _EXPECTED.search(text) and _ACTUAL.search(text):
        kinds.append(EXPECTED_ACTUAL)
    if any(m.group("code").strip() for m in _FENCED.finditer(text)):
        kinds.append(CODE_SAMPLE)
    return kinds
