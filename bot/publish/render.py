"""The pull-request body, rendered from recorded data (checks, diff, trace), never from the model's word.

Text that the model or an issue author wrote is passed through `inert` and labelled as theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.checks.models import CheckRun
from bot.ci.models import CiRound
from bot.contract.models import TaskContract
from bot.contract.render import criterion_label
from bot.loop.result import Cost, RunResult
from bot.markdown import code_span, inert_line, inert_quote
from bot.markers import PR_KIND, marker
from bot.publish.check_table import evidence_section, passing_checks, transitions
from bot.publish.evidence import (
    evidence_line,
    guess_failure,
    not_verified,
    old_failure_lines,
)
from bot.publish.handoff import handoff_lines
from bot.publish.links import run_link
from bot.publish.models import RoundRecord, record_round, rounds_record
from bot.publish.plan import approach_line
from bot.vocabulary import ACCEPTED, FAILED, HANDED_OFF, NEEDS_CLARIFICATION, UNVERIFIED, WorkKind

BODY_LIMIT = 65_536
"""GitHub refuses PR bodies and comments longer than this many characters."""

OUTCOME_WORDS = {
    ACCEPTED: "✅ **Accepted**: the checks pass, every acceptance criterion is shown by evidence ai-fix produced "
    "(a test that fails on the base commit and passes after the change; the checks, for what must keep working), "
    "and the change is inside the contract's scope and limits. What already failed on the base commit is under "
    "*Known risks*, never counted against the change.",
    UNVERIFIED: "🔍 **Unverified**: the checks pass, but ai-fix could not show every acceptance criterion met; "
    "the change is kept as a draft, not vouched for. What is missing is under *Not verified*.",
    HANDED_OFF: "🤝 **Handed off**: the change is not finished; what was done and what is left are under *Handoff*.",
    FAILED: "💥 **Failed**: the run stopped on an error outside the task.",
    NEEDS_CLARIFICATION: "❓ **Needs clarification**: the task cannot be checked as written.",
}


def total_cost(result: RunResult, rounds: Sequence[RoundRecord]) -> Cost:
    """This round's cost plus every earlier round's, so the PR shows what the whole change cost."""
    costs = [r.cost for r in rounds] + [result.cost]
    usd = None if any(c.usd is None for c in costs) else sum(c.usd or 0.0 for c in costs)
    return Cost(
        model=result.cost.model,
        small_model=result.cost.small_model,
        rounds=len(rounds) + 1,
        input_tokens=sum(c.input_tokens for c in costs),
        output_tokens=sum(c.output_tokens for c in costs),
        cache_read_tokens=sum(c.cache_read_tokens for c in costs),
        cache_write_tokens=sum(c.cache_write_tokens for c in costs),
        usd=usd,
        wall_s=sum(c.wall_s for c in costs),
    )


def render_pr_body(
    result: RunResult,
    *,
    issue_number: int | None,
    rounds: Sequence[RoundRecord] = (),
    kind: WorkKind = "issue",
    log_chars: int = 3000,
    run_url: str = "",
    ci: CiRound | None = None,
    records: Sequence[str] = (),
) -> str:
    """The whole PR body; logs shrink until it fits GitHub's limit, the markers always survive.

    `rounds` are the rounds finished before this one; the body records them plus this one (with `ci`, what a
    CI round answered). `records`: other hidden records the body keeps (the CI record). `issue_number` is
    None for a local run: there is no issue to close. `run_url` links the run viewer's page.
    """
    while True:
        history = rounds_record([*rounds, record_round(result, n=len(rounds) + 1, kind=kind, ci=ci)])
        body = (
            "\n\n".join(
                [
                    marker(PR_KIND, issue_number or 0),
                    history,
                    *records,
                    *_sections(result, issue_number, rounds, log_chars, run_url),
                ]
            )
            + "\n"
        )
        if len(body) <= BODY_LIMIT or log_chars == 0:
            break
        log_chars = log_chars // 4 if log_chars > 200 else 0
    return body[:BODY_LIMIT]


def _sections(
    result: RunResult, issue_number: int | None, rounds: Sequence[RoundRecord], log_chars: int, run_url: str
) -> list[str]:
    sections = [
        _summary(result, rounds),
        *([run_link(run_url)] if run_url else []),
        _contract(result.contract),
        _changes(result, rounds),
        evidence_section(result, log_chars),
        _not_verified(result),
        _risks(result),
        _rollback(result),
        _handoff(result),
        _cost(result, rounds),
    ]
    return sections + ([f"Fixes #{issue_number}"] if issue_number else [])


def _summary(result: RunResult, rounds: Sequence[RoundRecord]) -> str:
    passing = passing_checks(result)
    lines = [
        "## Summary",
        "",
        OUTCOME_WORDS[result.outcome],
        "",
        f"Why: {inert_line(result.reason)}",
        "",
        f"- Checks after the change: {passing} of {len(result.contract.checks)} pass"
        + (f" (on the base commit: {_passing(result.baseline)})" if result.baseline else ""),
        f"- Evidence: {evidence_line(result)}",
        f"- {_count(len(result.diff.files), 'file')} changed, +{result.diff.added} −{result.diff.removed} lines",
        f"- Round {len(rounds) + 1}"
        + (f" (earlier rounds: {', '.join(_round_line(r) for r in rounds)})" if rounds else ""),
        *approach_line(result.contract.approach),
    ]
    if result.plan and result.plan.steps:
        lines += ["", "<details><summary>Plan recorded before the first edit</summary>", ""]
        lines += [
            f"{i}. {inert_line(s.do)} (done when: {inert_line(s.done_when)})"
            for i, s in enumerate(result.plan.steps, 1)
        ]
        if result.plan.impact:
            lines.append("\nExpected to change: " + ", ".join(code_span(p) for p in result.plan.impact))
        lines += ["", "</details>"]
    if result.model_summary.strip():
        lines += [
            "",
            "The model's own summary (not verified by ai-fix; the evidence below is):",
            "",
            inert_quote(result.model_summary),
        ]
    return "\n".join(lines)


def _passing(run: CheckRun | None) -> str:
    results = run.results if run else []
    return f"{sum(1 for r in results if r.status == 'pass')} of {len(results)} pass"


def _round_line(r: RoundRecord) -> str:
    return f"{r.n}: {r.kind} → {r.outcome}" + (f" at {r.head_sha[:7]}" if r.head_sha else "")


def _contract(contract: TaskContract) -> str:
    lines = ["## Task contract", "", "<details><summary>The contract this change was held to</summary>", ""]
    lines.append(f"**Goal:** {inert_line(contract.goal) or '(none stated)'}")
    for title, items in (("Non-goals", contract.non_goals), ("Constraints", contract.constraints)):
        if items:
            lines += ["", f"**{title}:**"] + [f"- {inert_line(i)}" for i in items]
    if contract.acceptance_criteria:
        lines += ["", "**Acceptance criteria:**"]
        lines += [f"- {inert_line(c.text)} {criterion_label(c.origin, c.kind)}" for c in contract.acceptance_criteria]
    if contract.feedback:
        lines += ["", "**Reviewer feedback for this round:**"] + [f"- {inert_line(f)}" for f in contract.feedback]
    lines += [
        "",
        "**Scope:** allow "
        + ", ".join(code_span(g) for g in contract.scope.allow)
        + "; deny "
        + ", ".join(code_span(g) for g in contract.scope.deny),
        "",
        "**Checks:**",
    ]
    lines += [
        f"- {code_span(c.name)}: {code_span(c.run)} (timeout {c.timeout} s, from {c.origin})" for c in contract.checks
    ]
    b = contract.budget
    lines += [
        "",
        f"**Limits:** {b.max_steps} steps, ${b.max_cost_usd:g}, {b.max_wall_minutes} min, "
        f"{b.max_files_changed} files, {b.max_lines_changed} lines changed",
        "",
        "</details>",
    ]
    return "\n".join(lines)


def _changes(result: RunResult, rounds: Sequence[RoundRecord]) -> str:
    lines = ["## Changes", ""]
    if rounds:
        lines += [
            f"Round {len(rounds) + 1}'s change, on top of {code_span(result.base_sha[:7])} "
            "(the pull request's whole diff is in its *Files changed* tab):",
            "",
        ]
    if not result.diff.files:
        return "\n".join([*lines, "No files changed."])
    lines += ["| file | status | + | − |", "|---|---|---:|---:|"]
    lines += [f"| {code_span(f.path)} | {f.status} | {f.added} | {f.removed} |" for f in result.diff.files]
    lines.append(
        f"| **{_count(len(result.diff.files), 'file')}** | | **{result.diff.added}** | **{result.diff.removed}** |"
    )
    return "\n".join(lines)


def _not_verified(result: RunResult) -> str:
    items = not_verified(result)
    if not items:
        return "## Not verified\n\nNothing: every acceptance criterion is shown and every contract check ran after the change."
    return "\n".join(["## Not verified", "", *(f"- {i}" for i in items)])


def _risks(result: RunResult) -> str:
    lines = ["## Known risks", ""]
    _, broken = transitions(result.baseline, result.final)
    flaky = [r.name for r in (result.final.results if result.final else []) if r.status == "flaky"]
    outside = (
        sorted({f.path for f in result.diff.files} - set(result.plan.impact))
        if result.plan and result.plan.impact
        else []
    )
    found = [f"- Tests that passed before and fail now: {', '.join(code_span(t) for t in broken)}"] if broken else []
    found += old_failure_lines(result.evidence)
    found += (
        [f"- Flaky checks (passed and failed on the same code): {', '.join(code_span(n) for n in flaky)}"]
        if flaky
        else []
    )
    found += (
        [f"- Files changed outside the plan's expected impact: {', '.join(code_span(p) for p in outside)}"]
        if outside
        else []
    )
    if result.setup and result.setup.guess_failed:
        found.append(
            f"- The setup ai-fix guessed failed, {guess_failure(result)}; the checks ran in the environment as it "
            "was. Add `setup:` to `.github/ai-fix.yml` if the project needs one"
            + (f", starting from {code_span(result.setup.fix)}." if result.setup.fix else ".")
        )
    if (c := result.cost).usd is None:
        tokens = f"{c.input_tokens + c.cache_read_tokens + c.cache_write_tokens:,} in, {c.output_tokens:,} out"
        found.append(
            f"- The cost limit (${result.contract.budget.max_cost_usd:g}) could not apply: a model used has no price "
            f"(the operator's AIFIX_MODEL_PRICES gives one). Tokens used: {tokens}."
        )
    found += [f"- {inert_line(r)} _(reported by the model)_" for r in result.risks]
    return "\n".join(lines + (found or ["None recorded."]))


def _rollback(result: RunResult) -> str:
    branch = code_span(result.branch) if result.branch else "the PR branch"
    base = f" (based on {code_span(result.base_sha[:12])})" if result.base_sha else ""
    return "\n".join(
        [
            "## Rollback",
            "",
            f"Before merging: close this PR and delete {branch}{base}; nothing else was changed.",
            "After merging: use GitHub's **Revert** button on this PR, or "
            + code_span("git revert -m 1 <merge commit>")
            + " (for a squash merge: "
            + code_span("git revert <squash commit>")
            + ").",
        ]
    )


def _handoff(result: RunResult) -> str:
    h = result.handoff
    if result.accepted and not (h.not_done or h.ruled_out or h.question or h.next_steps):
        return (
            "## Handoff\n\nNothing left to hand off: the checks pass and every criterion is shown. "
            "Review the diff and merge or comment."
        )
    return "\n".join(["## Handoff", "", *handoff_lines(result)])


def _cost(result: RunResult, rounds: Sequence[RoundRecord]) -> str:
    c = total_cost(result, rounds)
    usd = f"${c.usd:.4f}" if c.usd is not None else "unknown (a model used has no price; AIFIX_MODEL_PRICES gives one)"
    models = code_span(c.model or "unknown") + (f" (small: {code_span(c.small_model)})" if c.small_model else "")
    return "\n".join(
        [
            "## Cost",
            "",
            "| model | rounds | steps | tokens in | tokens out | cache read | cache write | dollars | wall time |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {models} | {c.rounds} | {result.steps + sum(r.steps for r in rounds)} | {c.input_tokens:,} | {c.output_tokens:,} "
            f"| {c.cache_read_tokens:,} | {c.cache_write_tokens:,} | {usd} | {_duration(c.wall_s)} |",
        ]
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
