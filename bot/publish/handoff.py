"""The handoff: what was done, what is left, what was tried and ruled out, the question, and where the work is.

Rendered from recorded data only, and never naming a branch, a pull request or a section that does not exist.
"""

from __future__ import annotations

from bot.loop.result import RunResult
from bot.markdown import code_span, inert_line, inert_quote

MAX_TRIED = 30


def where_the_work_is(result: RunResult, *, pr_url: str = "") -> str:
    """One sentence saying where a person finds the work, from what exists."""
    h = result.handoff
    if result.head_sha and result.head_sha != result.base_sha:
        place = f"the pull request {pr_url}" if pr_url else f"branch {code_span(result.branch)}"
        return f"The work so far is on {place}."
    if h.attempts_ref:
        return (
            f"Nothing was kept on the branch (every attempt was rolled back); the attempts are on "
            f"{code_span(h.attempts_ref)} (a ref outside the branches, so no workflow runs on it): "
            f"`git fetch origin {h.attempts_ref}` and look at the commits of `FETCH_HEAD`."
        )
    return "Nothing was changed."


NEXT_ROUND_ON_PR = "Comment `/agent retry` on this PR (with guidance on the lines below it) to start another round."


def handoff_lines(result: RunResult, *, pr_url: str = "", next_round: str = NEXT_ROUND_ON_PR) -> list[str]:
    h = result.handoff
    lines = [where_the_work_is(result, pr_url=pr_url)]
    for title, items in (
        ("Done", h.done),
        ("Not done", h.not_done),
        ("Approaches ruled out", h.ruled_out),
        ("Next steps", h.next_steps),
    ):
        lines += ["", f"**{title}:**"] + ([f"- {inert_line(i)}" for i in items] or ["- (none recorded)"])
    if h.tried:
        shown = h.tried[-MAX_TRIED:]
        skipped = f" (the last {len(shown)} of {len(h.tried)})" if len(shown) < len(h.tried) else ""
        lines += ["", f"<details><summary>What each step tried{skipped}</summary>", ""]
        lines += [f"- {inert_line(t)}" for t in shown] + ["", "</details>"]
    if h.question:
        lines += ["", "**Question for you:**", "", inert_quote(h.question)]
    lines += ["", next_round]
    return lines
