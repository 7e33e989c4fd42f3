"""From a labelled issue to a reviewed pull request, end to end (see world.py for what is real)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from bot.commands.demo import sample
from bot.labels import HANDOFF_LABEL
from bot.markdown import is_github_url
from bot.markers import PR_KIND, PROGRESS_KIND, find_marker
from bot.model.scripted import call, turn
from bot.publish.models import read_rounds
from tests.support.markdown import render
from tests.support.runs import CHECK, FIX, SAMPLE_CRITERIA
from tests.support.webhooks import REPO, pr_comment, review_submitted
from tests.support.world import FIX_SCRIPT, SENDER, World, sees, start_world

ISSUE_TWO = (
    "total() must ignore None values",
    "## Goal\n`total([1, None, 2])` returns 3 instead of raising.\n\n## Acceptance criteria\n- `total([1, None, 2])` returns 3\n\n## Checks\n- tests\n",
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        yield start_world(tmp_path_factory.mktemp("e2e"), stack)


@pytest.fixture(autouse=True)
def nothing_leaks(world: World) -> Iterator[None]:
    yield
    world.assert_clean()


def test_label_to_ready_pr_then_retry_then_review(world: World) -> None:
    title, _, body = sample()[1].partition("\n")
    world.script(FIX_SCRIPT)
    payload = world.labelled(1, title.removeprefix("# ").strip(), body.strip())
    first = world.send("issues", payload, delivery="delivery-label-1")
    world.send("issues", payload, delivery="delivery-label-1")  # GitHub's redelivery: same id
    task = world.wait(first.json()["job_id"])
    assert task["status"] == "done", task
    assert [t["id"] for t in world.tasks() if t["number"] == 1] == [task["id"]], "one job for one delivery"

    [pr] = world.github.pulls_of(REPO)
    branch = pr["head"]["ref"]
    assert branch.startswith("ai-fix/1-") and pr["title"] == "ai-fix: add() subtracts instead of adding"
    assert pr["draft"] is False and world.github.graphql_calls == [
        {"mutation": "markPullRequestReadyForReview", "number": pr["number"]}
    ]
    assert [u["login"] for u in pr["requested_reviewers"]] == [SENDER]
    body = pr["body"]
    assert find_marker(body, PR_KIND) == 1 and "Fixes #1" in body
    row = next(line for line in body.splitlines() if line.startswith("| `tests` |"))
    assert "❌ fail" in row and "✅ pass" in row
    assert "- `tests/test_calc.py::CalcTest::test_add`" in body.split("from failing to passing")[1].split("##")[0]
    evidence = body.split("## Evidence")[1].split("## Not verified")[0]
    assert "**Reproduction" in evidence and "verified** — the report is reproduced" in evidence
    assert re.search(r"\| `tests/test_calc\.py::CalcTest::test_add` \| fail \(.*\) \| pass \| AssertionError", evidence)
    assert (
        "✅ `add(2, 3)` returns 5 _(stated · behaviour)_ — shown by `tests/test_calc.py::CalcTest::test_add`"
        in evidence
    )
    assert re.search(r"`https://evil\.example/p\.png\?k=?\[REDACTED\]\)?`", body) and "![x]" not in body
    html = render(body)  # as GitHub's engine renders it: no image and no link off GitHub
    assert "<img" not in html and all(is_github_url(h) for h in re.findall(r'<a href="([^"]*)"', html))
    assert "return a + b" in world.git("show", f"{branch}:calc.py")
    head = world.git("rev-parse", branch).strip()
    [run] = world.github.check_runs
    assert (run["name"], run["head_sha"], run["conclusion"]) == ("ai-fix", head, "success")
    [progress] = [c for c in world.github.bot_comments(REPO, 1) if find_marker(c["body"], PROGRESS_KIND) == 1]
    assert (
        "- [x] Pull request" in progress["body"]
        and pr["html_url"] in progress["body"]
        and "✅ **Accepted**" in progress["body"]
    )
    assert len(world.github.bot_comments(REPO, 1)) == 1, "one comment holds the contract and the progress"
    assert "<summary>Task contract</summary>" in progress["body"] and "`add(2, 3)` returns 5" in progress["body"]

    # `/agent retry` with feedback: a new round on the same branch, new commits on top.
    world.script(
        [
            sees(
                "Also say in the README that add() sums",
                turn(
                    "Plan the README line.",
                    call("plan", steps=[{"do": "document add()", "done_when": "tests pass"}], impact=["README.md"]),
                ),
            ),
            turn(
                "Add the line.",
                call(
                    "str_replace_based_edit_tool",
                    command="str_replace",
                    path="README.md",
                    old_str="A tiny calculator used by `ai-fix demo`.",
                    new_str="A tiny calculator used by `ai-fix demo`; add() sums.",
                ),
                CHECK,
            ),
            turn("Done.", call("finish", summary="Documented add().", risks=[], criteria=SAMPLE_CRITERIA)),
        ]
    )
    task = world.run(
        "issue_comment",
        pr_comment("/agent retry\nAlso say in the README that add() sums", number=pr["number"], pr_body=pr["body"]),
    )
    assert task["status"] == "done", task
    assert len(world.github.pulls_of(REPO)) == 1
    log = world.git("log", "--format=%H", branch).split()
    assert log[1:].count(head) == 1 and log[0] != head, "new commits on top of the old head, no force-push"
    assert "add() sums" in world.git("show", f"{branch}:README.md")
    assert len(world.github.bot_comments(REPO, 1)) == 1, "the second round updated the one comment in place"
    assert [(r.n, r.kind) for r in read_rounds(world.pull(pr["number"])["body"])] == [(1, "issue"), (2, "retry")]
    original = world.git("rev-parse", "main").strip()
    assert f"**Reproduction (against `{original[:12]}`): verified**" in world.pull(pr["number"])["body"], (
        "round 2's evidence is taken against the pull request's original base, where round 1's tests failed"
    )
    not_verified = world.pull(pr["number"])["body"].split("## Not verified")[1].split("## Known risks")[0]
    assert "- Also say in the README that add() sums: for the reviewer" in not_verified

    # A review with two comments: one round, one reply in each thread.
    review_id = 5150
    on_code = world.github.add_review_comment(
        REPO, pr["number"], review_id, SENDER, "Say what add() returns in its docstring."
    )
    on_docs = world.github.add_review_comment(REPO, pr["number"], review_id, SENDER, "Is the README line needed?")
    on_code.update(
        path="calc.py",
        line=5,
        diff_hunk='@@ -3,4 +3,4 @@\n def add(a: float, b: float) -> float:\n     """The sum of a and b."""',
    )
    on_docs.update(path="README.md", line=3, diff_hunk="@@ -1,3 +1,3 @@\n # calc")
    world.script(
        [
            sees(
                "Say what add() returns in its docstring.",
                turn("Plan.", call("plan", steps=[{"do": "docstring", "done_when": "tests pass"}], impact=["calc.py"])),
            ),
            turn(
                "Edit.",
                call(
                    "str_replace_based_edit_tool",
                    command="str_replace",
                    path="calc.py",
                    old_str='"""The sum of a and b."""',
                    new_str='"""Return the sum of a and b."""',
                ),
                CHECK,
            ),
            turn(
                "Done.",
                call("finish", summary="Docstring says what add() returns.", risks=[], criteria=SAMPLE_CRITERIA),
            ),
        ]
    )
    model_calls = len(world.model_api.bodies)
    task = world.run(
        "pull_request_review",
        review_submitted(
            body="Two notes on the docs.",
            number=pr["number"],
            review_id=review_id,
            sender=SENDER,
            pr_body=world.pull(pr["number"])["body"],
        ),
    )
    assert task["status"] == "done", task
    assert len(world.model_api.bodies) - model_calls == 3, "one round of three model turns"
    replies = {r["in_reply_to_id"]: r["body"] for r in world.github.replies(REPO, pr["number"])}
    assert set(replies) == {on_code["id"], on_docs["id"]}
    assert "Changed `calc.py`" in replies[on_code["id"]] and "No change to `README.md`" in replies[on_docs["id"]]
    assert [r.kind for r in read_rounds(world.pull(pr["number"])["body"])] == ["issue", "retry", "review"]
    assert len(world.github.pulls_of(REPO)) == 1 and len(world.github.check_runs) == 3


def test_a_task_that_cannot_be_solved_hands_off_a_draft_with_the_work_pushed(world: World) -> None:
    number = 20
    world.script(
        [
            turn(
                "Plan.",
                call("plan", steps=[{"do": "skip None in total()", "done_when": "tests pass"}], impact=["calc.py"]),
            ),
            turn(
                "Start with the docstring.",
                call(
                    "str_replace_based_edit_tool",
                    command="str_replace",
                    path="calc.py",
                    old_str='"""The sum of all values."""',
                    new_str='"""The sum of all values, None skipped."""',
                ),
            ),
            *[
                turn(
                    "Still thinking.",
                    call("str_replace_based_edit_tool", command="view", path="calc.py", view_range=[1, n + 2]),
                )
                for n in range(6)
            ],
        ]
    )
    task = world.run("issues", world.labelled(number, *ISSUE_TWO))
    assert task["status"] == "handed_off", task
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == number]
    assert pr["draft"] is True and world.github.labels[(REPO, pr["number"])] == [HANDOFF_LABEL]
    assert "None skipped" in world.git("show", f"{pr['head']['ref']}:calc.py"), "the work is on the pushed branch"
    assert re.search(r"## Handoff\n\nThe work so far is on branch `ai-fix/20-[^`]+`\.\n\n\*\*Done:\*\*", pr["body"])
    assert "step limit" in pr["body"]
    runs = [r for r in world.github.check_runs if r["head_sha"] == world.git("rev-parse", pr["head"]["ref"]).strip()]
    assert [r["conclusion"] for r in runs] == ["failure"]
    assert {(a["path"], a["annotation_level"]) for a in runs[0]["annotations"]} == {("tests/test_calc.py", "failure")}
    assert all(a["start_line"] > 0 for a in runs[0]["annotations"])


CLOSING = re.compile(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b\s*:?\s+(?:[\w.-]+/[\w.-]+)?#\d+")
"""What GitHub reads as closing an issue (a squashed pull request's title and every commit message on merge)."""


def test_an_issue_title_or_a_model_naming_other_issues_closes_none_on_merge(world: World) -> None:
    number = 52
    _, _, body = sample()[1].partition("\n")
    edit = turn("add() subtracts: use a + b, which fixes octo/other#4 and closes #9.", FIX, CHECK)
    world.script([FIX_SCRIPT[0], FIX_SCRIPT[1], edit, *FIX_SCRIPT[3:]])
    task = world.run("issues", world.labelled(number, "add() subtracts, closes #9", body.strip()))
    assert task["status"] == "done", task
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == number]
    assert pr["title"] == "ai-fix: add() subtracts, closes issue 9"
    messages = world.git("log", "--format=%B", f"main..{pr['head']['ref']}")
    assert "closes issue 9" in messages and "fixes octo/other issue 4" in messages
    assert CLOSING.findall(pr["title"] + "\n" + messages) == []
    assert CLOSING.findall(pr["body"]) == [f"Fixes #{number}"], "the body closes its own issue only"


def test_relabelling_after_the_pr_was_closed_opens_a_new_pr_on_a_new_branch(world: World) -> None:
    """The closed PR's branch stays on the remote as it was; the new run never pushes onto it."""
    number = 30
    title, _, body = sample()[1].partition("\n")
    issue = (title.removeprefix("# ").strip(), body.strip())
    world.script(FIX_SCRIPT)
    task = world.run("issues", world.labelled(number, *issue))
    assert task["status"] == "done", task
    [first] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == number]
    old_branch = first["head"]["ref"]
    old_tip = world.git("rev-parse", old_branch).strip()
    first["state"] = "closed"  # the maintainer closed it without merging

    world.script(FIX_SCRIPT)
    task = world.run("issues", world.labelled(number, *issue))  # labelled again
    assert task["status"] == "done", task
    mine = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == number]
    assert [p["state"] for p in mine] == ["closed", "open"]
    assert mine[1]["head"]["ref"] == f"{old_branch}-2"
    assert "return a + b" in world.git("show", f"{old_branch}-2:calc.py")
    assert world.git("rev-parse", old_branch).strip() == old_tip
