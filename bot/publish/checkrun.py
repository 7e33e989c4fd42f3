"""The `ai-fix` check run on the PR's head commit: conclusion, summary and test annotations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from bot.loop.result import RunResult
from bot.markdown import code_span, inert_line
from bot.publish.check_table import passing_checks, status, transitions
from bot.publish.links import run_link
from bot.publish.plan import approach_line
from bot.publish.render import OUTCOME_WORDS
from bot.vocabulary import ACCEPTED, FAILED, HANDED_OFF, NEEDS_CLARIFICATION, UNVERIFIED

CHECK_NAME = "ai-fix"
TEXT_LIMIT = 65_535
"""GitHub's limit for `output.summary` and `output.text`."""
ANNOTATIONS_PER_REQUEST = 50

Conclusion = Literal["success", "neutral", "failure", "action_required"]
CONCLUSIONS: dict[str, Conclusion] = {
    ACCEPTED: "success",
    UNVERIFIED: "neutral",
    HANDED_OFF: "failure",
    FAILED: "failure",
    NEEDS_CLARIFICATION: "action_required",
}


class CheckRunOutput(BaseModel):
    conclusion: Conclusion
    title: str
    summary: str
    text: str
    annotations: list[dict[str, Any]] = Field(default_factory=list)

    def batches(self) -> list[list[dict[str, Any]]]:
        """Annotations split into GitHub's 50-per-request batches (later batches go in updates)."""
        a = self.annotations
        return [a[i : i + ANNOTATIONS_PER_REQUEST] for i in range(0, len(a), ANNOTATIONS_PER_REQUEST)] or [[]]


def render_check_run(result: RunResult, *, pr_url: str = "", run_url: str = "") -> CheckRunOutput:
    passing = passing_checks(result)
    title = f"{result.outcome.replace('_', ' ')}: {passing} of {len(result.contract.checks)} checks pass"
    summary = "\n".join(
        [OUTCOME_WORDS[result.outcome], "", f"Why: {inert_line(result.reason)}"]
        + (["", *approach_line(result.contract.approach)] if result.contract.approach else [])
        + (["", f"Pull request: {pr_url}"] if pr_url else [])
        + (["", run_link(run_url)] if run_url else [])
    )
    rows = ["| check | base | after |", "|---|---|---|"]
    for check in result.contract.checks:
        base = result.baseline.result(check.name) if result.baseline else None
        after = result.final.result(check.name) if result.final else None
        rows.append(f"| {code_span(check.name)} | {status(base)} | {status(after)} |")
    fixed, _ = transitions(result.baseline, result.final)
    if fixed:
        rows += ["", "Tests that went from failing to passing: " + ", ".join(code_span(t) for t in fixed)]
    return CheckRunOutput(
        conclusion=CONCLUSIONS[result.outcome],
        title=title[:255],
        summary=summary[:TEXT_LIMIT],
        text="\n".join(rows)[:TEXT_LIMIT],
        annotations=failing_test_annotations(result),
    )


def failing_test_annotations(result: RunResult) -> list[dict[str, Any]]:
    """One `failure` annotation per failing test whose file and line are known."""
    out = []
    for r in result.final.results if result.final else []:
        for t in r.tests:
            if t.status in ("fail", "error") and t.file and t.line:
                out.append(
                    {
                        "path": t.file,
                        "start_line": t.line,
                        "end_line": t.line,
                        "annotation_level": "failure",
                        "title": t.id[:255],
                        "message": (t.message or f"{t.id} {t.status}s")[:TEXT_LIMIT],
                    }
                )
    return out
