"""Plans for the sample repository: two approaches the scripted model proposes, and turns that check what a
request carries (the approved approach, and not the other)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.commands.demo import make_repo
from bot.commands.run import plan_only
from bot.loop.planning import PlanResult
from bot.model.base import ModelRequest
from bot.model.scripted import ScriptedModel, Turn, call, turn
from bot.settings import load_settings
from tests.support.model import FakeMessagesAPI, anthropic_model, serve_fake_api
from tests.support.runs import VIEW, config, sample_files, sample_issue

IN_PLACE: dict[str, Any] = {
    "title": "Fix add() where it subtracts",
    "steps": ["replace `a - b` with `a + b` in add()"],
    "files": ["calc.py"],
    "impact": "total() sums through add(), so it is fixed too",
    "risks": ["none beyond add() itself; tests/test_calc.py already fails on the base commit"],
    "rollback": "revert the one commit",
    "tests": [],
}
WITH_SUM: dict[str, Any] = {
    "title": "Fix add() and let total() use sum()",
    "steps": ["replace `a - b` with `a + b` in add()", "make total() return sum(values)"],
    "files": ["calc.py"],
    "impact": "total() no longer calls add()",
    "risks": ["total() of an empty list returns 0 instead of 0.0"],
    "rollback": "revert the commit",
    "tests": ["tests/test_calc.py::CalcTest::test_total"],
}
PROPOSE = call("propose", approaches=[IN_PLACE, WITH_SUM], recommended=1, why="the smallest change that fixes both")
PLAN_SCRIPT: list[Turn] = [turn("Read the code first.", VIEW), turn("Two ways to fix it.", PROPOSE)]


def request_text(request: ModelRequest) -> str:
    return request.system + str(request.messages)


def carries(present: str, absent: str, reply: Turn) -> Any:
    """A turn that first checks the request holds `present` and not `absent` (the approved approach, not the other)."""

    def answer(request: ModelRequest) -> Turn:
        text = request_text(request)
        assert present in text and absent not in text, f"{present!r} not in, or {absent!r} in, the model's context"
        return reply

    return answer


class LocalPlan:
    def __init__(self, result: PlanResult, fake: FakeMessagesAPI, out: Path, repo: Path, log: str) -> None:
        self.result, self.fake, self.out, self.repo, self.log = result, fake, out, repo, log

    def trace(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.out / "trace.jsonl").read_text().splitlines()]

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(b) for b in self.fake.bodies]


def plan_local(tmp_path: Path, script: Sequence[Turn], *, files: dict[str, str] | None = None) -> LocalPlan:
    """`plan_only` (what `ai-fix run --plan-only` does) on a fresh sample repo, the real Anthropic client on the fake API."""
    repo = make_repo(
        tmp_path / "repo", files if files is not None else sample_files(**{".github/ai-fix.yml": config()})
    )
    out, stream = tmp_path / "out", io.StringIO()
    with serve_fake_api(ScriptedModel(list(script))) as (fake, url):
        result = plan_only(
            sample_issue(),
            repo,
            out,
            settings=load_settings(work_dir=tmp_path / "work"),
            model=lambda _choice: anthropic_model(url),
            model_name=None,
            sandbox_kind="bwrap",
            stream=stream,
        )
    return LocalPlan(result, fake, out, repo, stream.getvalue())
