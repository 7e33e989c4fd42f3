"""Read the contract sections of an issue (or a comment): `## Goal`, `### Scope`, issue-form output.

Headings are `##` or `###`, any case, with an optional trailing colon; GitHub issue forms render
each field as `### Label` followed by the answer (`_No response_` when left empty). Headings inside
fenced code blocks are text. Sections the contract does not know stay part of the free text.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from bot.contract.sanitize import fence_closes, fence_opening

_HEADING = re.compile(r"^ {0,3}#{2,3}[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$")
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(?P<text>.*)$")
_NO_RESPONSE = "_No response_"

SECTION_NAMES: dict[str, str] = {
    "goal": "goal",
    "goals": "goal",
    "non goals": "non_goals",
    "nongoals": "non_goals",
    "non goal": "non_goals",
    "out of scope": "non_goals",
    "constraints": "constraints",
    "constraint": "constraints",
    "acceptance criteria": "acceptance_criteria",
    "acceptance criterion": "acceptance_criteria",
    "acceptance": "acceptance_criteria",
    "scope": "scope",
    "checks": "checks",
    "check": "checks",
    "budget": "budget",
    "kind": "kind",
    "type": "kind",
    "issue type": "kind",
    "task kind": "kind",
}
"""Normalised heading text → contract section."""

HEADINGS: dict[str, str] = {
    "goal": "Goal",
    "non_goals": "Non-goals",
    "constraints": "Constraints",
    "acceptance_criteria": "Acceptance criteria",
    "scope": "Scope",
    "checks": "Checks",
    "budget": "Budget",
    "kind": "Kind",
}
"""Contract section → the heading it is written under (for provenance and messages)."""


class IssueSections(BaseModel):
    """What one issue body or comment says, section by section (all text already sanitised)."""

    found: list[str] = Field(default_factory=list)
    """Contract sections present (even when empty), in order of appearance."""
    goal: str = ""
    non_goals: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    acceptance_criteria: list[str] = Field(default_factory=list)
    scope_allow: list[str] = Field(default_factory=list)
    scope_deny: list[str] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list)
    budget: dict[str, str] = Field(default_factory=dict)
    """Budget key → value as written; the caller validates and narrows."""
    kind: str = ""
    """What the `## Kind` section (or an issue form's Type field) says, as written: "Bug", "Feature request"..."""
    free_text: str = ""
    """Everything outside the contract sections (preamble and other headings), for goal and evidence."""


def _normalise_heading(title: str) -> str:
    title = re.sub(r"[*_`]", "", title).strip().rstrip(":").strip().lower()
    return re.sub(r"[\s_-]+", " ", title)


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(free text, [(section, body)]) — section is a key of HEADINGS; other headings stay in free text."""
    free: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    current: list[str] = free
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            if fence_closes(line, fence):
                fence = None
        elif (fence := fence_opening(line)) is None:
            h = _HEADING.match(line)
            if h:
                name = SECTION_NAMES.get(_normalise_heading(h.group("title")))
                if name is not None:
                    sections.append((name, []))
                    current = sections[-1][1]
                    continue
                current = free
        current.append(line)
    return "\n".join(free).strip(), [(name, "\n".join(lines).strip()) for name, lines in sections]


def list_items(body: str) -> list[str]:
    """Bullet or numbered items (checkboxes dropped); text outside bullets gives one item per paragraph.

    A line right after an item continues it (Markdown's lazy continuation); a blank line ends it.
    """
    items: list[str] = []
    open_item = False
    for line in ("" if body.strip() == _NO_RESPONSE else body).split("\n"):
        bullet = _BULLET.match(line)
        if bullet:
            items.append(bullet.group("text").strip())
            open_item = True
        elif not line.strip():
            open_item = False
        elif open_item and items:
            items[-1] = f"{items[-1]} {line.strip()}"
        else:
            items.append(line.strip())
            open_item = True
    return [i for i in items if i]


def first_token(item: str) -> str:
    """The glob or name an item names: its first `backticked` part, else its first word."""
    m = re.search(r"`([^`]+)`", item)
    token = m.group(1) if m else (item.split() or [""])[0]
    return token.strip().rstrip(",;")


def parse_sections(text: str) -> IssueSections:
    """The contract sections of sanitised Markdown (a body or a comment)."""
    free, sections = split_sections(text)
    out = IssueSections(free_text=free)
    for name, body in sections:
        if name not in out.found:
            out.found.append(name)
        items = list_items(body)
        if name == "goal":
            goal = "" if body.strip() == _NO_RESPONSE else body.strip()
            out.goal = f"{out.goal}\n\n{goal}".strip()
        elif name in ("non_goals", "constraints", "acceptance_criteria"):
            getattr(out, name).extend(items)
        elif name == "scope":
            for item in items:
                token = first_token(item)
                deny = item.startswith("!") or token.startswith("!")
                token = token.lstrip("!").strip()
                if token:
                    (out.scope_deny if deny else out.scope_allow).append(token)
        elif name == "checks":
            out.checks.extend(t for t in map(first_token, items) if t)
        elif name == "kind":
            out.kind = next(iter(items), "")
        else:
            for item in items:
                m = re.match(r"`?(\w+)`?\s*[:=]\s*`?([^`\s]+)`?", item)
                if m:
                    out.budget[m.group(1).lower()] = m.group(2)
    return out
