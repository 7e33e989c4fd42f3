"""The pure decisions of the delivery pipeline: when a PR may leave draft, what the next round is told."""

from bot.contract.models import Scope
from bot.job.rounds import ready_for_review, rounds_feedback
from bot.publish.models import RoundRecord
from bot.snapshot import ReviewComment, Snapshot
from bot.workspace.models import DiffStats, FileChange
from tests.support.results import accepted, handed_off, run


def test_ready_only_when_every_check_passed_and_the_diff_is_in_scope_and_limits() -> None:
    assert ready_for_review(accepted())
    assert not ready_for_review(handed_off())
    one_check_missing = accepted()
    one_check_missing.final.results.pop()  # lint never ran after the change
    assert not ready_for_review(one_check_missing)
    assert not ready_for_review(accepted(final=run("b" * 40, "fail", "fail")))
    result = accepted()
    result.contract.scope = Scope(allow=["src/**"])
    assert not ready_for_review(result), "calc.py is outside the allowed scope"
    too_big = accepted(diff=DiffStats(files=[FileChange(path="calc.py", added=300, removed=200)]))
    assert not ready_for_review(too_big), "over max_lines_changed"


def test_the_next_round_hears_about_earlier_rounds_and_the_code_review_comments_point_at() -> None:
    rounds = [
        RoundRecord(
            n=1,
            kind="issue",
            outcome="handed_off",
            reason="tests still fail",
            head_sha="c" * 40,
            files=1,
            added=2,
            removed=1,
        )
    ]
    hunk = "\n".join(f"line {i}" for i in range(10))
    snapshot = Snapshot(
        repo="o/r",
        number=7,
        kind="review",
        review_comments=[
            ReviewComment(
                id=1, author="rev", permission="write", body="rename", path="calc.py", line=9, diff_hunk=hunk
            ),
            ReviewComment(id=2, author="rev", permission="write", body="general remark"),
        ],
    )
    lines = rounds_feedback(rounds, snapshot)
    assert lines[0] == "Earlier round 1 (issue) ended handed_off: tests still fail (1 files, +2 -1, head ccccccc)"
    assert lines[1] == "Code the review comment on calc.py:9 points at:\n" + "\n".join(
        f"line {i}" for i in range(4, 10)
    )
    assert len(lines) == 2
