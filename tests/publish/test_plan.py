"""The plan in the issue comment, and the approved approach in the PR body and the check run (pure renderers)."""

from __future__ import annotations

import re

from bot.contract.approach import Approach, ApprovedApproach, Estimate, Proposal, Span
from bot.markdown import is_github_url
from bot.publish.checkrun import render_check_run
from bot.publish.models import Progress
from bot.publish.plan import PlanView, render_plan
from bot.publish.progress import render_progress
from bot.publish.render import render_pr_body
from tests.support.markdown import render
from tests.support.results import accepted, contract

HOSTILE = Approach(
    title="Fix it | ![x](https://evil.example/p.png) @octocat",
    steps=["edit <b>calc.py</b>", "fixes #12"],
    files=["calc.py", "a`b|c.py"],
    impact="callers of add()",
    risks=["[a link](https://evil.example)"],
    rollback="revert",
    tests=["tests/test_calc.py::test_add"],
)
PLAIN = Approach(title="Rewrite add()", steps=["rewrite"], files=["calc.py"], rollback="revert the commit")


def estimate(low: int, high: int, usd: tuple[float, float] | None = (0.0123, 0.0246)) -> Estimate:
    return Estimate(
        model="claude-sonnet-4-5",
        steps=Span(low=low, high=high),
        input_tokens=Span(low=12_000, high=24_000),
        cached_tokens=Span(low=9_000, high=21_000),
        output_tokens=Span(low=600, high=1200),
        usd=Span(low=usd[0], high=usd[1]) if usd else None,
        capped=["steps: the budget stops a run at 8"] if high == 8 else [],
    )


def view(**overrides: object) -> PlanView:
    values: dict[str, object] = {
        "proposal": Proposal(approaches=[HOSTILE, PLAIN], recommended=2, why="smaller | safer"),
        "estimates": [estimate(5, 8), estimate(4, 8, usd=None)],
        "planning_usd": 0.0031,
        "deadline": 1_800_000_000.0,
    }
    values.update(overrides)
    return PlanView.model_validate(values)


def test_the_two_approaches_side_by_side_with_their_estimates_and_the_answers() -> None:
    text = render_plan(view())
    assert "| | Approach 1 | Approach 2 (recommended) |" in text
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| **")}
    assert list(rows) == [
        "| **Approach**",
        "| **Steps**",
        "| **Files it would change**",
        "| **Impact**",
        "| **Risks**",
        "| **Rollback**",
        "| **Tests it would add**",
        "| **Estimate**",
    ]
    assert all(line.count(" | ") == 2 for line in rows.values()), "pipes in the model's text are escaped"
    assert "| **Files it would change** | `calc.py`<br>`` a`b\\|c.py `` | `calc.py` |" in text
    assert rows["| **Tests it would add**"] == "| **Tests it would add** | tests/test_calc.py::test_add | – |"
    assert (
        "5–8 steps; 12.0k–24.0k tokens in (9.0k–21.0k from the cache), 600–1.2k out; $0.0123–$0.0246 "
        "(steps: the budget stops a run at 8)" in rows["| **Estimate**"]
    )
    assert "cost unknown (the model is not in the price table)" in rows["| **Estimate**"]
    assert "**Recommended: approach 2.** Why (the model's words): smaller \\| safer" in text
    assert "This plan itself cost $0.0031." in text
    assert "- `/agent approve`: run approach 2, the recommended one" in text and "- `/agent approve 1`:" in text
    assert "Without an answer by 2027-01-15 08:00 UTC the job is cancelled." in text


def test_the_models_words_render_inert_as_github_renders_them() -> None:
    html = render(render_plan(view()))
    assert "<img" not in html and "<b>" not in html
    assert all(is_github_url(href) for href in re.findall(r'<a href="([^"]*)"', html))
    assert "<code>@octocat</code>" in html and "<code>#12</code>" in html
    assert html.count("<table>") == 1 and html.count("<br>") >= 2


def test_approved_and_revised_plans() -> None:
    approved = ApprovedApproach(number=1, approach=PLAIN, recommended=2, approved_by="maintainer", revision=2)
    text = render_plan(view(approved=approved, revision=2, feedback="keep | it small", feedback_by="maintainer"))
    assert text.startswith("#### ai-fix: two ways to do it (revision 2)")
    assert "Planned again after feedback from `@maintainer`: keep \\| it small" in text
    assert "**Approved**: approach 1 of the plan, *Rewrite add()*, approved by `@maintainer` " in text
    assert "(the plan recommended approach 2)." in text and "/agent approve" not in text


def test_the_progress_comment_while_waiting_and_once_cancelled() -> None:
    progress = Progress(issue_number=3, plan=render_plan(view()), waiting=True, current="plan", contract="C")
    waiting = render_progress(progress)
    assert "- [x] Task contract\n- [ ] **Plan: two approaches, one approved by a maintainer** ⏸️ waiting" in waiting
    assert "---\n\n#### ai-fix: two ways to do it" in waiting, "shown open while it waits"
    progress.waiting, progress.cancelled = False, "no answer to the plan within 7 days (approval_timeout_days)"
    cancelled = render_progress(progress)
    assert "** ❌ stopped here" in cancelled and "- [ ] Pull request" in cancelled
    assert "🛑 **Cancelled** before any change: no answer to the plan within 7 days" in cancelled
    approved = render_progress(Progress(issue_number=3, plan="PLAN", current="baseline"))
    assert "- [x] Plan: two approaches" in approved and "<details><summary>Plan</summary>" in approved
    assert "Plan" not in render_progress(Progress(issue_number=3, current="baseline")), "no plan phase without one"


def test_the_pr_summary_and_the_check_run_name_the_approach_and_who_approved_it() -> None:
    approved = ApprovedApproach(number=2, approach=PLAIN, recommended=1, approved_by="maintainer")
    result = accepted(contract=contract().model_copy(update={"approach": approved}))
    line = "- Approach: approach 2 of the plan, *Rewrite add()*, approved by `@maintainer` (the plan recommended approach 1)"
    summary = render_pr_body(result, issue_number=3).split("## Summary")[1].split("\n## ")[0]
    assert line in summary
    assert line in render_check_run(result).summary
    assert "Approach:" not in render_pr_body(accepted(), issue_number=3), "no line without a plan"
