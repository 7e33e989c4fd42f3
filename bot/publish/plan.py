"""The plan as the issue comment shows it: two approaches side by side, the recommendation, the estimate of
each, and how to answer; and the line the PR body and check run give the approach a maintainer approved.

Everything the model wrote is passed through `inert_line` (a table cell, pipes escaped).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel

from bot.contract.approach import Approach, ApprovedApproach, Estimate, Proposal, Span
from bot.markdown import code_span, inert_line

METHOD = (
    "steps from the approach's size (plan and finish, one step per step of the approach, per file and per test "
    "it adds; twice that for retries), tokens per step from this planning phase's measured usage with the run's "
    "own stable context, priced for the run's model with the price table (the stable part read from the prompt "
    "cache after the first step); capped by the contract's budget"
)
"""How the estimate is worked out, in one sentence (docs/using.md, "Plan approval", says more)."""


class PlanView(BaseModel):
    """What the comment's plan section shows."""

    proposal: Proposal
    estimates: list[Estimate]
    revision: int = 1
    feedback: str = ""
    feedback_by: str = ""
    planning_usd: float | None = None
    deadline: float = 0.0
    """Epoch seconds: without an answer by then the job is cancelled."""
    approved: ApprovedApproach | None = None


def _cell(items: list[str], *, numbered: bool = False, code: bool = False) -> str:
    if not items:
        return "–"
    shown = [code_span(i).replace("|", "\\|") if code else inert_line(i) for i in items]
    return "<br>".join(f"{n}. {s}" for n, s in enumerate(shown, 1)) if numbered else "<br>".join(shown)


def _span(span: Span, unit: str = "") -> str:
    """`low-high` (one figure when they are equal); dollars to the cent, or to 1/100 cent below a dime."""
    places = 2 if span.low >= 0.1 else 4

    def one(value: float) -> str:
        if unit == "$":
            return f"${value:.{places}f}"
        return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:g}"

    low, high = one(span.low), one(span.high)
    return low if low == high else f"{low}–{high}"


def estimate_text(e: Estimate) -> str:
    """One estimate in a line: steps, tokens in (cached) and out, dollars."""
    usd = _span(e.usd, "$") if e.usd is not None else "cost unknown (the model is not in the price table)"
    text = (
        f"{_span(e.steps)} steps; {_span(e.input_tokens)} tokens in ({_span(e.cached_tokens)} from the cache), "
        f"{_span(e.output_tokens)} out; {usd}"
    )
    return text + "".join(f" ({inert_line(c)})" for c in e.capped)


def _rows(a: Approach) -> list[str]:
    return [
        _cell(a.steps, numbered=True),
        _cell(a.files, code=True),
        inert_line(a.impact) or "–",
        _cell(a.risks),
        inert_line(a.rollback) or "–",
        _cell(a.tests),
    ]


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def render_plan(view: PlanView) -> str:
    """The plan section of the issue comment."""
    p = view.proposal
    heads = [f"Approach {n}" + (" (recommended)" if n == p.recommended else "") for n in (1, 2)]
    labels = ["Steps", "Files it would change", "Impact", "Risks", "Rollback", "Tests it would add", "Estimate"]
    columns = [[inert_line(a.title), *_rows(a), estimate_text(e)] for a, e in zip(p.approaches, view.estimates)]
    lines = ["#### ai-fix: two ways to do it" + (f" (revision {view.revision})" if view.revision > 1 else ""), ""]
    if view.feedback:
        lines += [
            f"Planned again after feedback from {inert_line('@' + view.feedback_by)}: {inert_line(view.feedback)}",
            "",
        ]
    lines += [f"| | {heads[0]} | {heads[1]} |", "|---|---|---|"]
    lines += [f"| **Approach** | {columns[0][0]} | {columns[1][0]} |"]
    lines += [f"| **{label}** | {columns[0][i]} | {columns[1][i]} |" for i, label in enumerate(labels, 1)]
    lines += ["", f"**Recommended: approach {p.recommended}.** Why (the model's words): {inert_line(p.why)}", ""]
    spent = f"${view.planning_usd:.4f}" if view.planning_usd is not None else "unknown"
    lines += [f"<sub>Estimate: {METHOD}. This plan itself cost {spent}.</sub>", ""]
    if view.approved is not None:
        lines.append(f"**Approved**: {approach_words(view.approved)}.")
    elif view.deadline:
        lines += [
            "**Nothing is changed until someone with write access answers** (alone on a line):",
            "",
            f"- `/agent approve`: run approach {p.recommended}, the recommended one",
            f"- `/agent approve {3 - p.recommended}`: run approach {3 - p.recommended}",
            "- `/agent revise <what to change>`: plan again with your feedback (this comment is updated)",
            "- `/agent stop`: cancel",
            "",
            f"Without an answer by {_when(view.deadline)} the job is cancelled.",
        ]
    return "\n".join(lines) + "\n"


def approach_words(approved: ApprovedApproach) -> str:
    """ "approach 2 of the plan, *title*, approved by `@x` (the plan recommended approach 1)"."""
    recommended = (
        "the one the plan recommended"
        if approved.number == approved.recommended
        else f"the plan recommended approach {approved.recommended}"
    )
    return (
        f"approach {approved.number} of the plan, *{inert_line(approved.approach.title)}*, approved by "
        f"{inert_line('@' + approved.approved_by)} ({recommended})"
    )


def approach_line(approved: ApprovedApproach | None) -> list[str]:
    """The PR summary's and check run's line naming the approved approach; none without a plan."""
    return [f"- Approach: {approach_words(approved)}"] if approved is not None else []
