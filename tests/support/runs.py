"""Shared by the loop tests and the demo recording: sample repos, scripts, and a local run against the fake API."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.commands.demo import make_repo, sample
from bot.commands.run import execute
from bot.loop.result import RunResult
from bot.model.scripted import ScriptedModel, Turn, call, turn
from bot.settings import load_settings
from tests.support.model import FakeMessagesAPI, anthropic_model, serve_fake_api

MODEL = "claude-haiku-4-5"
"""In the price table and not flagged as deprecated by the SDK."""

PLAN = call(
    "plan",
    steps=[{"do": "make add() return a + b", "done_when": "tests: test_add and test_total pass"}],
    impact=["calc.py"],
)
VIEW = call("str_replace_based_edit_tool", command="view", path="calc.py")
FIX = call(
    "str_replace_based_edit_tool",
    command="str_replace",
    path="calc.py",
    old_str="    return a - b",
    new_str="    return a + b",
)
CHECK = call("run_checks", names=["tests"], expect="tests: test_add passes")
FINISH = call(
    "finish",
    summary="add() now returns a + b, so total() sums as well.",
    risks=["none known: a one-character fix covered by the existing tests"],
)

DEMO_SCRIPT: list[Turn] = [
    turn("The test says add(2, 3) must be 5. I will read calc.py, fix add(), and run the tests.", PLAN),
    turn("Reading the code and where add() is used.", VIEW, call("search_code", query="add(", path_glob="**/*.py")),
    turn("add() subtracts: replace `a - b` with `a + b`.", FIX, CHECK),
    turn("The tests pass; asking the harness to verify.", FINISH),
]


def sample_files(**changes: str | None) -> dict[str, str]:
    """The demo's sample repository, with files replaced (or removed when None)."""
    files, _issue = sample()
    for path, text in changes.items():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text
    return files


def sample_issue() -> str:
    return sample()[1]


def config(
    check: str = "python3 -m unittest discover -s tests -t . -v",
    *,
    model: str = MODEL,
    small: str = MODEL,
    **budget: int,
) -> str:
    limits = {
        "max_steps": 10,
        "max_cost_usd": 1,
        "max_wall_minutes": 5,
        "max_files_changed": 3,
        "max_lines_changed": 40,
        "max_retries_same_failure": 2,
    }
    limits.update(budget)
    lines = [
        "checks:",
        "  - name: tests",
        f"    run: {check}",
        "    timeout: 60",
        "scope:",
        '  allow: ["**"]',
        '  deny: ["vendor/**"]',
        "budget:",
    ]
    lines += [f"  {k}: {v}" for k, v in limits.items()]
    lines += ["model:", f"  name: {model}", f"  small: {small}"]
    return "\n".join(lines) + "\n"


class LocalRun:
    def __init__(self, result: RunResult, fake: FakeMessagesAPI, out: Path, repo: Path, log: str) -> None:
        self.result, self.fake, self.out, self.repo, self.log = result, fake, out, repo, log

    def trace(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.out / "trace.jsonl").read_text().splitlines()]

    def actions(self) -> list[dict[str, Any]]:
        return [a for r in self.trace() if r["kind"] == "step" for a in r["actions"]]


def run_local(
    tmp_path: Path,
    script: Sequence[Turn],
    *,
    files: dict[str, str] | None = None,
    issue: str | None = None,
    failures: Sequence[tuple[int, dict[str, str]]] = (),
    settings: dict[str, Any] | None = None,
) -> LocalRun:
    """`execute` (what `ai-fix run` does) on a fresh sample repo, with the real Anthropic client on the fake API."""
    repo = make_repo(
        tmp_path / "repo", files if files is not None else sample_files(**{".github/ai-fix.yml": config()})
    )
    out = tmp_path / "out"
    stream = io.StringIO()
    with serve_fake_api(ScriptedModel(list(script))) as (fake, url):
        fake.failures = list(failures)
        result = execute(
            issue or sample_issue(),
            repo,
            out,
            settings=load_settings(work_dir=tmp_path / "work", **(settings or {})),
            model=lambda _choice: anthropic_model(url),
            model_name=None,
            sandbox_kind="bwrap",
            stream=stream,
        )
    return LocalRun(result, fake, out, repo, stream.getvalue())
