"""Hidden markers that let ai-fix recognise its own PR and progress comment from GitHub's data alone.

The PR body also carries the record of its finished rounds, so a later `/agent retry` or review job
(possibly on another worker, after the database was lost) knows the PR's history from GitHub itself.
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from bot.delivery.models import RoundRecord

PR_KIND = "pr"
PROGRESS_KIND = "progress"

_MARKER = re.compile(r"<!-- ai-fix:(?P<kind>[a-z]+) issue=(?P<issue>\d+) -->")
_ROUNDS = re.compile(r"<!-- ai-fix:rounds (?P<json>\[.*?\]) -->")
# Characters that could end or confuse an HTML comment, escaped inside the JSON strings.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_COMMENT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "-": "\\u002d"})


def marker(kind: str, issue_number: int) -> str:
    """The hidden HTML comment that starts every body ai-fix owns."""
    return f"<!-- ai-fix:{kind} issue={issue_number} -->"


def find_marker(body: str | None, kind: str) -> int | None:
    """The issue number a body's marker of this kind names, or None when it carries none."""
    for m in _MARKER.finditer(body or ""):
        if m.group("kind") == kind:
            return int(m.group("issue"))
    return None


def rounds_record(rounds: list[RoundRecord]) -> str:
    """The finished rounds as a hidden comment (JSON with no character that could close the comment)."""
    data = json.dumps([r.model_dump(mode="json") for r in rounds], separators=(",", ":"), ensure_ascii=True)
    data = _JSON_STRING.sub(lambda m: m.group(0).translate(_COMMENT_SAFE), data)
    return f"<!-- ai-fix:rounds {data} -->"


def read_rounds(body: str | None) -> list[RoundRecord]:
    """The rounds a PR body records; an edited or damaged record counts as no history, never as an error."""
    m = _ROUNDS.search(body or "")
    if m is None:
        return []
    try:
        return [RoundRecord.model_validate(r) for r in json.loads(m.group("json"))]
    except (ValueError, ValidationError, TypeError):
        return []
