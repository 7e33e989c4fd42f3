"""Hidden markers that let ai-fix recognise its own PR and progress comment from GitHub's data alone."""

from __future__ import annotations

import re

PR_KIND = "pr"
PROGRESS_KIND = "progress"

_MARKER = re.compile(r"<!-- ai-fix:(?P<kind>[a-z]+) issue=(?P<issue>\d+) -->")


def marker(kind: str, issue_number: int) -> str:
    """The hidden HTML comment that starts every body ai-fix owns."""
    return f"<!-- ai-fix:{kind} issue={issue_number} -->"


def find_marker(body: str | None, kind: str) -> int | None:
    """The issue number a body's marker of this kind names, or None when it carries none."""
    for m in _MARKER.finditer(body or ""):
        if m.group("kind") == kind:
            return int(m.group("issue"))
    return None
