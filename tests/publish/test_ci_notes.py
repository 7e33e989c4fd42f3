"""What ai-fix says about CI and merges: the progress comment's section, the replies after a merge."""

from __future__ import annotations

from bot.checks.models import CheckResult, CheckRun
from bot.ci.models import CiNote, CiRecord, CiRound
from bot.markers import hidden_record, read_hidden_record, replace_hidden_record
from bot.publish.ci_notes import answered, not_merged_reply, rebase_reply, round_note
from bot.publish.progress import CI_SECTION, with_ci_section
from tests.support.results import accepted


def record(*texts: str) -> CiRecord:
    return CiRecord(notes=[CiNote(kind="rerun", head_sha=f"{i}" * 40, text=t) for i, t in enumerate(texts)])


def test_the_ci_section_closes_the_progress_comment_and_is_replaced_not_repeated() -> None:
    body = "<!-- ai-fix:progress issue=1 -->\n### ai-fix progress\n- round 1 done\n"
    once = with_ci_section(body, record("re-ran `CI`"))
    assert once.startswith(body.rstrip("\n")) and once.count(CI_SECTION) == 1
    assert "- `0000000` re-ran `CI`" in once
    twice = with_ci_section(once, record("re-ran `CI`", "![x](https://evil.example/p.png) flaky"))
    assert twice.count(CI_SECTION) == 1 and twice.count("re-ran `CI`") == 1
    assert "![x](" not in twice, "notes are made inert"
    assert with_ci_section(twice, CiRecord()) == body, "no notes: no section"


def test_a_hidden_record_is_replaced_in_place_or_added_after_the_marker() -> None:
    body = "<!-- ai-fix:pr issue=3 -->\n\nFixes #3"
    added = replace_hidden_record("ci", body, {"notes": []})
    assert added == f"<!-- ai-fix:pr issue=3 -->\n\n{hidden_record('ci', {'notes': []})}\n\nFixes #3"
    changed = replace_hidden_record("ci", added, {"notes": [1]})
    assert read_hidden_record("ci", changed) == {"notes": [1]} and changed.count("ai-fix:ci ") == 1


def test_the_merge_replies_name_the_files_and_the_checks() -> None:
    checks = CheckRun(commit="c" * 40, results=[CheckResult(name="tests", command="pytest", status="pass")])
    reply = rebase_reply("main", "a" * 40, "b" * 40, ["calc.py"], checks, "Kept both.")
    assert reply.startswith("Merged `main` (aaaaaaa) into this branch: merge commit bbbbbbb, no force-push.")
    assert "Resolved the conflicts in `calc.py`." in reply and "| `tests` | ✅ pass |" in reply
    refused = not_merged_reply("main", "a" * 40, "calc.py is not a text conflict", None)
    assert "Nothing was pushed." in refused and "`/agent rebase`" in refused


def test_a_mapped_check_failing_on_the_failing_head_is_the_rounds_evidence() -> None:
    ci = CiRound(head_sha="a" * 40, checks=["CI"], mapped=["tests", "lint"])
    result = accepted()  # its baseline (on the failing head): tests fail, lint passes
    reproduced = answered(ci, result)
    assert reproduced.reproduced_by == ["tests"], "lint passed in the sandbox: it did not reproduce the failure"
    note = round_note(reproduced, result, 2)
    assert note.kind == "round" and note.text.startswith("round 2 (CI fix) answered `CI`: reproduced in the sandbox")
    assert "after the change: `tests` ✅ pass" in note.text and "pushed bbbbbbb" in note.text


def test_without_a_mapped_check_the_projects_ci_decides() -> None:
    ci = CiRound(head_sha="a" * 40, checks=["CI"], mapped=[])
    note = round_note(answered(ci, accepted()), accepted(), 2)
    assert "no contract check runs the failing command: the project's CI on the pushed commit decides" in note.text
