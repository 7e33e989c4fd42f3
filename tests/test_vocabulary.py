"""The vocabulary is spelled once: no outcome or status word appears as a string anywhere in `bot/` but its module."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from bot import vocabulary
from bot.vocabulary import (
    COMMENT_PHASE_WORDS,
    COMMENT_PHASES,
    FINAL_STATUSES,
    JOB_STATUSES,
    KIND_WORDS,
    OUTCOMES,
    RUN_PHASE_WORDS,
    WORK_KINDS,
    CommentPhase,
    PlanOutcome,
    RunPhase,
    comment_phase,
    job_status,
    plan_end_status,
)

ROOT = Path(__file__).resolve().parents[1]
WORDS = frozenset(OUTCOMES) | frozenset(JOB_STATUSES)
QUOTED = re.compile("['\"](" + "|".join(sorted(WORDS)) + ")['\"]")
"""A status word quoted inside a longer string, as SQL spells it (`status = 'queued'`)."""


def spelled_words(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line: 'word'` for every string in the file that is a status word or quotes one."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = [node.value] if node.value in WORDS else QUOTED.findall(node.value)
            found += [f"{path.relative_to(root)}:{node.lineno}: {word!r}" for word in words]
    return found


def test_no_outcome_or_status_word_is_spelled_outside_the_vocabulary() -> None:
    found = [
        hit
        for path in sorted((ROOT / "bot").rglob("*.py"))
        if path != ROOT / "bot/vocabulary.py"
        for hit in spelled_words(path)
    ]
    assert found == [], "name these through bot.vocabulary's constants:\n" + "\n".join(found)


def test_the_scan_finds_a_spelled_word(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('X = "needs_clarification"\nQ = "UPDATE jobs SET status = \'queued\'"\nY = "neither"\n')
    assert spelled_words(sample, tmp_path) == ["sample.py:1: 'needs_clarification'", "sample.py:2: 'queued'"]


def test_every_status_word_has_its_constant() -> None:
    assert {word: getattr(vocabulary, word.upper()) for word in WORDS} == {word: word for word in WORDS}


def test_each_outcome_maps_to_a_final_status() -> None:
    assert {outcome: job_status(outcome) for outcome in OUTCOMES} == {
        "accepted": "done",
        "unverified": "unverified",
        "handed_off": "handed_off",
        "failed": "failed",
        "needs_clarification": "needs_clarification",
    }
    assert {job_status(outcome) for outcome in OUTCOMES} <= FINAL_STATUSES


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("failed", "failed"),
        ("needs_clarification", "needs_clarification"),
        ("handed_off", "handed_off"),
        ("proposed", "handed_off"),
    ],
)
def test_a_planning_phase_without_a_proposal_ends_the_job(outcome: PlanOutcome, status: str) -> None:
    assert plan_end_status(outcome) == status


def test_word_tables_cover_their_families() -> None:
    assert set(KIND_WORDS) == set(WORK_KINDS)
    assert set(RUN_PHASE_WORDS) == set(get_args(RunPhase))
    assert set(COMMENT_PHASE_WORDS) == set(COMMENT_PHASES) == set(get_args(CommentPhase))
    moves: dict[RunPhase, CommentPhase | None] = {phase: comment_phase(phase) for phase in get_args(RunPhase)}
    assert moves == {
        "setup": None,
        "baseline": "baseline",
        "steps": "round",
        "verifying": None,
        "final_checks": "checks",
    }


def test_families_are_derived_not_restated() -> None:
    assert set(JOB_STATUSES) == {"queued", "running", "awaiting_approval"} | FINAL_STATUSES
