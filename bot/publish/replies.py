"""Replies in review threads after a review round: what was done about each comment, from the diff."""

from __future__ import annotations

from bot.loop.result import RunResult
from bot.markdown import code_span, inert_line
from bot.publish.render import OUTCOME_WORDS
from bot.snapshot import ReviewComment
from bot.workspace.models import DiffStats


def render_reply(comment: ReviewComment, result: RunResult, *, round_diff: DiffStats, pr_url: str = "") -> str:
    """Changed the commented file in this round → say so with the commit; else say why nothing changed there."""
    sha = code_span(result.head_sha[:7]) if result.head_sha else "the new commit"
    change = next((f for f in round_diff.files if comment.path and f.path == comment.path), None)
    checks = (
        "all contract checks pass"
        if result.accepted
        else f"the round ended {result.outcome.replace('_', ' ')}: {inert_line(result.reason)}"
    )
    if change is not None:
        text = f"Changed {code_span(change.path)} in {sha} (+{change.added} −{change.removed}); {checks}."
    elif round_diff.files:
        others = ", ".join(code_span(f.path) for f in round_diff.files)
        where = f"{code_span(comment.path)}" if comment.path else "the commented code"
        text = f"No change to {where} in this round (changed: {others} in {sha}); {checks}."
    else:
        text = f"No change made for this comment: {OUTCOME_WORDS[result.outcome]} {inert_line(result.reason)}"
    return text + (f"\n\nDetails and evidence: {pr_url}" if pr_url else "")
