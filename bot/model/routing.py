"""Which model a task gets, and why: small mechanical tasks go to `model.small`, the rest to `model.name`."""

from __future__ import annotations

import re

from pydantic import BaseModel

from bot.contract.models import TaskContract
from bot.model.providers import DEFAULT_PROVIDER, parse_spec

MECHANICAL = re.compile(r"(?i)\b(typo|rename|spelling|bump|format(?:ting)?|lint|docstring|comment|wording|version)\b")
ANTHROPIC_SMALL = "claude-haiku-4-5"
"""The small model when none is set and the model is Anthropic's."""
SMALL_MAX_LINES = 60
"""A task whose budget allows no more changed lines than this counts as small."""


class ModelChoice(BaseModel):
    name: str
    """The model for the loop's steps."""
    small: str
    """The model for cheap work (history compression)."""
    reason: str


def _named_files(contract: TaskContract) -> list[str]:
    return [g for g in contract.scope.allow if not any(ch in g for ch in "*?[")]


def small_for(model: str, small: str | None) -> str:
    """The small model: the one set, else the same provider's (Anthropic's Haiku, or the model itself), so one
    vendor's key is always enough."""
    if small:
        return small
    return ANTHROPIC_SMALL if parse_spec(model).provider == DEFAULT_PROVIDER else model


def choose_model(
    contract: TaskContract, default: str, default_small: str | None, *, override: str | None = None
) -> ModelChoice:
    """Pure: `override` (`--model`) wins; else the contract's `model:` config over the defaults, and the task's
    size picks between the two. An unset small model follows the chosen model's provider."""
    name = contract.model.name or default
    small = small_for(override or name, contract.model.small or default_small)
    if override:
        return ModelChoice(name=override, small=small, reason=f"given on the command line: {override}")
    files = _named_files(contract)
    mechanical = MECHANICAL.search(f"{contract.title}\n{contract.goal}")
    if mechanical and files and len(files) <= 2 and len(contract.acceptance_criteria) <= 2:
        return ModelChoice(
            name=small,
            small=small,
            reason=f"small mechanical task ('{mechanical.group(0)}', scope {', '.join(files)}): {small}",
        )
    if contract.budget.max_lines_changed <= SMALL_MAX_LINES and mechanical:
        return ModelChoice(
            name=small,
            small=small,
            reason=f"small mechanical task ('{mechanical.group(0)}', at most {contract.budget.max_lines_changed} lines): {small}",
        )
    why = "no mechanical keyword" if not mechanical else "scope or criteria too broad for the small model"
    return ModelChoice(name=name, small=small, reason=f"general task ({why}): {name}")
