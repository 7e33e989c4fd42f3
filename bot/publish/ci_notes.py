"""What ai-fix says about a CI round and a merge of the base branch, from recorded data only."""

from __future__ import annotations

from collections.abc import Sequence

from bot.checks.models import CheckRun
from bot.ci.models import CiNote, CiRound
from bot.loop.result import RunResult
from bot.markdown import code_span, inert_line
from bot.publish.check_table import status


def _names(names: Sequence[str]) -> str:
    return ", ".join(code_span(n) for n in names) or "none"


def answered(ci: CiRound, result: RunResult) -> CiRound:
    """The round's CI record with the mapped checks that failed in the sandbox on the failing head (the baseline)."""
    base = result.baseline
    failing = [n for n in ci.mapped if base is not None and (r := base.result(n)) is not None and r.status != "pass"]
    return ci.model_copy(update={"reproduced_by": failing})


def round_note(ci: CiRound, result: RunResult, n: int) -> CiNote:
    """The progress comment's line about a CI round: what it answered, whether the sandbox reproduced it, the end."""
    head = ci.head_sha[:7]
    if ci.reproduced_by:
        after = ", ".join(
            f"{code_span(c)} {status(result.final.result(c) if result.final else None)}" for c in ci.reproduced_by
        )
        how = f"reproduced in the sandbox by {_names(ci.reproduced_by)} (failing on {head}); after the change: {after}"
    elif ci.mapped:
        how = f"{_names(ci.mapped)} passed in the sandbox on {head}, so it was not reproduced: the project's CI on the pushed commit decides"
    else:
        how = "no contract check runs the failing command: the project's CI on the pushed commit decides"
    changed = result.head_sha and result.head_sha != result.base_sha
    end = f"it ended {result.outcome.replace('_', ' ')}" + (
        f" and pushed {result.head_sha[:7]}" if changed else ", nothing pushed"
    )
    return CiNote(
        kind="round", head_sha=ci.head_sha, text=f"round {n} (CI fix) answered {_names(ci.checks)}: {how}; {end}"
    )


def rebase_reply(
    base: str, base_sha: str, head_sha: str, resolved: Sequence[str], checks: CheckRun | None, summary: str
) -> str:
    """The pull request comment after a merge of the base branch was pushed."""
    lines = [f"Merged `{base}` ({base_sha[:7]}) into this branch: merge commit {head_sha[:7]}, no force-push."]
    if resolved:
        lines += ["", f"Resolved the conflicts in {_names(resolved)}."]
        if summary:
            lines += [
                "",
                f"How, in the model's words (not verified by ai-fix; the checks below are): {inert_line(summary)}",
            ]
    else:
        lines += ["", "Git merged it without conflicts."]
    lines += ["", *check_lines(checks)]
    return "\n".join(lines) + "\n"


def not_merged_reply(base: str, base_sha: str, why: str, checks: CheckRun | None) -> str:
    """The pull request comment when the merge could not be finished: nothing was pushed."""
    lines = [f"Could not merge `{base}` ({base_sha[:7]}) into this branch: {inert_line(why)}. Nothing was pushed."]
    if checks is not None:
        lines += ["", *check_lines(checks)]
    lines += ["", "Resolve the conflicts by hand, or comment `/agent rebase` to try again."]
    return "\n".join(lines) + "\n"


def draft_comment(why: str) -> str:
    """The pull request comment when it goes back to draft: a required check fails and ai-fix leaves it."""
    return (
        f"Back to draft: {inert_line(why)}.\n\nThe pull request is marked ready only while the project's required "
        "checks are green or pending. Fix it by hand, or comment `/agent retry` to hand the branch back.\n"
    )


def check_lines(checks: CheckRun | None) -> list[str]:
    """The contract's checks as run by ai-fix on the merge."""
    if checks is None or not checks.results:
        return ["No contract check is configured, so nothing was run on the merge."]
    rows = ["Contract checks on the merge, run by ai-fix in a sandbox:", "", "| check | result |", "|---|---|"]
    return rows + [f"| {code_span(r.name)} | {status(r)} |" for r in checks.results]
