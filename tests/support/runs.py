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
from bot.model.anthropic_backend import AnthropicModel
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
SAMPLE_CRITERIA = [
    {"criterion": "`add(2, 3)` returns 5", "test": "tests/test_calc.py::CalcTest::test_add"},
    {"criterion": "`total([1, 2, 3])` returns 6", "test": "tests/test_calc.py::CalcTest::test_total"},
]
"""The sample issue's two criteria and the existing tests that show them (they fail on the base commit)."""
FINISH = call(
    "finish",
    summary="add() now returns a + b, so total() sums as well.",
    risks=["none known: a one-character fix covered by the existing tests"],
    criteria=SAMPLE_CRITERIA,
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
    def __init__(
        self, result: RunResult, fake: FakeMessagesAPI, out: Path, repo: Path, log: str, models: list[AnthropicModel]
    ) -> None:
        self.result, self.fake, self.out, self.repo, self.log = result, fake, out, repo, log
        self.models = models
        """Each model the run opened."""

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
    models: list[AnthropicModel] = []
    with serve_fake_api(ScriptedModel(list(script))) as (fake, url):

        def open_model(_choice: object) -> AnthropicModel:
            models.append(anthropic_model(url))
            return models[-1]

        fake.failures = list(failures)
        result = execute(
            issue or sample_issue(),
            repo,
            out,
            settings=load_settings(work_dir=tmp_path / "work", **(settings or {})),
            model=open_model,
            model_name=None,
            sandbox_kind="bwrap",
            stream=stream,
        )
    return LocalRun(result, fake, out, repo, stream.getvalue(), models)


MUL_FILES = {
    "calc.py": (
        '"""Multiplication."""\n\n\n'
        "def mul(a: int, b: int) -> int:\n"
        "    if a < 0:\n"
        "        return -a * b\n"
        "    return a * b\n\n\n"
        "def double(a: int) -> int:\n"
        "    return mul(a, 2)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_calc.py": (
        "import unittest\n\nfrom calc import double, mul\n\n\n"
        "class MulTest(unittest.TestCase):\n"
        "    def test_mul(self) -> None:\n"
        "        self.assertEqual(mul(2, 3), 6)\n\n"
        "    def test_double(self) -> None:\n"
        "        self.assertEqual(double(4), 8)\n"
    ),
}
"""A repository whose tests pass on the base commit while `mul(-2, 3)` is wrong: the report has no failing test."""
MUL_ISSUE = (
    "# mul(-2, 3) returns 6 instead of -6\n\n"
    "`mul` gets the sign wrong when the first argument is negative.\n\n"
    "## Acceptance criteria\n- `mul(-2, 3)` returns -6\n"
)
MUL_FIX = call(
    "str_replace_based_edit_tool",
    command="str_replace",
    path="calc.py",
    old_str="    if a < 0:\n        return -a * b\n    return a * b",
    new_str="    return a * b",
)
MUL_TEST = call(
    "str_replace_based_edit_tool",
    command="str_replace",
    path="tests/test_calc.py",
    old_str="    def test_double(self) -> None:",
    new_str="    def test_negative(self) -> None:\n        self.assertEqual(mul(-2, 3), -6)\n\n    def test_double(self) -> None:",
)
MUL_PLAN = call(
    "plan", steps=[{"do": "fix the sign in mul()", "done_when": "a test of mul(-2, 3) passes"}], impact=["calc.py"]
)


def mul_files(check: str = "python3 -m unittest discover -s tests -t . -v", **changes: str) -> dict[str, str]:
    return {**MUL_FILES, ".github/ai-fix.yml": config(check), **changes}
