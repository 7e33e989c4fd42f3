"""Issue sections: headings at two levels and any case, issue forms, bullets, scope denies."""

from __future__ import annotations

import pytest

from bot.contract.sections import parse_sections

FORM_OUTPUT = """### Goal

Return an empty list for empty files.

### Non-goals

_No response_

### Constraints

- keep the public API

### Acceptance criteria

- [x] `parse("")` returns `[]`
- [ ] a test covers it

### Scope

- `src/parser/**`
- `!src/parser/vendor/**`

### Checks

- tests
"""

CASES = [
    pytest.param(
        "## Goal\nMake it fast\n## Non-goals\n- no rewrite\n## Acceptance criteria\n1. p95 < 10 ms\n2) no new deps",
        {"goal": "Make it fast", "non_goals": ["no rewrite"], "acceptance_criteria": ["p95 < 10 ms", "no new deps"]},
        id="level-2 headings, numbered items",
    ),
    pytest.param(
        "### GOAL:\nx\n### non goals\n* a\n+ b\n### ACCEPTANCE CRITERIA\n- works",
        {"goal": "x", "non_goals": ["a", "b"], "acceptance_criteria": ["works"]},
        id="level-3, any case, colon, other bullet marks",
    ),
    pytest.param(
        FORM_OUTPUT,
        {
            "goal": "Return an empty list for empty files.",
            "non_goals": [],
            "constraints": ["keep the public API"],
            "acceptance_criteria": ['`parse("")` returns `[]`', "a test covers it"],
            "scope_allow": ["src/parser/**"],
            "scope_deny": ["src/parser/vendor/**"],
            "checks": ["tests"],
        },
        id="GitHub issue form output",
    ),
    pytest.param(
        "The parser crashes on empty input.\n\nPlease fix.",
        {"found": [], "goal": "", "free_text": "The parser crashes on empty input.\n\nPlease fix."},
        id="no sections: all free text",
    ),
    pytest.param(
        "Intro\n## Steps to reproduce\nrun it\n## Scope\n- src/** — the code\n- !docs/**\n- `tests/**`, mostly",
        {
            "free_text": "Intro\n## Steps to reproduce\nrun it",
            "scope_allow": ["src/**", "tests/**"],
            "scope_deny": ["docs/**"],
        },
        id="unknown headings stay free text; scope tokens",
    ),
    pytest.param(
        "```\n## Goal\nnot a heading\n```\n## Constraints\nFirst paragraph\nstill first.\n\nSecond one.",
        {"goal": "", "constraints": ["First paragraph still first.", "Second one."]},
        id="headings in code are text; paragraphs without bullets",
    ),
    pytest.param(
        "````md\n```\n## Goal\nstill code\n````\n## Goal\nreal",
        {"goal": "real"},
        id="a longer fence is only closed by a fence as long",
    ),
    pytest.param(
        "## Budget\n- max_steps: 10\n- `max_cost_usd` = 1.5",
        {"budget": {"max_steps": "10", "max_cost_usd": "1.5"}},
        id="budget items",
    ),
    pytest.param(
        "## Acceptance criteria\n- first line\n  continued here\n- second\nlazy continuation\n\nA closing paragraph.",
        {"acceptance_criteria": ["first line continued here", "second lazy continuation", "A closing paragraph."]},
        id="continuation lines and a paragraph after the bullets",
    ),
]


@pytest.mark.parametrize(("markdown", "expected"), CASES)
def test_parse_sections(markdown: str, expected: dict[str, object]) -> None:
    parsed = parse_sections(markdown)
    for field, value in expected.items():
        assert getattr(parsed, field) == value, field
