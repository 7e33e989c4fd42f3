"""Skip and expected-failure markers a change adds, found in its diff (pure): reported by file, line and test."""

from __future__ import annotations

import re

from bot.evidence.models import AddedMarker

_MARKER = re.compile(
    r"@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail)\(|@unittest\.(?:skip\w*|expectedFailure)\b"
    r"|\bself\.skipTest\(|\b(?:it|test|describe)\.(?:skip|todo)\(|\bx(?:it|describe|test)\(|\bt\.Skip(?:f|Now)?\("
    r"|#\[ignore\]|@(?:Disabled|Ignore)\b"
)
_TEST_NAME = re.compile(r"\b(?:def|func|fn|function)\s+(\w+)|\b(?:it|test|describe)\s*\(\s*['\"]([^'\"]+)")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)")


def added_markers(diff: str) -> list[AddedMarker]:
    """Every added line of the diff carrying a skip/xfail marker, with the test it applies to when it can tell.

    A decorator (`@pytest.mark.skip`) belongs to the next test defined; a call in a body (`self.skipTest(`)
    to the last one. Only lines the diff shows are seen, so a test named outside the hunk stays unnamed.
    """
    found: list[AddedMarker] = []
    waiting: list[AddedMarker] = []
    file, line, last = "", 0, ""
    for text in diff.splitlines():
        if text.startswith("+++ "):
            file, waiting, last = text[4:].removeprefix("b/"), [], ""
            continue
        if m := _HUNK.match(text):
            line, waiting, last = int(m.group("start")), [], ""
            continue
        if text.startswith("-") or not file:
            continue
        code = text[1:]
        if name := _TEST_NAME.search(code):
            last = name.group(1) or name.group(2)
            for entry in waiting:
                entry.test = last
            waiting = []
        if text.startswith("+") and (marker := _MARKER.search(code)):
            decorator = code.lstrip().startswith("@")
            entry = AddedMarker(
                file=file, line=line, marker=marker.group(0).rstrip("("), test="" if decorator else last
            )
            found.append(entry)
            if decorator:
                waiting.append(entry)
        line += 1
    return found
