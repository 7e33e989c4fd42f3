"""From ai-fix's outcome and the hidden tests to a class, and from the classes to each variant's figures (pure).

- automatic: accepted, and every hidden test passes.
- incorrect: accepted, and some hidden test fails: ai-fix claimed a fix the hidden tests refute.
- partial: not accepted, and the branch passes every hidden test or some of FAIL_TO_PASS.
- refused: not accepted, and the branch passes none of FAIL_TO_PASS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean

from bot.eval.models import CLASSES, Class, HiddenResult, Rate, Summary, TaskRecord, Tokens
from bot.vocabulary import ACCEPTED, HANDED_OFF, NEEDS_CLARIFICATION, UNVERIFIED

TAKEOVER = (UNVERIFIED, HANDED_OFF, NEEDS_CLARIFICATION)
Z95 = 1.959964


def classify(outcome: str, hidden: HiddenResult) -> Class:
    if outcome == ACCEPTED:
        return "automatic" if hidden.resolved else "incorrect"
    return "partial" if hidden.resolved or hidden.some_fixed else "refused"


def wilson(k: int, n: int) -> Rate:
    """k of n, with the 95 % Wilson score interval (sound at 0 and n, unlike the normal approximation)."""
    if n == 0:
        return Rate(k=0, n=0, rate=None, low=None, high=None)
    p = k / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return Rate(k=k, n=n, rate=p, low=max(0.0, centre - half), high=min(1.0, centre + half))


def _mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


def summarize(variant: str, records: Sequence[TaskRecord]) -> Summary:
    """The figures of one variant; errored tasks are counted apart and enter no rate."""
    ran = [r for r in records if r.klass != "error"]
    n = len(ran)
    tokens = Tokens(
        input=round(_mean([r.tokens.input for r in ran]) or 0),
        output=round(_mean([r.tokens.output for r in ran]) or 0),
        cache_read=round(_mean([r.tokens.cache_read for r in ran]) or 0),
        cache_write=round(_mean([r.tokens.cache_write for r in ran]) or 0),
    )
    prompt = sum(r.tokens.prompt for r in ran)
    costs = [r.usd for r in ran]
    first = records[0] if records else None
    return Summary(
        variant=variant,
        model=first.model if first else "",
        config=first.config if first else "",
        tasks=n,
        errors=len(records) - n,
        classes={c: wilson(sum(r.klass == c for r in ran), n) for c in CLASSES},
        resolved=wilson(sum(bool(r.hidden and r.hidden.resolved) for r in ran), n),
        takeover=wilson(sum(r.outcome in TAKEOVER for r in ran), n),
        rollback=wilson(sum(r.rolled_back for r in ran), n),
        rounds=_mean([r.rounds for r in ran]),
        steps=_mean([r.steps for r in ran]),
        tokens=tokens,
        cached_share=sum(r.tokens.cache_read for r in ran) / prompt if prompt else None,
        usd_per_task=None if any(c is None for c in costs) else _mean([c for c in costs if c is not None]),
        wall_s_per_task=_mean([r.wall_s for r in ran]),
    )
