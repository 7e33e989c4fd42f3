"""Verified fixes through the GitHub path: a real `ai-fix serve`, the fake GitHub checked against its schemas,
the fake Messages API and bubblewrap (see tests/support/world.py for what is real)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from bot.labels import UNVERIFIED_LABEL
from bot.markers import PR_KIND, PROGRESS_KIND, find_marker
from bot.model.scripted import call, turn
from tests.support.runs import CHECK, FIX, PLAN
from tests.support.webhooks import REPO
from tests.support.world import SECRETS, World, start_world

TWO_CRITERIA = (
    "add() subtracts instead of adding",
    "## Acceptance criteria\n- `add(2, 3)` returns 5\n- `add(-1, 1)` returns 0\n\n## Checks\n- tests\n",
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        yield start_world(tmp_path_factory.mktemp("e2e-verified"), stack)


@pytest.fixture(autouse=True)
def nothing_leaks(world: World) -> Iterator[None]:
    yield
    world.assert_clean()


def comment_of(world: World, number: int) -> str:
    [comment] = world.github.bot_comments(REPO, number)
    assert find_marker(comment["body"], PROGRESS_KIND) == number
    return str(comment["body"])


def test_an_unverified_run_gives_a_draft_pr_with_the_label_and_a_neutral_check_run(world: World) -> None:
    finish = call("finish", summary="Fixed add().", risks=[])  # two criteria, and no test named for either
    world.script([turn("Plan.", PLAN), turn("Fix.", FIX, CHECK), turn("Done.", finish), turn("Done, really.", finish)])
    task = world.run("issues", world.labelled(41, *TWO_CRITERIA))
    assert task["status"] == "unverified", task
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 41]
    assert pr["draft"] is True and world.github.labels[(REPO, pr["number"])] == [UNVERIFIED_LABEL]
    assert "return a + b" in world.git("show", f"{pr['head']['ref']}:calc.py"), "the work is kept on the branch"
    head = world.git("rev-parse", pr["head"]["ref"]).strip()
    [run] = [r for r in world.github.check_runs if r["head_sha"] == head]
    assert run["conclusion"] == "neutral"
    body = pr["body"]
    assert "🔍 **Unverified**" in body and "Fixes #41" in body
    not_verified = body.split("## Not verified")[1].split("## Known risks")[0]
    assert "`add(2, 3)` returns 5" in not_verified and "`add(-1, 1)` returns 0" in not_verified
    assert "every contract check ran" not in body.casefold()
    comment = comment_of(world, 41)
    assert "🔍 **Unverified**" in comment and "**Not verified:**" in comment and "`add(-1, 1)` returns 0" in comment
    admin = {"Authorization": f"Bearer {SECRETS['AIFIX_ADMIN_TOKEN']}"}
    listed = world.client.get("/tasks", params={"status": "unverified"}, headers=admin).json()["tasks"]
    assert [t["number"] for t in listed] == [41]
    metrics = world.client.get("/metrics", headers=admin).text
    assert 'aifix_jobs{kind="issue",status="unverified"} 1' in metrics


def test_an_accepted_fix_with_its_own_reproducing_test_names_it_in_the_evidence(world: World) -> None:
    test = (
        "\n\nclass NegativeTest(unittest.TestCase):\n"
        "    def test_negative(self) -> None:\n"
        "        self.assertEqual(add(-1, 1), 0)\n"
    )
    add_test = call(
        "str_replace_based_edit_tool", command="str_replace", path="tests/test_calc.py",
        old_str='\n\nif __name__ == "__main__":', new_str=test + '\n\nif __name__ == "__main__":',
    )  # fmt: skip
    criteria = [
        {"criterion": "`add(2, 3)` returns 5", "test": "tests/test_calc.py::CalcTest::test_add"},
        {"criterion": "2", "test": "tests/test_calc.py::NegativeTest::test_negative"},
    ]
    world.script(
        [
            turn("Plan.", PLAN),
            turn("A test for the second criterion, then the fix.", add_test, FIX, CHECK),
            turn("Done.", call("finish", summary="Fixed add() and tested negative numbers.", criteria=criteria)),
        ]
    )
    task = world.run("issues", world.labelled(42, *TWO_CRITERIA))
    assert task["status"] == "done", task
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 42]
    assert pr["draft"] is False and world.github.labels.get((REPO, pr["number"]), []) == []
    evidence = pr["body"].split("## Evidence")[1].split("## Not verified")[0]
    row = re.search(
        r"\| `tests/test_calc\.py::NegativeTest::test_negative` \| (\w+) \((.*?)\) \| (\w+) \| (.*?) \|", evidence
    )
    assert row and row.groups()[0] == "fail" and row.groups()[2] == "pass", evidence
    assert "the change's test file on the base code" in row.group(2) and "AssertionError: -2 != 0" in row.group(4)
    assert (
        "✅ `add(-1, 1)` returns 0 _(stated · behaviour)_ — shown by `tests/test_calc.py::NegativeTest::test_negative`"
        in evidence
    )
    head = world.git("rev-parse", pr["head"]["ref"]).strip()
    assert [r["conclusion"] for r in world.github.check_runs if r["head_sha"] == head] == ["success"]


KEEP_PASSING = (
    "add() subtracts instead of adding",
    "## Acceptance criteria\n- `add(2, 3)` returns 5\n- The existing tests in `tests/test_calc.py` pass\n\n"
    "## Checks\n- tests\n",
)


def test_the_most_common_issue_shape_gives_a_pull_request_ready_for_review(world: World) -> None:
    criteria = [
        {"criterion": "1", "test": "tests/test_calc.py::CalcTest::test_add"},
        {"criterion": "2", "test": "tests"},
    ]
    finish = call("finish", summary="add() returns a + b.", risks=[], criteria=criteria)
    world.script([turn("Plan.", PLAN), turn("Fix.", FIX, CHECK), turn("Done.", finish)])
    task = world.run("issues", world.labelled(44, *KEEP_PASSING))
    assert task["status"] == "done", task
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 44]
    assert pr["draft"] is False and {"mutation": "markPullRequestReadyForReview", "number": pr["number"]} in (
        world.github.graphql_calls
    )
    evidence = pr["body"].split("## Evidence")[1].split("## Not verified")[0]
    assert "✅ The existing tests in `tests/test_calc.py` pass _(stated · regression)_ — shown by `tests`" in evidence


def test_a_correct_fix_without_a_test_then_a_stall_is_an_unverified_draft_with_the_fix_on_its_branch(
    world: World,
) -> None:
    """Two criteria, one with no test that shows it; `finish` is refused once, then the model answers without a
    tool call three times: the passing change is kept and published, never rolled back."""
    finish = call("finish", summary="Fixed add().", risks=[])
    silent = turn("I believe the work is complete.")
    world.script([turn("Plan and fix.", PLAN, FIX, CHECK), turn("Done.", finish), silent, silent, silent])
    task = world.run("issues", world.labelled(45, *TWO_CRITERIA))
    assert task["status"] == "unverified", task
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 45]
    assert pr["draft"] is True and world.github.labels[(REPO, pr["number"])] == [UNVERIFIED_LABEL]
    assert "return a + b" in world.git("show", f"{pr['head']['ref']}:calc.py"), "the fix is on the PR's branch"
    branch = pr["head"]["ref"]
    attempts = world.git(
        "for-each-ref", "--format=%(refname)", f"refs/ai-fix/attempts/{branch}", f"refs/heads/{branch}-*"
    )
    assert attempts.strip() == "", "no rolled-back attempt holds it"
    comment = comment_of(world, 45)
    assert "**Not verified:**" in comment and "`add(-1, 1)` returns 0" in comment


def test_a_rolled_back_run_hands_off_in_the_issue_comment_with_the_attempts_on_a_ref(world: World) -> None:
    wrong = call(
        "str_replace_based_edit_tool", command="str_replace", path="calc.py",
        old_str="    return a - b", new_str="    return a * b",
    )  # fmt: skip
    again = call("run_checks", names=["tests"])
    world.script(
        [
            turn("Plan.", PLAN),
            turn("Try multiplying.", wrong, again),
            turn("Check again.", again),  # the same failure twice: rolled back to the base, narrowed
            turn("Stuck.", call("ask_human", question="Is add() meant to multiply?", reason="both guesses fail")),
        ]
    )
    task = world.run("issues", world.labelled(43, *TWO_CRITERIA))
    assert task["status"] == "handed_off", task
    assert [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 43] == [], "nothing to push"
    comment = comment_of(world, 43)
    assert "#### Handoff" in comment and "Is add() meant to multiply?" in comment
    attempts = re.search(r"the attempts are on `(refs/ai-fix/attempts/[^`]+)` \(a ref outside the branches", comment)
    assert attempts, comment
    assert [b for b in world.git("for-each-ref", "--format=%(refname)", "refs/heads").split() if "attempt" in b] == []
    tried = comment.split("**Approaches ruled out:**")[1].split("**Next steps:**")[0]
    assert "str_replace calc.py" in tried and "(none recorded)" not in tried
    assert "What each step tried" in comment, comment
    assert "step 2: str_replace_based_edit_tool str_replace calc.py" in comment
    log = world.git("log", "--format=%s", attempts.group(1)).splitlines()
    assert log[0].startswith("ai-fix attempt (rolled back)") and log[1] == "initial commit"
    assert "return a * b" in world.git("show", f"{attempts.group(1)}:calc.py")
    assert "pull request" not in comment.split("#### Handoff")[1].casefold(), "no PR is claimed where none exists"
