"""The kind of each acceptance criterion, decided when the contract is built (pure; the phrasings are data).

The kind says what shows the criterion (`bot.vocabulary.CriterionKind`): a behaviour needs a test that fails on
the base commit and passes after the change; a regression ("the existing tests pass", "CI stays green") is shown by
the checks; a request about words, docs or names is for the reviewer. The phrasings live in
`templates/criterion_kinds.yml`, so another language or wording is a data change.
"""

from __future__ import annotations

import re
from functools import cache
from typing import get_args

import yaml

from bot.contract.templates import template
from bot.vocabulary import BEHAVIOUR, CriterionKind


@cache
def _groups() -> list[tuple[CriterionKind, re.Pattern[str]]]:
    """The phrasing groups in the order they are tried: the first that matches decides."""
    groups = yaml.safe_load(template("criterion_kinds.yml"))["groups"]
    kinds = get_args(CriterionKind)
    out: list[tuple[CriterionKind, re.Pattern[str]]] = []
    for group in groups:
        kind = group["kind"]
        if kind not in kinds:
            raise ValueError(f"criterion_kinds.yml: unknown kind {kind!r}; the kinds are {', '.join(kinds)}")
        out.append((kind, re.compile("|".join(f"(?:{p})" for p in group["patterns"]), re.I)))
    return out


def criterion_kind(text: str) -> CriterionKind:
    """What shows a criterion with these words (the data file's groups, in order); none matching is a behaviour,
    the kind that asks the most of the evidence."""
    words = " ".join(text.split())
    return next((kind for kind, pattern in _groups() if pattern.search(words)), BEHAVIOUR)
