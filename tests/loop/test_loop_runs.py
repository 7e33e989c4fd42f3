"""Scripted sessions through the real Anthropic client, the fake Messages API, a real git repo, bwrap and the check runner."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bot.commands.demo import make_repo
from bot.commands.run import execute
from bot.model.replay import ReplayModel
from bot.model.scripted import call, turn
from bot.settings import load_settings
from tests.support.runs import (
    CHECK,
    DEMO_SCRIPT,
    FINISH,
    FIX,
    PLAN,
    VIEW,
    config,
    run_local,
    sample_files,
    sample_issue,
)

pytestmark = pytest.mark.bwrap


def user_text(body: str) -> str:
    """The text of a request body's user message, as the model reads it."""
    return "\n".join(block["text"] for block in json.loads(body)["messages"][0]["content"])


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def edit(old: str, new: str, path: str = "calc.py") -> tuple[str, dict[str, object]]:
    return call("str_replace_based_edit_tool", command="str_replace", path=path, old_str=old, new_str=new)


def test_happy_path_fixes_the_bug_and_writes_the_outputs(tmp_path: Path) -> None:
    run = run_local(tmp_path, DEMO_SCRIPT)
    result = run.result
    assert result.outcome == "accepted", result.reason
    assert result.baseline and result.baseline.results[0].status == "fail"
    assert result.final and result.final.passed
    assert "+    return a + b" in result.diff_text
    # The work stays on the branch of the user's repository.
    assert "return a + b" in git(run.repo, "show", f"{result.branch}:calc.py")
    assert result.branch == "ai-fix/local-add-subtracts-instead-of-adding"
    evidence = json.loads((run.out / "evidence.json").read_text())
    check = evidence["checks"][0]
    assert (evidence["accepted"], evidence["outcome"], evidence["steps"]) == (True, "accepted", 4)
    assert (check["baseline"]["status"], check["final"]["status"], check["final"]["exit_code"]) == ("fail", "pass", 0)
    assert evidence["diff"] == {"files": ["calc.py"], "added": 1, "removed": 1}
    assert evidence["cost"]["cache_read_tokens"] > 0 and evidence["cost"]["usd"] > 0
    assert "add(2, 3)" in (run.out / "pr.md").read_text()
    # The plan was forced first; every step is in the trace with its context sizes and usage.
    first = json.loads(run.fake.bodies[0])
    assert first["tool_choice"] == {"type": "tool", "name": "plan"}
    assert json.loads(run.fake.bodies[1])["tool_choice"] == {"type": "any"}
    # The stable layer is byte-identical every step; the slow part of the volatile layer has its own breakpoint.
    assert len({json.dumps(json.loads(b)["system"]) for b in run.fake.bodies}) == 1
    assert [b.get("cache_control") for b in json.loads(run.fake.bodies[1])["messages"][0]["content"]] == [
        {"type": "ephemeral"},
        None,
    ]
    steps = [r for r in run.trace() if r["kind"] == "step"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert all(set(s["context_tokens"]) == {"stable", "volatile", "history"} for s in steps)
    # What the run viewer shows comes from the trace: the contract, each checkpoint's diff, the handoff and cost.
    start, end = run.trace()[0], run.trace()[-1]
    assert start["contract"]["goal"] == result.contract.goal and start["contract"]["checks"][0]["name"] == "tests"
    [kept] = [a["checkpoint"] for a in run.actions() if a.get("checkpoint")]
    assert "-    return a - b\n+    return a + b" in kept["diff"] and kept["sha"] in git(
        run.repo, "log", "--format=%H", result.branch
    )
    assert end["kind"] == "end" and end["checkpoint"] is None, "the checkpoint already held the whole change"
    assert end["cost"]["usd"] == result.cost.usd and end["diff"]["files"][0]["path"] == "calc.py"
    assert end["summary"] == result.model_summary and end["handoff"]["done"] == result.handoff.done
    for line in ("phase: baseline checks", "baseline: tests fail", "checks: tests pass", "outcome: accepted"):
        assert line in run.log
    assert run.models and all(m.client.is_closed() for m in run.models), "the run left its model's connections open"


def test_wrong_patch_then_fix_records_the_failed_expectation(tmp_path: Path) -> None:
    script = [
        turn("plan", PLAN),
        turn("Try multiplication.", edit("    return a - b", "    return a * b"), CHECK),
        turn("Wrong: use addition.", edit("    return a * b", "    return a + b"), CHECK),
        turn("done", FINISH),
    ]
    run = run_local(tmp_path, script)
    assert run.result.outcome == "accepted", run.result.reason
    expectations = [a["expectation"] for a in run.actions() if a["tool"] == "run_checks"]
    assert [e["met"] for e in expectations] == [False, True]
    # The model saw the failed attempt in its next request.
    assert "NOT met" in user_text(run.fake.bodies[2])
    assert "a * b" not in run.result.diff_text and "a + b" in run.result.diff_text


def test_same_failure_repeated_rolls_back_narrows_scope_then_hands_off(tmp_path: Path) -> None:
    def docstring(n: int) -> tuple[str, dict[str, object]]:
        old = '"""The sum of a and b."""' if n == 1 else f'"""The sum of a and b ({n - 1})."""'
        return edit(old, f'"""The sum of a and b ({n})."""')

    script = [
        turn("plan", PLAN),
        turn("Attempt one: reword the docstring.", docstring(1), CHECK),
        turn("Attempt two: reword it again.", docstring(2), CHECK),
        turn(
            "Attempt three: touch the README.",
            edit("A tiny calculator", "A small calculator", path="README.md"),
            docstring(1),
            CHECK,
        ),
        turn("Attempt four.", docstring(2), CHECK),
    ]
    run = run_local(tmp_path, script)
    result = run.result
    assert result.outcome == "handed_off"
    assert "came back after rolling back and narrowing the scope" in result.reason
    assert len(result.handoff.ruled_out) == 2
    assert "Attempt one" in result.handoff.ruled_out[0] and "Attempt two" in result.handoff.ruled_out[0]
    assert "Attempt three" in result.handoff.ruled_out[1]
    # After the rollback the scope is the failing area: README.md is refused, calc.py still editable.
    refused = [a for a in run.actions() if a["decision"] == "refused"]
    assert refused and "README.md is outside the task's scope" in refused[0]["observation"]["text"]
    assert "narrowed to the failing area" in user_text(run.fake.bodies[3])
    # The ruled-out approaches are in the handoff the PR body shows.
    assert "Attempt one" in (run.out / "pr.md").read_text()


def test_finish_while_checks_fail_is_refused(tmp_path: Path) -> None:
    script = [
        turn("plan", PLAN),
        turn("Only the docstring.", edit('"""The sum of a and b."""', '"""Add two numbers."""')),
        turn("I am done.", FINISH),
        turn("Fix it properly.", FIX),
        turn("Now done.", FINISH),
    ]
    run = run_local(tmp_path, script)
    finishes = [a for a in run.actions() if a["tool"] == "finish"]
    refusal = finishes[0]["observation"]["text"]
    assert finishes[0]["decision"] == "refused" and refusal.startswith("finish refused, the change is not verified yet")
    assert "failed on the base commit and still fail: tests/test_calc.py::CalcTest::test_add" in refusal
    assert finishes[0]["checks"]["results"][0]["status"] == "fail"
    assert run.result.outcome == "accepted"


def test_denied_paths_traversal_and_workflows_are_refused(tmp_path: Path) -> None:
    files = sample_files(
        **{".github/ai-fix.yml": config(), "vendor/lib.py": "X = 1\n", ".github/workflows/ci.yml": "on: push\n"}
    )
    script = [
        turn("plan", PLAN),
        turn(
            "Try the forbidden places.",
            edit("X = 1", "X = 2", path="vendor/lib.py"),
            call("str_replace_based_edit_tool", command="create", path="../outside.py", file_text="x = 1\n"),
            edit("on: push", "on: [push, pull_request]", path=".github/workflows/ci.yml"),
            call(
                "str_replace_based_edit_tool", command="create", path=".git/hooks/pre-commit", file_text="#!/bin/sh\n"
            ),
        ),
        turn("Fix.", FIX, CHECK),
        turn("Done.", FINISH),
    ]
    run = run_local(tmp_path, script, files=files)
    refused = [a for a in run.actions() if a["decision"] == "refused"]
    assert [a["input"]["path"] for a in refused] == [
        "vendor/lib.py",
        "../outside.py",
        ".github/workflows/ci.yml",
        ".git/hooks/pre-commit",
    ]
    texts = [a["observation"]["text"] for a in refused]
    assert "denied by scope rule 'vendor/**'" in texts[0]
    assert "escapes the workspace" in texts[1]
    assert "protected" in texts[2]
    assert not (tmp_path / "outside.py").exists() and not (tmp_path / "work" / "outside.py").exists()
    assert run.result.outcome == "accepted"
    assert [f.path for f in run.result.diff.files] == ["calc.py"]


def test_budget_exhausted_hands_off_with_the_work_on_the_branch(tmp_path: Path) -> None:
    files = sample_files(**{".github/ai-fix.yml": config(max_steps=3)})
    script = [
        turn("plan", PLAN),
        turn("Look first.", VIEW),
        turn("Half a fix: the docstring.", edit('"""The sum of a and b."""', '"""Return a plus b."""')),
    ]
    run = run_local(tmp_path, script, files=files)
    result = run.result
    assert result.outcome == "handed_off"
    assert result.reason.startswith("budget: the step limit (3) was reached")
    assert result.steps == 3 and len(run.fake.bodies) == 3
    assert "Return a plus b" in git(run.repo, "show", f"{result.branch}:calc.py")
    assert "work in progress" in git(run.repo, "log", "-1", "--format=%s", result.branch)
    end = run.trace()[-1]
    assert end["checkpoint"]["sha"] == result.head_sha and '+    """Return a plus b."""' in end["checkpoint"]["diff"]
    assert result.final is not None and result.final.results[0].status == "fail"
    assert result.handoff.question and "tests is fail" in result.handoff.not_done[0]


def test_529_on_the_first_calls_is_retried(tmp_path: Path) -> None:
    run = run_local(tmp_path, DEMO_SCRIPT, failures=[(529, {"retry-after": "0"}), (529, {})])
    assert run.result.outcome == "accepted"
    assert len(run.fake.bodies) == len(DEMO_SCRIPT) + 2
    first_call = next(r for r in run.trace() if r["kind"] == "step")["model_calls"][0]["response"]
    assert first_call["retries"] == 2


def test_malformed_tool_input_becomes_an_error_result(tmp_path: Path) -> None:
    script = [
        turn("plan", PLAN),
        turn(
            "Sloppy calls.",
            call("str_replace_based_edit_tool", command="str_replace", old_str="a - b"),
            call("run_checks", names="tests"),
            call("rm_rf", path="/"),
            call("str_replace_based_edit_tool", command="str_replace", path="calc.py", old_str="nowhere", new_str="x"),
        ),
        turn("Fix.", FIX, CHECK),
        turn("Done.", FINISH),
    ]
    run = run_local(tmp_path, script)
    assert run.result.outcome == "accepted"
    bad = run.actions()[1:5]
    assert [a["decision"] for a in bad] == ["malformed", "malformed", "malformed", "refused"]
    assert "malformed input for str_replace_based_edit_tool: path: Field required" in bad[0]["observation"]["text"]
    assert "names: Input should be a valid list" in bad[1]["observation"]["text"]
    assert "unknown tool 'rm_rf'" in bad[2]["observation"]["text"]
    assert "old_str must occur exactly once, found no match" in bad[3]["observation"]["text"]
    assert "malformed input" in user_text(run.fake.bodies[2])


@pytest.mark.parametrize(
    ("check", "named"),
    [
        ("pytestx -q", "command not found: pytestx"),
        # Debian's own Python has no pytest: "/usr/bin/python3: No module named pytest".
        ("/usr/bin/python3 -m pytest -q", "missing Python module 'pytest'"),
    ],
)
def test_environment_error_hands_off_without_model_turns(tmp_path: Path, check: str, named: str) -> None:
    if check.startswith("/usr/bin/python3") and importable_by_system_python("pytest"):
        pytest.skip("this machine's /usr/bin/python3 has pytest installed")
    files = sample_files(**{".github/ai-fix.yml": config(check=check)})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files)
    assert run.result.outcome == "handed_off"
    assert run.result.reason.startswith(f"environment error: check 'tests' could not run: {named}")
    assert run.fake.bodies == [] and run.result.steps == 0
    assert run.result.handoff.next_steps


def importable_by_system_python(module: str) -> bool:
    return (
        subprocess.run(["/usr/bin/python3", "-c", f"import {module}"], check=False, capture_output=True).returncode == 0
    )


def test_a_configured_check_stays_strict_and_says_what_would_add_the_tool(tmp_path: Path) -> None:
    files = sample_files(**{".github/ai-fix.yml": config(check="ruff check .")})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files)
    assert run.result.outcome == "handed_off" and run.fake.bodies == []
    assert "command not found: ruff" in run.result.reason and "PATH" in run.result.reason


def test_when_no_check_that_can_verify_the_criteria_can_run_it_is_an_environment_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Detected checks (no config): a linter alone cannot verify a criterion, so its running changes nothing."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `python` there, and no ruff
    files = sample_files(**{".github/ai-fix.yml": None, "pyproject.toml": "[tool.pytest.ini_options]\n[tool.ruff]\n"})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files)
    assert [(c.name, c.origin) for c in run.result.contract.checks] == [("pytest", "detected"), ("ruff", "detected")]
    assert run.result.contract.setup == [], "a pyproject.toml that only configures tools installs nothing"
    assert run.result.outcome == "handed_off" and run.fake.bodies == []
    assert run.result.reason.startswith(
        "environment error: no check that can verify the criteria can run: check 'pytest' could not run: "
        "the environment cannot run it: command not found: python"
    )
    assert "check 'ruff' could not run" in run.result.reason


def test_replay_of_a_recorded_trace_reproduces_the_diff(tmp_path: Path) -> None:
    first = run_local(tmp_path / "live", DEMO_SCRIPT)
    repo = make_repo(tmp_path / "again", sample_files(**{".github/ai-fix.yml": config()}))
    replay = ReplayModel.from_trace(first.out / "trace.jsonl")
    replayed = execute(
        sample_issue(),
        repo,
        tmp_path / "out2",
        settings=load_settings(work_dir=tmp_path / "work2"),
        model=lambda _choice: replay,
        model_name=None,
        sandbox_kind="bwrap",
    )
    assert replayed.outcome == first.result.outcome == "accepted"
    assert replayed.diff_text == first.result.diff_text and replayed.steps == first.result.steps


def test_no_request_to_the_model_carries_a_planted_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canaries = {
        "settings": "canary-settings-webhook-5f3a9c2e71",
        "env": "canary-environment-token-8d1e4b6a02",
        "repo": "canary-dotenv-value-3c7f0a9d55",
    }
    monkeypatch.setenv("DEPLOY_TOKEN", canaries["env"])
    files = sample_files(
        **{
            ".github/ai-fix.yml": config(),
            ".env": f"API_TOKEN={canaries['repo']}\n",
            "notes.txt": f"webhook {canaries['settings']} and deploy {canaries['env']} and {canaries['repo']}\n",
        }
    )
    issue = sample_issue() + f"\nThe failing run printed {canaries['env']}.\n"
    script = [
        turn("plan", PLAN),
        turn(
            "Read everything.",
            call("str_replace_based_edit_tool", command="view", path=".env"),
            call("str_replace_based_edit_tool", command="view", path="notes.txt"),
            call("search_code", query="canary"),
        ),
        turn("Fix.", FIX, CHECK),
        turn("Done.", FINISH),
    ]
    run = run_local(tmp_path, script, files=files, issue=issue, settings={"webhook_secret": canaries["settings"]})
    assert run.result.outcome == "accepted"
    assert len(run.fake.bodies) == len(script)
    for body in run.fake.bodies:
        for where, canary in canaries.items():
            assert canary not in body, f"the {where} canary reached the model"
            assert canary[-12:] not in body
    view_env = run.actions()[1]
    assert view_env["decision"] == "refused" and "holds secrets" in view_env["observation"]["text"]
    for name in ("trace.jsonl", "pr.md", "evidence.json"):
        text = (run.out / name).read_text()
        assert not any(c in text for c in canaries.values()), name


def test_a_configured_setup_that_fails_without_network_says_how_to_give_it_network(tmp_path: Path) -> None:
    offline = config() + "setup:\n  - python3 -c \"import socket; socket.create_connection(('pypi.org', 443), 5)\"\n"
    run = run_local(tmp_path, [], files=sample_files(**{".github/ai-fix.yml": offline}))
    assert run.result.outcome == "handed_off"
    assert run.result.reason.startswith("environment error during setup:")
    assert "the setup ran without network: `sandbox.network` is `none`" in run.result.reason
    assert any("sandbox: {network: setup}" in step for step in run.result.handoff.next_steps)
