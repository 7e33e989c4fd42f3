"""What a round of a GitHub job starts from besides the contract, and when its pull request is ready for review."""

from __future__ import annotations

from pydantic import BaseModel

from bot.ci.models import CiRound
from bot.contract.globs import path_in_scope
from bot.loop.result import RunResult
from bot.publish.models import RoundRecord
from bot.snapshot import Snapshot


def ready_for_review(result: RunResult) -> bool:
    """Every contract check passed after the change (or failed only with what the base commit already failed with,
    as the evidence records) and the diff is inside scope and limits (recorded data only)."""
    contract, final = result.contract, result.final
    if not result.accepted or final is None or not contract.checks:
        return False
    old = {f.check for f in result.evidence.old_failures}
    if any((r := final.result(c.name)) is None or (r.status != "pass" and r.name not in old) for c in contract.checks):
        return False
    budget = contract.budget
    if len(result.diff.files) > budget.max_files_changed or result.diff.lines > budget.max_lines_changed:
        return False
    return all(path_in_scope(f.path, contract.scope) for f in result.diff.files)


def rounds_feedback(rounds: list[RoundRecord], snapshot: Snapshot) -> list[str]:
    """What the model is told about earlier rounds and where review comments point, besides the contract's feedback."""
    lines = [
        f"Earlier round {r.n} ({r.kind}) ended {r.outcome}: {r.reason} ({r.files} files, +{r.added} -{r.removed}"
        + (f", head {r.head_sha[:7]}" if r.head_sha else "")
        + ")"
        for r in rounds
    ]
    for rc in snapshot.review_comments:
        hunk = "\n".join(rc.diff_hunk.splitlines()[-6:])
        if rc.path and hunk:
            lines.append(f"Code the review comment on {rc.path}:{rc.line or '?'} points at:\n{hunk}")
    return lines


class RoundInput(BaseModel):
    """What a round the project's CI started brings besides the contract: the failure digest and what it answers."""

    feedback: list[str]
    ci: CiRound
