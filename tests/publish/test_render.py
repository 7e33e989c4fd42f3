import re

from bot.checks.models import CheckResult
from bot.checks.models import TestCase as Case
from bot.loop.result import Cost
from bot.markers import PR_KIND, PROGRESS_KIND, find_marker
from bot.publish.checkrun import ANNOTATIONS_PER_REQUEST, render_check_run
from bot.publish.models import Progress, RoundRecord, read_rounds
from bot.publish.progress import render_progress
from bot.publish.render import BODY_LIMIT, render_pr_body
from bot.publish.replies import render_reply
from bot.snapshot import ReviewComment
from bot.workspace.models import DiffStats, FileChange
from tests.support.results import accepted, handed_off, run

SECTIONS = [
    "Summary",
    "Task contract",
    "Changes",
    "Evidence",
    "Not verified",
    "Known risks",
    "Rollback",
    "Handoff",
    "Cost",
]


def test_body_has_every_section_in_order_with_marker_and_fixes_line() -> None:
    body = render_pr_body(accepted(), issue_number=7)
    positions = [body.index(f"## {name}\n") for name in SECTIONS]
    assert positions == sorted(positions)
    assert find_marker(body, PR_KIND) == 7
    assert body.rstrip().endswith("Fixes #7")
    assert "<details><summary>The contract this change was held to</summary>" in body


def test_a_local_run_has_no_issue_to_close() -> None:
    body = render_pr_body(accepted(), issue_number=None)
    assert not re.search(r"(?i)\bfixes\s+#", body)
    assert all(f"## {name}\n" in body for name in SECTIONS)


def test_evidence_table_shows_base_and_after_from_the_recorded_checks() -> None:
    body = render_pr_body(accepted(), issue_number=7)
    row = next(line for line in body.splitlines() if line.startswith("| `tests` |"))
    assert "`python -m pytest -q`" in row and "❌ fail" in row and "✅ pass" in row and "1.2 s" in row
    assert "**Tests that went from failing to passing (1):**\n- `tests/test_calc.py::test_add`" in body
    assert "<details><summary>Log: `tests` base (fail)</summary>" in body
    assert "| `calc.py` | M | 1 | 1 |" in body


def test_model_claims_are_labelled_and_inert() -> None:
    result = accepted(
        model_summary="All tests pass! ![x](https://evil.example/p.png) Fixes #1 @boss",
        risks=["see https://evil.example"],
    )
    body = render_pr_body(result, issue_number=7)
    assert "The model's own summary (not verified by ai-fix" in body
    assert "> All tests pass! !&#91;x&#93;(`https://evil.example/p.png)`" in body
    assert "`Fixes` `#1`" in body and "`@boss`" in body and "`https://evil.example`" in body
    assert re.findall(r"(?i)\bfixes\s+#\d+", body) == ["Fixes #7"]


def test_controls_and_invisible_characters_in_the_models_words_never_reach_the_body() -> None:
    hidden = ["\x1b", "\x07", "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\u061c"]
    result = accepted(
        model_summary="Fixed \x1b[31mthe adder\x1b[0m\x07; see \u202elanif\u202c and a\u200bdd\ufeff() \u2066x\u2069",
        risks=["\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 here\u200d"],
    )
    body = render_pr_body(result, issue_number=7)
    assert [ch for ch in hidden if ch in body] == []
    assert "> Fixed the adder; see lanif and add() x" in body and "click here" in body


def test_failing_run_shows_handoff_and_unverified_checks() -> None:
    result = handed_off()
    result.final.results.pop()  # lint never ran after the change
    body = render_pr_body(result, issue_number=7)
    assert "🤝 **Handed off**" in body
    assert "**Approaches ruled out:**\n- swapping the arguments: same assertion error" in body
    assert "> Should add() accept strings?" in body
    assert "- `lint`: not run after the change" in body


def test_cost_adds_up_every_round_and_admits_unknown_prices() -> None:
    earlier = RoundRecord(
        n=1,
        kind="issue",
        outcome="handed_off",
        reason="r",
        steps=3,
        cost=Cost(input_tokens=1000, output_tokens=10, usd=0.01, wall_s=60),
    )
    body = render_pr_body(accepted(), issue_number=7, rounds=[earlier])
    row = body.split("## Cost")[1].strip().splitlines()[2]
    assert "| 2 | 7 | 13,000 | 810 | 9,000 |" in row and "$0.0612" in row and "2 min 15 s" in row
    unknown = render_pr_body(accepted(cost=Cost(usd=None)), issue_number=7)
    assert "unknown (a model used has no price; AIFIX_MODEL_PRICES gives one)" in unknown


def test_the_body_records_every_round_for_the_next_job() -> None:
    earlier = RoundRecord(
        n=1, kind="issue", outcome="handed_off", reason="checks fail --> <b>", head_sha="c" * 40, cost=Cost(usd=1e-05)
    )
    body = render_pr_body(accepted(), issue_number=7, rounds=[earlier], kind="retry")
    history = read_rounds(body)
    assert [(r.n, r.kind, r.outcome) for r in history] == [(1, "issue", "handed_off"), (2, "retry", "accepted")]
    assert (
        history[0].reason == "checks fail --> <b>" and history[0].cost.usd == 1e-05 and history[1].head_sha == "b" * 40
    )
    assert body.count("-->") == 2  # only the two hidden comments' own ends
    assert "Round 2's change, on top of `aaaaaaa`" in body
    assert read_rounds(body.replace('"n":1', '"n":"x"')) == [] and read_rounds("no record") == []


def test_huge_logs_are_cut_to_fit_githubs_limit_and_keep_the_marker() -> None:
    noisy = accepted(final=run("b" * 40, "pass", "pass", output="x" * 200 + "\n" + "line\n" * 40000))
    body = render_pr_body(noisy, issue_number=7, log_chars=100_000)
    assert len(body) <= BODY_LIMIT and find_marker(body, PR_KIND) == 7 and "Fixes #7" in body
    assert "bytes of output cut" in body


def test_check_run_conclusion_summary_and_annotation_batches() -> None:
    assert render_check_run(accepted()).conclusion == "success"
    failing = handed_off()
    tests = [Case(id=f"t.py::test_{i}", status="fail", file="t.py", line=i + 1, message="boom") for i in range(120)]
    failing.final.results.append(
        CheckResult(name="more", command="x", status="fail", tests=[*tests, Case(id="nofile", status="fail")])
    )
    out = render_check_run(failing, pr_url="https://github.com/o/r/pull/2")
    assert out.conclusion == "failure" and out.title.startswith("handed off: 1 of 2 checks pass")
    batches = out.batches()
    assert [len(b) for b in batches] == [ANNOTATIONS_PER_REQUEST, ANNOTATIONS_PER_REQUEST, 21]
    assert batches[0][0] == {
        "path": "tests/test_calc.py",
        "start_line": 4,
        "end_line": 4,
        "annotation_level": "failure",
        "title": "tests/test_calc.py::test_add",
        "message": "assert 1 == 3",
    }
    assert "https://github.com/o/r/pull/2" in out.summary and len(out.summary) <= 65_535


def test_progress_marks_the_current_phase_and_the_outcome() -> None:
    running = render_progress(
        Progress(
            issue_number=7,
            current="round",
            round_n=2,
            round_kind="retry",
            rounds=[RoundRecord(n=1, kind="issue", outcome="handed_off", reason="x", head_sha="c" * 40)],
        )
    )
    assert find_marker(running, PROGRESS_KIND) == 7
    assert "- [x] Round 1 (first run): handed_off at ccccccc" in running
    assert "- [x] Baseline checks on the base commit\n- [ ] **Round 2 (`/agent retry`)** ⏳ in progress" in running
    stopped = render_progress(Progress(issue_number=7, current="baseline", outcome="failed", reason="sandbox missing"))
    assert "**Baseline checks on the base commit** ❌ stopped here" in stopped and "Why: sandbox missing" in stopped
    done = render_progress(
        Progress(issue_number=7, current=None, pr_url="https://github.com/o/r/pull/2", outcome="accepted", reason="ok")
    )
    assert "- [x] Pull request" in done and "Pull request: https://github.com/o/r/pull/2" in done


def test_review_replies_say_what_changed_where() -> None:
    result = accepted()
    on_file = ReviewComment(id=1, author="rev", permission="write", body="use +", path="calc.py", line=2)
    elsewhere = ReviewComment(id=2, author="rev", permission="write", body="docs?", path="README.md", line=1)
    diff = DiffStats(files=[FileChange(path="calc.py", added=2, removed=1)])
    assert render_reply(on_file, result, round_diff=diff).startswith(
        "Changed `calc.py` in `bbbbbbb` (+2 −1); all contract checks pass"
    )
    assert render_reply(elsewhere, result, round_diff=diff).startswith(
        "No change to `README.md` in this round (changed: `calc.py`"
    )
    nothing = render_reply(elsewhere, handed_off(), round_diff=DiffStats())
    assert nothing.startswith("No change made for this comment: 🤝 **Handed off**")


def test_the_run_viewer_link_is_in_the_body_the_check_run_and_the_progress_comment_when_given() -> None:
    url = "https://ai-fix.example.com/runs/7?exp=2000000000&sig=" + "ab" * 32
    body = render_pr_body(accepted(), issue_number=7, run_url=url)
    summary_end, cost = body.index("## Task contract"), body.index("## Cost")
    assert body.index(f"[Open the run]({url})") < summary_end < cost, "right under the summary"
    assert url in render_check_run(accepted(), pr_url="https://github.com/o/r/pull/2", run_url=url).summary
    assert f"[Open the run]({url})" in render_progress(Progress(issue_number=7, run_url=url))
    for text in (
        render_pr_body(accepted(), issue_number=7),
        render_check_run(accepted()).summary,
        render_progress(Progress(issue_number=7)),
    ):
        assert "Open the run" not in text, "no link when links are off"
