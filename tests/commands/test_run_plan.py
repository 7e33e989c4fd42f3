"""`ai-fix run --plan-only` then `ai-fix run --approach N`, through the real command line, on the sample repository
(bwrap runs its tests for the baseline), with the real Anthropic client on the fake Messages API."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bot.commands.demo import make_repo
from bot.commands.main import main
from bot.model.scripted import ScriptedModel, turn
from tests.support.model import serve_fake_api
from tests.support.plans import IN_PLACE, PLAN_SCRIPT, WITH_SUM, carries
from tests.support.runs import CHECK, FINISH, FIX, PLAN, config, sample_files, sample_issue

pytestmark = pytest.mark.bwrap


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFIX_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("AIFIX_SANDBOX", "bwrap")
    monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-cli-test-key-zqxjvkwpb")
    (tmp_path / "issue.md").write_text(sample_issue())
    return tmp_path


def run(env: Path, monkeypatch: pytest.MonkeyPatch, url: str, *flags: str, out: str) -> int:
    monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
    return main(["run", "--repo", str(env / "repo"), "--issue", str(env / "issue.md"), "--out", str(env / out), *flags])


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def branches(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "branch", "--format=%(refname:short)"], check=True, capture_output=True, text=True
    )
    return out.stdout.split()


def test_plan_only_prints_both_approaches_and_an_estimate_then_approach_2_runs(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": config()}))
    with serve_fake_api(ScriptedModel(list(PLAN_SCRIPT))) as (fake, url):
        assert run(env, monkeypatch, url, "--plan-only", out="plan") == 0
    printed = capsys.readouterr().out
    assert "approach 1 (recommended): Fix add() where it subtracts" in printed
    assert "approach 2: Fix add() and let total() use sum()" in printed
    assert "  step 2: make total() return sum(values)" in printed and "  rollback: revert the one commit" in printed
    assert "recommended: approach 1: the smallest change that fixes both" in printed
    estimate = [line for line in printed.splitlines() if "estimate: " in line and " steps; " in line]
    # Approach 1: plan, finish, one step and one file (4); approach 2: two steps, a file and a test (6); twice for retries.
    assert "4–8 steps" in estimate[0] and "6–10 steps" in estimate[1], estimate
    assert "(steps: the budget stops a run at 10)" in estimate[1] and "on claude-haiku-4-5" in estimate[0]
    assert "estimate method: steps from the approach's size" in printed
    requests = [json.loads(b) for b in fake.bodies]
    assert [[t["name"] for t in r["tools"]] for r in requests] == [
        ["str_replace_based_edit_tool", "search_code", "propose"]
    ] * 2
    assert "planning one task in a git repository before anything is changed" in requests[0]["system"][0]["text"]
    assert "## Baseline on the base commit\ntests: fail" in json.dumps(requests[0]["messages"]).replace("\\n", "\n")
    assert branches(repo) == ["main"], "planning leaves no branch in the repository"
    assert (
        subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"], check=True, capture_output=True, text=True
        ).stdout
        == ""
    )
    [proposal] = [r for r in lines(env / "plan" / "trace.jsonl") if r["kind"] == "proposal"]
    assert [a["title"] for a in proposal["proposal"]["approaches"]] == [IN_PLACE["title"], WITH_SUM["title"]]
    assert [e["steps"] for e in proposal["estimates"]] == [{"low": 4, "high": 8}, {"low": 6, "high": 10}]
    assert proposal["cost"]["usd"] > 0 and json.loads((env / "plan" / "plan.json").read_text())["commit"]

    steps = [turn("Plan.", PLAN), turn("Fix.", FIX, CHECK), turn("Done.", FINISH)]
    with serve_fake_api(ScriptedModel([carries(WITH_SUM["title"], IN_PLACE["title"], t) for t in steps])) as (
        fake,
        url,
    ):
        assert run(env, monkeypatch, url, "--approach", "2", out="run") == 0
    printed = capsys.readouterr().out
    assert "approach: 2: Fix add() and let total() use sum()" in printed and "done: accepted" in printed
    assert len(fake.bodies) == 3, "every request carried approach 2 and not approach 1"
    pr = (env / "run" / "pr.md").read_text()
    summary = pr.split("## Summary")[1].split("## ")[0]
    assert "- Approach: approach 2 of the plan, *Fix add() and let total() use sum()*, approved by `@local`" in summary
    trace = lines(env / "run" / "trace.jsonl")
    assert (
        trace[0]["contract"]["approach"]["number"] == 2 and trace[0]["contract"]["approach"]["approved_by"] == "local"
    )
    end = trace[-1]
    assert end["kind"] == "end" and end["estimate"]["estimate"]["steps"] == {"low": 6, "high": 10}
    assert end["estimate"]["steps"] == 3 and end["estimate"]["within"]["steps"] is False, "3 steps: below the estimate"
    assert end["estimate"]["usd"] == end["cost"]["usd"]


def test_approach_without_a_plan_stops_with_what_to_run(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": config()}))
    assert run(env, monkeypatch, "http://127.0.0.1:9", "--approach", "1", out="run") == 2
    assert (
        "no plan for this task at this commit: run the same command with --plan-only first" in capsys.readouterr().err
    )
