"""`accepted` means shown fixed: `ai-fix run` on real repositories, the real bwrap sandbox, the fake Messages API.

The mul repository's tests pass on the base commit while the report (`mul(-2, 3)` returns 6) is true,
so only a test the change adds, run by the harness against the base code, can show the fix.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.model.scripted import call, turn
from tests.support.runs import (
    MUL_FIX,
    MUL_ISSUE,
    MUL_PLAN,
    MUL_TEST,
    LocalRun,
    mul_files,
    run_local,
)
from tests.support.sandbox import python_paths

PYTEST = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q tests"
CHECKS = call("run_checks", names=["tests"])


def mul_run(tmp_path: Path, script: list[Any], *, check: str | None = None, **files: str) -> LocalRun:
    settings = {"sandbox_ro_paths": python_paths()} if check == PYTEST else None
    repo_files = mul_files(check, **files) if check else mul_files(**files)
    return run_local(tmp_path, script, files=repo_files, issue=MUL_ISSUE, settings=settings)


def evidence(run: LocalRun) -> dict[str, Any]:
    return json.loads((run.out / "evidence.json").read_text())


def finishes(run: LocalRun) -> list[dict[str, Any]]:
    return [a for a in run.actions() if a["tool"] == "finish"]


def test_a_change_that_fixes_nothing_is_not_accepted(tmp_path: Path) -> None:
    touch = call(
        "str_replace_based_edit_tool", command="str_replace", path="calc.py",
        old_str="def double(a: int) -> int:", new_str="def double(a: int) -> int:  # twice a",
    )  # fmt: skip
    done = call("finish", summary="Done.")
    run = mul_run(tmp_path, [turn("p", MUL_PLAN), turn("edit", touch), turn("d", done), turn("d", done)])
    assert run.result.outcome == "unverified" and not run.result.accepted
    first = finishes(run)[0]
    assert first["decision"] == "refused"
    assert "criterion 1 (behaviour) '`mul(-2, 3)` returns -6' is not shown" in first["observation"]["text"]
    assert "add a test that fails on the base commit and passes after the change" in first["observation"]["text"]
    data = evidence(run)
    assert data["accepted"] is False and data["outcome"] == "unverified"
    assert data["reproduction"] == {"status": "missing", "tests": []}
    [stated] = [c for c in data["criteria"] if c["origin"] == "stated"]
    assert stated["text"] == "`mul(-2, 3)` returns -6" and stated["verified"] is False


def test_a_correct_fix_without_a_test_is_unverified_a_draft_with_the_work_on_the_branch(tmp_path: Path) -> None:
    done = call("finish", summary="Removed the sign flip.")
    run = mul_run(tmp_path, [turn("p", MUL_PLAN), turn("fix", MUL_FIX, CHECKS), turn("d", done), turn("d", done)])
    assert run.result.outcome == "unverified"
    shown = subprocess.run(
        ["git", "-C", str(run.repo), "show", f"{run.result.branch}:calc.py"], capture_output=True, text=True, check=True
    ).stdout
    assert "-a * b" not in shown, "the unverified work is kept on the branch"
    pr = (run.out / "pr.md").read_text()
    assert "🔍 **Unverified**" in pr and "`mul(-2, 3)` returns -6: no test reproduces the report" in pr
    assert "every contract check ran" not in pr.casefold()


def test_ai_fix_run_exits_1_for_an_unverified_run(tmp_path: Path) -> None:
    from bot.commands.main import main

    done = call("finish", summary="Removed the sign flip.")
    script = [turn("p", MUL_PLAN), turn("fix", MUL_FIX, CHECKS), turn("d", done), turn("d", done)]
    run = mul_run(tmp_path, script)
    assert run.result.outcome == "unverified"
    issue = tmp_path / "again.md"
    issue.write_text(MUL_ISSUE.replace("# mul(-2, 3) returns 6", "# mul(-2, 3) still returns 6"))
    replayed = main(
        ["run", "--repo", str(run.repo), "--issue", str(issue), "--model", f"replay:{run.out / 'trace.jsonl'}",
         "--sandbox", "bwrap", "--out", str(tmp_path / "again")]
    )  # fmt: skip
    assert replayed == 1
    assert json.loads((tmp_path / "again" / "evidence.json").read_text())["outcome"] == "unverified"


def test_a_test_that_passes_on_the_base_is_refused_as_not_reproducing(tmp_path: Path) -> None:
    weak = call(
        "str_replace_based_edit_tool", command="str_replace", path="tests/test_calc.py",
        old_str="    def test_double(self) -> None:",
        new_str="    def test_negative(self) -> None:\n        self.assertEqual(mul(2, -3), -6)\n\n    def test_double(self) -> None:",
    )  # fmt: skip
    done = call("finish", summary="Tested.")
    run = mul_run(
        tmp_path, [turn("p", MUL_PLAN), turn("test", weak, MUL_FIX, CHECKS), turn("d", done), turn("d", done)]
    )
    first = finishes(run)[0]
    assert first["decision"] == "refused" and "pass on the base commit too" in first["observation"]["text"]
    assert "tests/test_calc.py::MulTest::test_negative" in first["observation"]["text"]
    data = evidence(run)
    assert data["reproduction"]["status"] == "passes_on_base" and run.result.outcome == "unverified"
    negative = next(t for t in data["reproduction"]["tests"] if t["id"].endswith("test_negative"))
    assert (negative["base"], negative["after"], negative["laid_over"]) == ("pass", "pass", True)


@pytest.mark.parametrize("check", [None, PYTEST], ids=["unittest", "pytest"])
def test_a_fix_with_a_reproducing_test_is_accepted_with_the_reproduction_in_the_evidence(
    tmp_path: Path, check: str | None
) -> None:
    done = call("finish", summary="Fixed the sign; test_negative reproduces the report.")
    run = mul_run(tmp_path, [turn("p", MUL_PLAN), turn("fix", MUL_TEST, MUL_FIX, CHECKS), turn("d", done)], check=check)
    assert run.result.outcome == "accepted", run.result.reason
    data = evidence(run)
    assert data["reproduction"]["status"] == "verified"
    [test] = data["reproduction"]["tests"]
    assert test["id"] == "tests/test_calc.py::MulTest::test_negative"
    assert (test["base"], test["after"], test["laid_over"]) == ("fail", "pass", True)
    assert "6 != -6" in test["message"]
    [stated] = [c for c in data["criteria"] if c["origin"] == "stated"]
    assert stated["verified"] and stated["by"] == ["tests/test_calc.py::MulTest::test_negative"]
    pr = (run.out / "pr.md").read_text()
    assert (
        "| `tests/test_calc.py::MulTest::test_negative` | fail (the change's test file on the base code) | pass |" in pr
    )
    assert "AssertionError: 6 != -6" in pr and "✅ **Accepted**" in pr
    # the base code was put back: the branch holds the fix and the test
    calc = (run.repo / "calc.py").read_text()
    assert "-a * b" in calc, "the user's checkout is untouched"
    shown = subprocess.run(
        ["git", "-C", str(run.repo), "show", f"{run.result.branch}:calc.py"], capture_output=True, text=True, check=True
    ).stdout
    assert "-a * b" not in shown


def test_deleting_a_failing_test_is_not_accepted(tmp_path: Path) -> None:
    failing = "    def test_negative(self) -> None:\n        self.assertEqual(mul(-2, 3), -6)\n\n"
    tests = mul_files()["tests/test_calc.py"].replace("    def test_double", failing + "    def test_double")
    drop = call(
        "str_replace_based_edit_tool", command="str_replace", path="tests/test_calc.py", old_str=failing, new_str=""
    )
    done = call("finish", summary="Green.")
    script = [turn("p", MUL_PLAN), turn("drop", drop, CHECKS), turn("d", done), turn("d", done), turn("d", done)]
    run = mul_run(tmp_path, script, **{"tests/test_calc.py": tests})
    assert not run.result.accepted
    refusal = finishes(run)[0]["observation"]["text"]
    assert "tests/test_calc.py::MulTest::test_negative" in refusal and "no longer runs" in refusal
    data = evidence(run)
    assert data["regressions"][0]["test"] == "tests/test_calc.py::MulTest::test_negative"
    assert data["regressions"][0]["after"] == "missing"


def test_skipping_a_failing_test_is_not_accepted_and_the_marker_is_reported(tmp_path: Path) -> None:
    failing = "    def test_negative(self) -> None:\n        self.assertEqual(mul(-2, 3), -6)\n"
    tests = mul_files()["tests/test_calc.py"].replace("    def test_double", failing + "\n    def test_double")
    skip = call(
        "str_replace_based_edit_tool", command="str_replace", path="tests/test_calc.py",
        old_str="    def test_negative(self) -> None:",
        new_str='    @unittest.skip("later")\n    def test_negative(self) -> None:',
    )  # fmt: skip
    done = call("finish", summary="Green.")
    script = [turn("p", MUL_PLAN), turn("skip", skip, CHECKS), turn("d", done), turn("d", done), turn("d", done)]
    run = mul_run(tmp_path, script, **{"tests/test_calc.py": tests})
    assert not run.result.accepted
    data = evidence(run)
    assert [(r["test"], r["after"]) for r in data["regressions"]] == [
        ("tests/test_calc.py::MulTest::test_negative", "skipped")
    ]
    assert data["markers"] == [
        {"file": "tests/test_calc.py", "line": 10, "marker": "@unittest.skip", "test": "test_negative"}
    ]


def test_weakening_a_failing_test_until_it_passes_is_not_accepted(tmp_path: Path) -> None:
    failing = "    def test_negative(self) -> None:\n        self.assertEqual(mul(-2, 3), -6)\n"
    tests = mul_files()["tests/test_calc.py"].replace("    def test_double", failing + "\n    def test_double")
    weaken = call(
        "str_replace_based_edit_tool", command="str_replace", path="tests/test_calc.py",
        old_str="        self.assertEqual(mul(-2, 3), -6)", new_str="        self.assertEqual(mul(-2, 3), 6)",
    )  # fmt: skip
    done = call("finish", summary="Green.")
    script = [turn("p", MUL_PLAN), turn("w", weaken, CHECKS), turn("d", done), turn("d", done), turn("d", done)]
    run = mul_run(tmp_path, script, **{"tests/test_calc.py": tests})
    assert not run.result.accepted
    [regression] = evidence(run)["regressions"]
    assert regression["test"] == "tests/test_calc.py::MulTest::test_negative" and "made it pass" in regression["why"]


def test_the_same_call_three_times_in_a_row_hands_off_within_a_few_steps(tmp_path: Path) -> None:
    view = call("str_replace_based_edit_tool", command="view", path="calc.py")
    run = mul_run(tmp_path, [turn("p", MUL_PLAN), *[turn("look", view) for _ in range(12)]])
    assert run.result.outcome == "handed_off" and "no progress" in run.result.reason
    assert run.result.steps <= 8, "the no-progress rule stops it long before the 10-step budget"
    refused = [a for a in run.actions() if a["decision"] == "refused"]
    assert refused and "the same str_replace_based_edit_tool call 3 times in a row" in refused[0]["observation"]["text"]


def test_three_answers_without_a_tool_call_count_as_no_progress(tmp_path: Path) -> None:
    run = mul_run(tmp_path, [turn("p", MUL_PLAN), *[turn("I think the bug is in mul.") for _ in range(8)]])
    assert run.result.outcome == "handed_off" and "without a tool call" in run.result.reason
    assert run.result.steps <= 8
    tried = run.result.handoff.tried
    assert tried[1].startswith("step 2: an answer without a tool call: malformed")


def test_a_rolled_back_local_run_keeps_the_attempts_on_a_ref_and_says_so(tmp_path: Path) -> None:
    wrong = call(
        "str_replace_based_edit_tool", command="str_replace", path="tests/test_calc.py",
        old_str="        self.assertEqual(mul(2, 3), 6)", new_str="        self.assertEqual(mul(2, 3), 7)",
    )  # fmt: skip
    stuck = call("ask_human", question="Which sign is right?", reason="stuck")
    run = mul_run(tmp_path, [turn("p", MUL_PLAN), turn("w", wrong, CHECKS), turn("again", CHECKS), turn("?", stuck)])
    assert run.result.outcome == "handed_off" and run.result.head_sha == run.result.base_sha
    ref = run.result.handoff.attempts_ref
    assert ref == f"refs/ai-fix/attempts/{run.result.branch}"
    kept = subprocess.run(
        ["git", "-C", str(run.repo), "show", f"{ref}:tests/test_calc.py"], capture_output=True, text=True, check=True
    ).stdout
    assert "mul(2, 3), 7" in kept
    pr = (run.out / "pr.md").read_text()
    assert f"the attempts are on `{ref}`" in pr and "The work so far is on" not in pr


def test_a_feature_test_that_cannot_be_collected_on_the_base_counts_only_for_new_behaviour(tmp_path: Path) -> None:
    new_test = call(
        "str_replace_based_edit_tool", command="create", path="tests/test_square.py",
        file_text="import unittest\n\nfrom calc import square\n\n\nclass SquareTest(unittest.TestCase):\n"
        "    def test_square(self) -> None:\n        self.assertEqual(square(3), 9)\n",
    )  # fmt: skip
    add = call(
        "str_replace_based_edit_tool", command="str_replace", path="calc.py",
        old_str="def double(a: int) -> int:", new_str="def square(a: int) -> int:\n    return a * a\n\n\ndef double(a: int) -> int:",
    )  # fmt: skip
    done = call("finish", summary="Added square().")
    script = [turn("p", MUL_PLAN), turn("add", new_test, add, CHECKS), turn("d", done), turn("d", done)]
    feature = "# Add square()\n\n## Kind\nFeature\n\n## Acceptance criteria\n- `square(3)` returns 9\n"
    files = mul_files()
    ran = run_local(tmp_path / "feature", script, files=files, issue=feature)
    assert ran.result.contract.kind == "feature" and ran.result.outcome == "accepted", ran.result.reason
    data = evidence(ran)
    assert data["reproduction"]["status"] == "not_collected_on_base"
    assert "cannot import name 'square'" in data["reproduction"]["tests"][0]["message"]
    bug = "# square() is missing and crashes\n\n## Acceptance criteria\n- `square(3)` returns 9\n"
    ran = run_local(tmp_path / "bug", script, files=files, issue=bug)
    assert ran.result.contract.kind == "bug" and ran.result.outcome == "unverified"
    refusal = finishes(ran)[0]["observation"]["text"]
    assert "cannot even be collected on the base commit" in refusal and "for a bug report" in refusal


def test_with_no_check_at_all_a_run_ends_unverified_at_best(tmp_path: Path) -> None:
    files = {"notes/hello.txt": "helo\n"}
    issue = "# Typo in hello.txt\n\n## Acceptance criteria\n- hello.txt says `hello`\n"
    fix = call(
        "str_replace_based_edit_tool", command="str_replace", path="notes/hello.txt", old_str="helo", new_str="hello"
    )
    plan = call("plan", steps=[{"do": "fix the typo", "done_when": "the file says hello"}], impact=["notes/hello.txt"])
    run = run_local(
        tmp_path,
        [turn("p", plan), turn("fix", fix), turn("d", call("finish", summary="Fixed."))],
        files=files,
        issue=issue,
    )
    assert run.result.contract.checks == [] and any("`unverified` at best" in m for m in run.result.contract.missing)
    assert run.result.outcome == "unverified" and "no check could verify the change" in run.result.reason
