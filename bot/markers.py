"""Hidden markers that let ai-fix recognise its own PR and comments from GitHub's data alone.

A body ai-fix owns starts with `<!-- ai-fix:<kind> issue=N -->`; a PR body also carries hidden
records (its finished rounds) as JSON inside an HTML comment, escaped so that nothing in the JSON
can end the comment early.
"""

from __future__ import annotations

import json
import re
from typing import Any

PR_KIND = "pr"
PROGRESS_KIND = "progress"

_MARKER = re.compile(r"<!-- ai-fix:(?P<kind>[a-z]+) issue=(?P<issue>\d+) -->")
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


def hidden_record(name: str, data: Any) -> str:
    """`data` as JSON in a hidden comment `<!-- ai-fix:<name> ... -->` (no character in it can close the comment)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    text = _JSON_STRING.sub(lambda m: m.group(0).translate(_COMMENT_SAFE), text)
    return f"<!-- ai-fix:{name} {text} -->"


def _record(name: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- ai-fix:{re.escape(name)} (?P<json>[\[{{].*?[\]}}]) -->")


def read_hidden_record(name: str, body: str | None) -> Any:
    """The JSON a body's hidden record `name` holds; None when there is none or it does not parse."""
    m = _record(name).search(body or "")
    if m is None:
        return None
    try:
        return json.loads(m.group("json"))
    except ValueError:
        return None


def replace_hidden_record(name: str, body: str, data: Any) -> str:
    """`body` with its hidden record `name` holding `data`: replaced in place, else added after the first marker."""
    record = hidden_record(name, data)
    if _record(name).search(body):
        return _record(name).sub(lambda _m: record, body, count=1)
    first = _MARKER.search(body)
    if first is None:
        return f"{record}\n\n{body}"
    return f"{body[: first.end()]}\n\n{record}{body[first.end() :]}"


def is_login(user: Any, login: str) -> bool:
    """True when a GitHub user object is the account `login` (GitHub's logins compare without case)."""
    return isinstance(user, dict) and bool(login) and str(user.get("login") or "").casefold() == login.casefold()


def opened_by_ai_fix(item: dict[str, Any], bot_login: str) -> bool:
    """True for an issue or PR object that ai-fix opened: authored by this App's bot user, its body carrying our PR marker.

    Read from GitHub's own data (author and body), so it works without the local database. Another App's
    bot (renovate[bot]) may copy the marker, but only GitHub can author as `<our slug>[bot]`. `bot_login`
    is that login, read once from `GET /app`. For a pull request object, `own_pull` adds where its head lives.
    """
    user = item.get("user")
    return (
        isinstance(user, dict)
        and user.get("type") == "Bot"
        and is_login(user, bot_login)
        and find_marker(item.get("body"), PR_KIND) is not None
    )


def _full_name(side: Any) -> str:
    repo = side.get("repo") if isinstance(side, dict) else None
    return str(repo.get("full_name") or "") if isinstance(repo, dict) else ""


def head_in_base(pull: dict[str, Any]) -> bool:
    """True when a pull request's head branch lives in its base repository (not a fork, not a deleted one)."""
    head, base = _full_name(pull.get("head")), _full_name(pull.get("base"))
    return bool(head) and head.casefold() == base.casefold()


def own_pull(pull: dict[str, Any], bot_login: str) -> bool:
    """The one rule for "this pull request is ai-fix's": this App opened it and its head is in the base repository.

    Every look-up applies it (finding the issue's PR, retry, review, CI, rebase, scan): a stranger's PR whose
    branch is named `ai-fix/<n>-…` and whose body copies the marker is never adopted, and neither is one from a fork.
    """
    return opened_by_ai_fix(pull, bot_login) and head_in_base(pull)
