"""`ai-fix run` and `ai-fix demo` through the real command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bot.commands.demo import make_repo
from bot.commands.main import main
from bot.model.base import ModelRequest, ModelResponse
from bot.model.scripted import ScriptedModel, Turn
from tests.support.model import serve_fake_api
from tests.support.runs import DEMO_SCRIPT, config, sample_files

pytestmark = pytest.mark.bwrap


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFIX_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("AIFIX_SANDBOX", "bwrap")
    for name in ("AIFIX_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY", "AIFIX_OPENAI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def git_branches(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "branch"], capture_output=True, text=True, check=True).stdout


def test_run_with_a_task_exits_0_and_writes_the_three_files(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": config()}))
    task = "add() subtracts instead of adding\nThe tests fail with:\nAssertionError: -1 != 5"
    with serve_fake_api(ScriptedModel(list(DEMO_SCRIPT))) as (fake, url):
        monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-cli-test-key-0000000000")
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
        code = main(["run", "--repo", str(repo), "--task", task, "--out", str(env / "out")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert {p.name for p in (env / "out").iterdir()} == {"pr.md", "trace.jsonl", "evidence.json"}
    assert json.loads((env / "out" / "evidence.json").read_text())["accepted"] is True
    assert "ai-fix/local-add-subtracts-instead-of-adding" in printed and "done: accepted after 4 steps" in printed
    assert f"follow the run in a browser: ai-fix view {env / 'out' / 'trace.jsonl'}" in printed
    assert "sk-ant-cli-test-key" not in "".join(fake.bodies)


def test_run_exits_1_when_handed_off(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": config(check="no-such-runner")}))
    issue = env / "issue.md"
    issue.write_text("# add() subtracts\n\n## Acceptance criteria\n- add(2, 3) returns 5\n")
    with serve_fake_api(ScriptedModel([])) as (fake, url):
        monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-cli-test-key-0000000000")
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
        code = main(["run", "--repo", str(repo), "--issue", str(issue), "--out", str(env / "out")])
    assert code == 1 and fake.bodies == []
    assert json.loads((env / "out" / "evidence.json").read_text())["outcome"] == "handed_off"
    assert "environment error" in capsys.readouterr().out


def test_an_unclear_task_exits_1_without_a_branch_or_model_turn(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": config()}))
    monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-cli-test-key-0000000000")
    monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert main(["run", "--repo", str(repo), "--task", "make it better", "--out", str(env / "out")]) == 1
    assert "needs_clarification" in capsys.readouterr().out
    assert json.loads((env / "out" / "evidence.json").read_text())["outcome"] == "needs_clarification"
    assert "ai-fix/" not in git_branches(repo)


def test_run_usage_errors_exit_2_with_a_fix(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(env / "repo", sample_files())
    task = "add() subtracts instead of adding\nThe tests fail with:\nAssertionError: -1 != 5"
    assert main(["run", "--repo", str(repo), "--task", task]) == 2
    err = capsys.readouterr().err
    assert "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set" in err and "claude-" in err
    assert "ai-fix/" not in git_branches(repo), "the key is checked before any branch is made"
    assert (
        main(["run", "--repo", str(env / "nowhere"), "--task", "fix it", "--model", f"replay:{env / 'none.jsonl'}"])
        == 2
    )
    assert "cannot read the trace" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["run", "--repo", str(repo)])
    assert usage.value.code == 2


def test_demo_replays_the_recorded_session_without_a_key(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "a REPLAY of a recorded session" in out
    for seen in (
        "contract: add() subtracts instead of adding",
        "baseline: tests fail",
        "edit: str_replace calc.py",
        "checks: tests pass",
        "+    return a + b",
        "## Evidence",
    ):
        assert seen in out
    assert "replay]" in out


class HoldsTheFirstTurn(ScriptedModel):
    """Blocks the first model turn until released, so the test can kill the run mid-job."""

    def __init__(self, turns: list[Turn]) -> None:
        super().__init__(turns)
        self.arrived, self.release = threading.Event(), threading.Event()

    def complete(self, request: ModelRequest) -> ModelResponse:
        if not self.arrived.is_set():
            self.arrived.set()
            self.release.wait(30)
        return super().complete(request)


def test_a_run_killed_midway_does_not_block_the_next_run_on_the_same_repo(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": config()}))
    task = "add() subtracts instead of adding\nThe tests fail with:\nAssertionError: -1 != 5"
    monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-cli-test-key-0000000000")
    held = HoldsTheFirstTurn(list(DEMO_SCRIPT))
    with serve_fake_api(held) as (_, url):
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
        crashed = subprocess.Popen(
            [sys.executable, "-m", "bot.commands.main", "run", "--repo", str(repo), "--task", "first: " + task, "--out", str(env / "first")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            assert held.arrived.wait(60), "the first run never reached the model"
            os.killpg(crashed.pid, signal.SIGKILL)  # mid-job: its workspace is left behind, as after a crash
            crashed.wait(10)
        finally:
            held.release.set()
    with serve_fake_api(ScriptedModel(list(DEMO_SCRIPT))) as (_, url):
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
        code = main(["run", "--repo", str(repo), "--task", task, "--out", str(env / "second")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert json.loads((env / "second" / "evidence.json").read_text())["accepted"] is True
    [leftover] = (env / "work" / "local").iterdir()  # the second run's own directory is gone
    assert any(leftover.iterdir()), "the killed run's directory is left as it was"
    branches = subprocess.run(
        ["git", "-C", str(repo), "branch", "--list", "ai-fix/*"], capture_output=True, text=True, check=True
    ).stdout
    assert "ai-fix/local-first-add-subtracts-instead-of-adding" in branches  # the crashed run's branch stays
    assert "ai-fix/local-add-subtracts-instead-of-adding" in branches
