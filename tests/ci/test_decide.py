"""What a `ci` job decides from GitHub's data: every rule of the issue, one case each."""

from __future__ import annotations

from bot.ci.decide import PullFacts, decide, refused_reruns
from bot.ci.models import CiRecord, FailedCheck, HeadCi, Rerun, WorkflowRun
from bot.contract.models import CiConfig
from bot.labels import NO_CI_FIX_LABEL

HEAD = "a" * 40
OTHER = "b" * 40


def pull(**fields: object) -> PullFacts:
    return PullFacts.model_validate({"number": 7, "head_sha": HEAD, "last_push": HEAD, "ci_rounds": 0, **fields})


def failing(attempt: int = 1, *, run_id: int | None = 11, required: bool = True) -> HeadCi:
    source = "workflow_run" if run_id else "check_run"
    check = FailedCheck(
        source=source, name="CI", conclusion="failure", run_id=run_id, attempt=attempt, required=required
    )
    runs = (
        [WorkflowRun(id=run_id, name="CI", status="completed", conclusion="failure", attempt=attempt)] if run_id else []
    )
    return HeadCi(head_sha=HEAD, failed=[check], runs=runs)


def test_a_first_failure_of_a_workflow_is_rerun_once_and_recorded() -> None:
    decision = decide(pull(), failing(), CiConfig(), CiRecord())
    assert decision.action == "rerun" and [c.run_id for c in decision.reruns] == [11]
    assert decision.record.reruns == [Rerun(run_id=11, name="CI", head_sha=HEAD)]
    assert [n.kind for n in decision.record.notes] == ["rerun"]


def test_a_second_failure_after_the_rerun_starts_a_round() -> None:
    record = CiRecord(reruns=[Rerun(run_id=11, name="CI", head_sha=HEAD)])
    decision = decide(pull(), failing(attempt=2), CiConfig(), record)
    assert decision.action == "round" and [f.name for f in decision.failed] == ["CI"]
    assert decision.record.reruns[0].outcome == "failed"


def test_a_pass_on_the_rerun_is_flaky_and_starts_nothing() -> None:
    record = CiRecord(reruns=[Rerun(run_id=11, name="CI", head_sha=HEAD)])
    ci = HeadCi(
        head_sha=HEAD,
        passed=["CI"],
        runs=[WorkflowRun(id=11, name="CI", status="completed", conclusion="success", attempt=2)],
    )
    decision = decide(pull(), ci, CiConfig(), record)
    assert decision.action == "note" and decision.record.reruns[0].outcome == "passed"
    assert [n.kind for n in decision.record.notes] == ["flaky"]
    again = decide(pull(), ci, CiConfig(), decision.record)
    assert again.action == "skip" and len(again.record.notes) == 1, "noted once"


def test_without_rerun_first_a_failure_starts_a_round_at_once() -> None:
    assert decide(pull(), failing(), CiConfig(rerun_first=False), CiRecord()).action == "round"


def test_a_check_run_that_is_not_a_workflow_is_not_rerun() -> None:
    assert decide(pull(), failing(run_id=None), CiConfig(), CiRecord()).action == "round"


def test_a_head_someone_else_pushed_gets_a_note_and_no_round() -> None:
    decision = decide(pull(last_push=OTHER), failing(), CiConfig(), CiRecord())
    assert decision.action == "note" and decision.reruns == []
    [note, _draft] = decision.record.notes
    assert note.kind == "foreign_push" and "someone else pushed" in note.text and OTHER[:7] in note.text


def test_the_round_limit_counts_recorded_rounds_and_puts_the_pr_back_to_draft() -> None:
    decision = decide(pull(ci_rounds=3, answered=["c" * 40]), failing(attempt=2), CiConfig(), CiRecord())
    assert decision.action == "note" and "ci.max_rounds (3) reached" in decision.draft
    assert "after 3 CI rounds (ci.max_rounds: 3)" in decision.record.notes[0].text
    assert [n.kind for n in decision.record.notes] == ["limit", "draft"]
    optional = decide(pull(ci_rounds=3), failing(attempt=2, required=False), CiConfig(), CiRecord())
    assert optional.draft == "", "a failing check the branch does not require keeps the PR ready"


def test_every_required_failure_ai_fix_leaves_puts_a_ready_pr_back_to_draft_once() -> None:
    """Not only at the round limit: a foreign push, ci.fix: false, the opt-out label, a head a round answered."""
    left = {
        "pushed by someone else": decide(pull(last_push=OTHER), failing(), CiConfig(), CiRecord()),
        "ci.fix: false": decide(pull(), failing(), CiConfig(fix=False), CiRecord()),
        NO_CI_FIX_LABEL: decide(pull(labels=[NO_CI_FIX_LABEL]), failing(), CiConfig(), CiRecord()),
        "already answered": decide(pull(answered=[HEAD]), failing(attempt=2), CiConfig(), CiRecord()),
    }
    for why, decision in left.items():
        assert decision.action == "note" and why in decision.draft, (why, decision)
        [draft] = [n for n in decision.record.notes if n.kind == "draft"]
        assert draft.head_sha == HEAD and draft.text.endswith("the pull request is back to draft"), why
    already = decide(pull(last_push=OTHER, draft=True), failing(), CiConfig(fix=False), CiRecord())
    assert already.draft == "" and already.action == "skip", "a draft PR stays as it is, nothing said"
    optional = decide(pull(last_push=OTHER), failing(required=False), CiConfig(), CiRecord())
    assert optional.draft == "", "an optional check failing keeps the PR ready"
    for started in (
        decide(pull(), failing(), CiConfig(), CiRecord()),
        decide(pull(), failing(2), CiConfig(), CiRecord()),
    ):
        assert started.action in ("rerun", "round") and started.draft == "", "a re-run or a round may still fix it"


def test_a_head_a_round_already_answered_is_left_alone() -> None:
    decision = decide(pull(answered=[HEAD], draft=True), failing(attempt=2), CiConfig(), CiRecord())
    assert decision.action == "skip" and decision.reruns == [] and decision.failed == []


def test_the_opt_outs() -> None:
    off = decide(pull(draft=True), failing(), CiConfig(fix=False), CiRecord())
    assert off.action == "skip" and "ci.fix: false" in off.reason and off.record == CiRecord(), "not even a re-run"
    label = decide(pull(labels=[NO_CI_FIX_LABEL.upper()], draft=True), failing(), CiConfig(), CiRecord())
    assert label.action == "skip" and NO_CI_FIX_LABEL in label.reason


def test_the_ci_result_of_a_round_that_could_not_reproduce_is_reported_once_it_is_known() -> None:
    pending = HeadCi(head_sha=HEAD, pending=["CI"])
    assert decide(pull(awaiting=HEAD), pending, CiConfig(), CiRecord()).action == "skip", "not known yet"
    green = HeadCi(head_sha=HEAD, passed=["CI", "lint"])
    decision = decide(pull(awaiting=HEAD), green, CiConfig(), CiRecord())
    assert decision.action == "note" and decision.record.reported == [HEAD]
    assert "pushed by the last CI round, passes (2 checks)" in decision.record.notes[0].text


def test_a_rerun_github_refuses_goes_on_to_a_round_or_the_limit_and_says_what_is_missing() -> None:
    first = decide(pull(), failing(), CiConfig(), CiRecord())
    assert first.action == "rerun"
    refused = refused_reruns(first.record, HEAD, {11: "answered 403 'Resource not accessible by integration'"})
    assert [r.outcome for r in refused.reruns] == ["refused"]
    [note] = refused.notes  # the "re-ran ... once" note is gone: nothing was re-run
    assert note.kind == "rerun_refused" and "`actions: write`" in note.text and "not accessible" in note.text
    again = decide(pull(), failing(), CiConfig(), refused)
    assert again.action == "round" and again.reruns == [], "refused: not asked again, a round instead"
    limit = decide(pull(ci_rounds=3), failing(), CiConfig(), refused)
    assert limit.action == "note" and [n.kind for n in limit.record.notes] == ["rerun_refused", "limit", "draft"]
