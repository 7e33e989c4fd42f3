"""Keeping an ai-fix pull request green and mergeable, end to end: a real `ai-fix serve`, the fake GitHub with
GitHub Actions (runs, jobs, logs, re-runs; every request checked against the OpenAPI operations), the fake
Messages API, bwrap running the sample repository's tests, and a bare git repository as the remote.

The tests run in order on one pull request: the label opens it, then its CI fails, flakes, is pushed by
someone else, hits the round limit, and its base branch moves on so that it conflicts.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from bot.ci.models import read_ci_record
from bot.commands.demo import sample
from bot.markers import PROGRESS_KIND, marker, replace_hidden_record
from bot.model.scripted import call, turn
from bot.publish.models import ROUNDS_RECORD, read_rounds
from tests.support.fake_ci import CiGitHub, FakeJob
from tests.support.fake_github import load_payload
from tests.support.webhooks import INSTALLATION, REPO, pr_comment
from tests.support.world import CANARY, FIX_SCRIPT, SECRETS, World, sees, start_world


def actions_log(lines: list[str]) -> str:
    """A GitHub Actions job log: a timestamp before every line."""
    return "\n".join(f"2026-12-01T10:00:{i:02}.1234567Z {line}" for i, line in enumerate(lines))


LINT_LOG = actions_log(
    [
        "##[group]Run actions/checkout@v4",
        "with:",
        "##[endgroup]",
        "Syncing repository: Codertocat/Hello-World",
        "##[group]Run pydocstyle calc.py",
        "pydocstyle calc.py",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        f"export DEPLOY_TOKEN={CANARY}-in-the-repo",
        "calc.py:4 in public function `add`:",
        '        D401: First line should be in imperative mood (perhaps "Return", not "The")',
        "##[error]Process completed with exit code 1.",
    ]
)
LINT = FakeJob("lint", "Run pydocstyle calc.py", LINT_LOG)
DOCSTRING_FIX = call(
    "str_replace_based_edit_tool",
    command="str_replace",
    path="calc.py",
    old_str='    """The sum of a and b."""',
    new_str='    """Return the sum of a and b."""',
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        yield start_world(tmp_path_factory.mktemp("e2e-ci"), stack, github=CiGitHub)


@pytest.fixture(autouse=True)
def nothing_leaks(world: World) -> Iterator[None]:
    yield
    world.assert_clean()


def fake(world: World) -> CiGitHub:
    assert isinstance(world.github, CiGitHub)
    return world.github


def the_pull(world: World) -> dict[str, Any]:
    [pr] = world.github.pulls_of(REPO)
    fake(world).refresh(REPO, pr)
    return pr


def progress(world: World, issue: int = 1) -> str:
    [comment] = [c for c in world.github.bot_comments(REPO, issue) if marker(PROGRESS_KIND, issue) in c["body"]]
    return str(comment["body"])


def ci_failed(world: World, name: str = "CI", jobs: list[FakeJob] | None = None) -> tuple[int, dict[str, Any]]:
    """A workflow run that failed on the PR's head, delivered; (its id, the finished task)."""
    pr = the_pull(world)
    run = fake(world).add_run(REPO, pr, name, jobs or [LINT])
    return run["id"], deliver_run(world, run["id"])


def deliver_run(world: World, run_id: int) -> dict[str, Any]:
    payload = fake(world).workflow_run_payload(run_id, the_pull(world))
    payload["installation"] = {"id": INSTALLATION}
    return world.run("workflow_run", payload)


def push_as_someone_else(world: World, root: Path, branch: str, path: str, text: str) -> str:
    """A commit by a person on `branch` of the remote; its sha."""
    clone = root / f"clone-{branch.replace('/', '-')}-{path.replace('/', '-')}"
    subprocess.run(["git", "clone", "-q", "-b", branch, f"file://{world.bare}", str(clone)], check=True)
    (clone / path).write_text(text)
    env = ["-c", "user.name=Mona", "-c", "user.email=mona@example.com"]
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(clone), *env, "commit", "-qm", f"edit {path}"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", branch], check=True)
    return world.git("rev-parse", branch).strip()


def why(task: dict[str, Any]) -> str:
    failures = [e["data"] for e in task.get("events", []) if e["event"] == "attempt_failed"]
    return f"{task['status']}: {task['reason']}; {[e['event'] for e in task.get('events', [])]}; {failures}"


def test_a_failing_workflow_is_rerun_once_then_a_round_pushes_a_fix_on_the_same_branch(world: World) -> None:
    title, _, body = sample()[1].partition("\n")
    world.script(FIX_SCRIPT)
    assert world.run("issues", world.labelled(1, title.removeprefix("# ").strip(), body.strip()))["status"] == "done"
    pr = the_pull(world)
    first_head = pr["head"]["sha"]
    assert first_head == world.git("rev-parse", pr["head"]["ref"]).strip()

    world.script([])  # a re-run needs no model: any call would fail the job
    run_id, task = ci_failed(world)
    assert task["kind"] == "ci" and task["status"] == "done", why(task)
    assert fake(world).reruns == [run_id], "the failed jobs are re-run once"
    assert world.git("rev-parse", pr["head"]["ref"]).strip() == first_head, "nothing pushed for a re-run"
    assert "re-ran the failed jobs of `CI` (failure)" in progress(world)

    fake(world).complete(run_id, [LINT])  # the re-run fails as well
    world.script(
        [
            sees(
                "D401: First line should be in imperative mood",
                turn(
                    "The lint job fails on add()'s docstring.",
                    call(
                        "plan",
                        steps=[{"do": "imperative docstring for add()", "done_when": "tests: still pass"}],
                        impact=["calc.py"],
                    ),
                ),
            ),
            turn("Fix the docstring.", DOCSTRING_FIX),
            turn("Check.", call("run_checks", names=["tests"], expect="tests pass")),
            turn("Done.", call("finish", summary="The docstring of add() is in imperative mood.", risks=[])),
            turn("Done, really.", call("finish", summary="The docstring of add() is in imperative mood.", risks=[])),
        ]
    )
    task = deliver_run(world, run_id)
    assert task["kind"] == "ci" and task["status"] in ("done", "unverified"), why(task)
    assert fake(world).reruns == [run_id], "a second failure is not re-run again"
    new_head = world.git("rev-parse", pr["head"]["ref"]).strip()
    assert new_head != first_head and world.git("rev-parse", f"{new_head}^").strip() == first_head
    assert '"""Return the sum of a and b."""' in world.git("show", f"{new_head}:calc.py")
    assert len(world.github.pulls_of(REPO)) == 1, "the round pushed to the same pull request"
    [*_, last] = read_rounds(the_pull(world)["body"])
    assert last.kind == "ci" and last.head_sha == new_head and last.ci is not None
    assert last.ci.head_sha == first_head and last.ci.checks == ["CI"] and last.ci.reproduced_by == []
    assert "no contract check runs the failing command" in progress(world)
    assert fake(world).log_reads, "the digest was built from the job's log"

    world.script([])
    passed = fake(world).add_run(REPO, the_pull(world), "CI", [FakeJob("lint")])
    assert deliver_run(world, passed["id"])["status"] == "done"
    assert f"the project's CI on {new_head[:7]}, pushed by the last CI round, passes" in progress(world)


TESTS_LOG = actions_log(
    [
        "##[group]Run pytest -q tests",
        "pytest -q tests",
        "shell: /usr/bin/bash -e {0}",
        "##[endgroup]",
        "FAILED tests/test_calc.py::CalcTest::test_total - AssertionError: 9.0 != 6",
        "1 failed, 1 passed in 0.02s",
        "##[error]Process completed with exit code 1.",
    ]
)


def test_a_failure_a_contract_check_reproduces_is_that_checks_round(world: World, tmp_path: Path) -> None:
    """The failing CI step runs pytest, which the contract's `tests` check runs: the sandbox reproduces it first."""
    pr = the_pull(world)
    branch = pr["head"]["ref"]
    ours = world.git("show", f"{branch}:calc.py")
    broken = push_as_someone_else(
        world,
        tmp_path,
        branch,
        "calc.py",
        ours.replace("result = add(result, value)", "result = add(result, value) + 1"),
    )
    # What a restart reads back: the body records that head as ai-fix's own last push (a round that pushed it).
    rounds = read_rounds(pr["body"])
    pushed = rounds[-1].model_copy(update={"n": len(rounds) + 1, "kind": "retry", "head_sha": broken, "ci": None})
    pr["body"] = replace_hidden_record(
        ROUNDS_RECORD, pr["body"], [r.model_dump(mode="json") for r in [*rounds, pushed]]
    )
    world.script([])
    run_id, task = ci_failed(world, "Tests", [FakeJob("pytest", "Run pytest -q tests", TESTS_LOG)])
    assert task["status"] == "done" and fake(world).reruns[-1] == run_id, why(task)
    fake(world).complete(run_id, [FakeJob("pytest", "Run pytest -q tests", TESTS_LOG)])
    world.script(
        [
            sees(
                "The failing command is the contract check(s) tests",
                turn(
                    "test_total fails in the sandbox too: total() adds 1 per value.",
                    call(
                        "plan",
                        steps=[{"do": "drop the + 1 in total()", "done_when": "tests: pass"}],
                        impact=["calc.py"],
                    ),
                ),
            ),
            turn(
                "Drop it.",
                call(
                    "str_replace_based_edit_tool",
                    command="str_replace",
                    path="calc.py",
                    old_str="result = add(result, value) + 1",
                    new_str="result = add(result, value)",
                ),
            ),
            turn("Check.", call("run_checks", names=["tests"], expect="tests pass")),
            turn("Done.", call("finish", summary="total() sums the values again.", risks=[])),
            turn("Done, really.", call("finish", summary="total() sums the values again.", risks=[])),
        ]
    )
    task = deliver_run(world, run_id)
    assert task["kind"] == "ci" and task["status"] in ("done", "unverified"), why(task)
    new_head = world.git("rev-parse", branch).strip()
    assert new_head != broken and world.git("show", f"{new_head}:calc.py") == ours
    [*_, last] = read_rounds(the_pull(world)["body"])
    assert last.kind == "ci" and last.head_sha == new_head and last.ci is not None
    assert last.ci.head_sha == broken and last.ci.mapped == ["tests"] and last.ci.reproduced_by == ["tests"]
    text = progress(world)
    assert f"reproduced in the sandbox by `tests` (failing on {broken[:7]}); after the change: `tests`" in text
    assert f"pushed {new_head[:7]}" in text


def test_a_pass_on_the_rerun_is_noted_flaky_and_starts_no_round(world: World) -> None:
    world.script([])
    head = the_pull(world)["head"]["sha"]
    run_id, task = ci_failed(world, "Integration")
    assert task["status"] == "done" and fake(world).reruns[-1] == run_id
    fake(world).complete(run_id, [FakeJob("integration")])  # passes when re-run
    assert deliver_run(world, run_id)["status"] == "done"
    assert world.git("rev-parse", the_pull(world)["head"]["ref"]).strip() == head, "no round"
    assert "`Integration` failed on" in progress(world) and "flaky, no round needed" in progress(world)
    record = read_ci_record(the_pull(world)["body"])
    assert [r.outcome for r in record.reruns if r.run_id == run_id] == ["passed"]
    metrics = world.client.get("/metrics", headers={"Authorization": f"Bearer {SECRETS['AIFIX_ADMIN_TOKEN']}"}).text
    assert 'aifix_ci_reruns_total{result="flaky"} 1' in metrics
    assert 'aifix_ci_reruns_total{result="requested"} 3' in metrics  # one per test so far
    assert any(line.startswith("aifix_ci_rounds_total{outcome=") for line in metrics.splitlines())


def test_a_failure_on_a_head_someone_else_pushed_starts_no_round(world: World, tmp_path: Path) -> None:
    world.script([])
    branch = the_pull(world)["head"]["ref"]
    foreign = push_as_someone_else(world, tmp_path, branch, "NOTES.md", "Notes by Mona.\n")
    reruns = list(fake(world).reruns)
    the_pull(world)["draft"] = False  # marked ready by a maintainer
    _run_id, task = ci_failed(world)
    assert task["status"] == "done", why(task)
    assert fake(world).reruns == reruns, "not even a re-run"
    assert world.git("rev-parse", branch).strip() == foreign
    assert f"`{foreign[:7]}`" in progress(world) and "which someone else pushed" in progress(world)
    assert the_pull(world)["draft"] is True, "a required check fails and ai-fix leaves it: back to draft"
    [back] = [c for c in world.github.bot_comments(REPO, the_pull(world)["number"]) if "Back to draft" in c["body"]]
    assert (
        f"failed on {foreign[:7]} and ai-fix will not fix it: the head {foreign[:7]} was pushed by someone else"
        in (back["body"])
    )


def test_the_fourth_failure_after_three_rounds_gets_a_comment_and_no_round(world: World) -> None:
    world.script([])
    pr = the_pull(world)
    # Three CI rounds recorded in the body, the last of which pushed today's head: what a restart reads back.
    rounds = read_rounds(pr["body"])
    ci_round = next(r for r in rounds if r.kind == "ci")
    more = 3 - sum(r.kind == "ci" for r in rounds)
    extra = [
        ci_round.model_copy(update={"n": len(rounds) + i, "head_sha": pr["head"]["sha"] if i == more else f"{i}" * 40})
        for i in range(1, more + 1)
    ]
    pr["body"] = replace_hidden_record(
        ROUNDS_RECORD, pr["body"], [r.model_dump(mode="json") for r in [*rounds, *extra]]
    )
    assert sum(r.kind == "ci" for r in read_rounds(pr["body"])) == 3
    pr["draft"] = False  # marked ready again
    run_id, task = ci_failed(world)
    assert task["status"] == "done" and fake(world).reruns[-1] == run_id
    fake(world).complete(run_id, [LINT])
    task = deliver_run(world, run_id)
    assert task["status"] == "done", why(task)
    assert "after 3 CI rounds (ci.max_rounds: 3): no round" in progress(world)
    assert "will not fix it: ci.max_rounds (3) reached; the pull request is back to draft" in progress(world)
    assert the_pull(world)["draft"] is True
    assert world.git("rev-parse", pr["head"]["ref"]).strip() == pr["head"]["sha"], "nothing pushed"


def test_a_base_branch_push_that_makes_the_pr_conflict_gets_a_merge_commit_resolving_it(
    world: World, tmp_path: Path
) -> None:
    pr = the_pull(world)
    head = pr["head"]["sha"]
    ours = world.git("show", f"{head}:calc.py")
    assert '"""Return the sum of a and b."""\n    return a + b' in ours
    main = push_as_someone_else(
        world,
        tmp_path,
        "main",
        "calc.py",
        ours.replace("    return a + b", "    return a - b")
        .replace('"""Return the sum of a and b."""', '"""The sum of a and b."""')
        .replace("def add(a: float, b: float) -> float:", "def add(a: float, b: float, /) -> float:"),
    )
    assert fake(world).refresh(REPO, pr) is None and pr["mergeable"] is False
    fake(world).computing[(REPO, pr["number"])] = 1  # GitHub has not computed it yet on the first read
    resolved = 'def add(a: float, b: float, /) -> float:\n    """Return the sum of a and b."""\n    return a + b'
    world.script(
        [
            sees(
                "def add(a: float, b: float, /) -> float:",  # main's side of the hunk
                turn(
                    "Keep both: the positional-only parameters and the fix.",
                    call(
                        "resolve_conflicts",
                        resolutions=[{"file": "calc.py", "conflict": 1, "text": resolved}],
                        summary="Kept main's positional-only signature and the PR's fixed body and docstring.",
                    ),
                ),
            )
        ]
    )
    payload = copy.deepcopy(load_payload("push/with-installation"))
    payload.update(ref="refs/heads/main", after=main, deleted=False, created=False)
    payload["installation"] = {"id": INSTALLATION}
    scan = world.run("push", payload)
    assert scan["kind"] == "scan" and scan["status"] == "done", scan
    [task] = [t for t in world.tasks() if t["kind"] == "rebase"]
    task = world.wait(task["id"])
    assert task["status"] == "done", why(task)
    merge = world.git("rev-parse", pr["head"]["ref"]).strip()
    assert world.git("rev-list", "--parents", "-n1", merge).split() == [merge, head, main], "a merge commit"
    text = world.git("show", f"{merge}:calc.py")
    assert resolved in text and "<<<<<<<" not in text and "=======" not in text
    [reply] = [c for c in world.github.bot_comments(REPO, pr["number"]) if "Merged `main`" in c["body"]]
    assert "Resolved the conflicts in `calc.py`." in reply["body"] and "| `tests` | ✅ pass |" in reply["body"]
    assert read_rounds(the_pull(world)["body"])[-1].kind == "rebase"
    assert the_pull(world)["mergeable"] is True


def push_to_main(world: World, sha: str) -> dict[str, Any]:
    """The `push` delivery of `sha` to main; the scan job it makes, finished."""
    payload = copy.deepcopy(load_payload("push/with-installation"))
    payload.update(ref="refs/heads/main", after=sha, deleted=False, created=False)
    payload["installation"] = {"id": INSTALLATION}
    return world.run("push", payload)


def test_agent_rebase_from_a_reader_is_refused(world: World) -> None:
    world.script([])
    world.github.permissions[(REPO, "reader")] = "read"
    pr = the_pull(world)
    head = pr["head"]["sha"]
    task = world.run("issue_comment", pr_comment("/agent rebase", number=pr["number"], sender="reader"))
    assert task["kind"] == "rebase" and task["status"] == "rejected", task
    assert world.git("rev-parse", pr["head"]["ref"]).strip() == head


def test_a_merge_that_cannot_be_finished_pushes_nothing_and_the_reply_says_why(world: World, tmp_path: Path) -> None:
    pr = the_pull(world)
    head = pr["head"]["sha"]
    before = {t["id"] for t in world.tasks() if t["kind"] == "rebase"}
    main_text = world.git("show", "main:calc.py")
    assert '"""The sum of a and b."""' in main_text
    push_as_someone_else(world, tmp_path, "main", "calc.py", main_text.replace("The sum of a and b.", "Add a and b."))
    assert fake(world).refresh(REPO, pr) is None and pr["mergeable"] is False
    wrong_file = call(
        "resolve_conflicts", resolutions=[{"file": "README.md", "conflict": 1, "text": "x"}], summary="Resolved."
    )
    world.script([turn("Resolving.", wrong_file) for _ in range(3)])  # three unusable answers: the limit
    assert push_to_main(world, world.git("rev-parse", "main").strip())["status"] == "done"
    [task] = [t for t in world.tasks() if t["kind"] == "rebase" and t["id"] not in before]
    task = world.wait(task["id"])
    assert task["status"] == "handed_off" and "no usable resolution in 3 answers" in task["reason"], why(task)
    assert world.git("rev-parse", pr["head"]["ref"]).strip() == head, "nothing pushed"
    [reply] = [c for c in world.github.bot_comments(REPO, pr["number"]) if "Could not merge `main`" in c["body"]]
    assert (
        "the model gave no usable resolution in 3 answers" in reply["body"] and "Nothing was pushed." in reply["body"]
    )
    assert "`/agent rebase` to try again" in reply["body"]
    assert "could not merge main: the model gave no usable resolution" in progress(world)
    assert read_rounds(the_pull(world)["body"])[-1].head_sha == head, "no round recorded for what was not pushed"


def test_a_rerun_github_refuses_says_what_permission_is_missing_and_goes_on(world: World) -> None:
    world.script([])  # the PR has had its three CI rounds: going on means the limit's note, no model call
    fake(world).rerun_refusal = "Resource not accessible by integration"
    reruns = list(fake(world).reruns)
    head = the_pull(world)["head"]["sha"]
    try:
        _run_id, task = ci_failed(world)
    finally:
        fake(world).rerun_refusal = None
    assert task["status"] == "done" and task["attempts"] == 1, why(task)
    assert not [e for e in task.get("events", []) if e["event"] == "attempt_failed"], "not failed blindly"
    assert fake(world).reruns == reruns
    text = progress(world)
    assert f"GitHub refused to re-run the failed jobs of `CI` on {head[:7]}" in text
    assert "Resource not accessible by integration" in text and "`actions: write`" in text
    assert f"re-ran the failed jobs of `CI` (failure) on {head[:7]}" not in text, "nothing was re-run"
    assert f"failed on {head[:7]} after 3 CI rounds" in text, "went on to what comes after a re-run: the limit"
