"""Pure renderers: the contract, clarification and config-error sections of the issue comment, and
the files `ai-fix init` writes. Text from the issue is echoed as inert quoted data by delivery's
safety rules: no image or link to a host other than GitHub, no @-mention, no closing keyword."""

from __future__ import annotations

from string import Template

import yaml

from bot.contract.models import Check, TaskContract
from bot.contract.pysetup import readable
from bot.contract.templates import template
from bot.markdown import code_block, code_span, inert_line, inert_quote

MAX_COMMENT_CHARS = 40_000
"""GitHub rejects comment bodies over 65,536 characters; the contract shares the comment with the progress."""
RESTART = "Edit the issue and re-label it, or comment `/agent retry`, to start again."


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {inert_line(i)}" for i in items)


def _cap(body: str) -> str:
    if len(body) <= MAX_COMMENT_CHARS:
        return body
    return body[: MAX_COMMENT_CHARS - 60] + "\n\n… (truncated: the full contract is in the job's evidence)"


FALLBACK = " (when pip cannot install the project: its dependencies, and its source first on the import path)"


def _checks_table(checks: list[Check]) -> str:
    rows = [
        f"| {c.name} | {code_span(c.run).replace('|', chr(92) + '|')} | {c.timeout} s | "
        f"{c.origin}{': ' + inert_line(c.source).replace('|', chr(92) + '|') if c.source else ''} |"
        for c in checks
    ]
    return "\n".join(["| check | command | timeout | from |", "|---|---|---|---|", *rows])


KIND_LEGEND = (
    "_behaviour_: shown by a test that fails on the base commit and passes after the change; _regression_: by the "
    "checks, with nothing that passed on the base commit failing, skipped or gone; _reviewer_: for a person to judge."
)
"""What each criterion kind needs, said under every list of criteria a person reads."""


def criterion_label(origin: str, kind: str) -> str:
    """Where a criterion came from and what shows it, after its text: `_(stated · behaviour)_`."""
    return f"_({origin} · {kind})_"


def render_contract_comment(contract: TaskContract) -> str:
    """The "what I am going to do" comment posted before work starts (status ready)."""
    c = contract
    b = c.budget
    out = ["#### ai-fix: what I am going to do", "", "**Goal**", "", inert_quote(c.goal), ""]
    out += ["**Acceptance criteria**", ""]
    out += [f"- [ ] {inert_line(a.text)} {criterion_label(a.origin, a.kind)}" for a in c.acceptance_criteria] or [
        "- (none)"
    ]
    out += ["", KIND_LEGEND] if c.acceptance_criteria else []
    for title, items in (
        ("Non-goals", c.non_goals),
        ("Constraints", c.constraints),
        ("Feedback for this round", c.feedback),
    ):
        if items:
            out += ["", f"**{title}**", "", _bullets(items)]
    out += [
        "",
        f"**Scope**: may change {', '.join(map(code_span, c.scope.allow)) or 'nothing'}; "
        f"never {', '.join(map(code_span, c.scope.deny))}.",
        "",
    ]
    if c.checks:
        out += ["**Checks** (run by the harness before and after the change, never chosen by the model)", ""]
        out += [_checks_table(c.checks)]
    else:
        out += ["**Checks**: none found. Add `checks:` to `.github/ai-fix.yml` so the result can be verified."]
    out += _setup_lines(c)
    out += [
        "",
        f"**Budget**: {b.max_steps} steps, ${b.max_cost_usd:.2f}, {b.max_wall_minutes} min, at most "
        f"{b.max_files_changed} files and {b.max_lines_changed} lines changed.",
    ]
    out += _governance_lines(c)
    out += ["", f"<sub>Contract taken at {c.provenance.snapshot_at}. {RESTART}</sub>"]
    return _cap("\n".join(out) + "\n")


def _setup_lines(c: TaskContract) -> list[str]:
    """The setup commands, each with where it was found when detected."""
    if not c.setup:
        return []
    origin = " (detected; `setup:` in `.github/ai-fix.yml` replaces it)" if c.setup_origin == "detected" else ""
    secrets = f"; setup secrets: {', '.join(map(code_span, c.setup_secrets))}" if c.setup_secrets else ""
    if not c.setup_sources:
        return ["", f"**Setup**{origin}: {', '.join(map(code_span, c.setup))} (network: {c.sandbox.network}{secrets})"]
    return [
        "",
        f"**Setup**{origin} (network: {c.sandbox.network}{secrets}):",
        "",
        *(
            f"- {code_span(readable(cmd))}{FALLBACK if readable(cmd) != cmd else ''} ← {inert_line(src)}"
            for cmd, src in zip(c.setup, c.setup_sources, strict=False)
        ),
    ]


def _governance_lines(c: TaskContract) -> list[str]:
    """Approval, what the issue could not widen, untrusted comments kept as data, the instruction files read."""
    out: list[str] = []
    if c.approval.mode == "plan":
        out += [
            "",
            f"**Approval**: two approaches are proposed first; nothing changes until a maintainer approves one "
            f"(asked by {inert_line(c.approval.source)}; the plan waits {c.approval.wait_words()} for an answer).",
        ]
    if c.provenance.ignored:
        out += [
            "",
            "**Not applied** (an issue may narrow the configuration, never widen it)",
            "",
            _bullets(c.provenance.ignored),
        ]
    if c.provenance.untrusted:
        n = len(c.provenance.untrusted)
        out += ["", f"**Untrusted text**: {n} comment{'s' if n != 1 else ''} by people without write access "
                "kept as quoted data only; not instructions."]  # fmt: skip
    if c.conventions.files:
        out += ["", f"**Instruction files** (default branch): {', '.join(map(code_span, c.conventions.files))}"]
    return out


def render_clarification_comment(contract: TaskContract) -> str:
    """The comment that says exactly what is missing (status needs_clarification), with an example."""
    out = [
        "#### ai-fix needs more before it starts",
        "",
        "I could not tell how to verify this request, so I have not changed anything. What I need:",
        "",
        _bullets(contract.missing),
        "",
        "Add sections like these to the issue (`##` or `###` headings, any case; all optional but one of "
        "acceptance criteria or evidence):",
        "",
        "````markdown",
        template("clarification-example.md").rstrip(),
        "````",
    ]
    if contract.checks:
        out += ["", f"Checks available by name: {', '.join(code_span(ch.name) for ch in contract.checks)}."]
    if contract.provenance.ignored:
        out += ["", "Also not applied:", "", _bullets(contract.provenance.ignored)]
    out += ["", RESTART]
    return _cap("\n".join(out) + "\n")


def render_config_error_comment(error: str) -> str:
    """The comment posted when `.github/ai-fix.yml` is broken (nothing starts until it is fixed)."""
    return _cap(
        "\n".join(
            [
                "#### ai-fix cannot read `.github/ai-fix.yml`",
                "",
                "The configuration on the default branch has errors, so I have not started. Fix them:",
                "",
                code_block(error, "text"),
                "",
                RESTART,
            ]
        )
        + "\n"
    )


def render_config_file(checks: list[Check]) -> str:
    """The commented `.github/ai-fix.yml` for `ai-fix init`, listing the checks detected."""
    if checks:
        entries = [{"name": c.name, "run": c.run, "timeout": c.timeout} for c in checks]
        block = yaml.safe_dump({"checks": entries}, sort_keys=False, default_flow_style=False, width=1000).rstrip()
    else:
        block = (
            "# No checks were detected: name the commands that decide success, e.g.\n"
            "# checks:\n#   - name: tests\n#     run: python -m pytest -q\n#     timeout: 600"
        )
    return Template(template("config.yml")).substitute(checks=block)


def render_issue_form() -> str:
    """The issue form `.github/ISSUE_TEMPLATE/ai-fix.yml` with the contract sections."""
    return template("issue-form.yml")
