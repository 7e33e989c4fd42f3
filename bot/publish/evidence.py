"""The evidence as people read it: the reproduction (each test's base failure and after status), the
criteria and what shows each one, weakened tests and added skip markers, and what is not verified."""

from __future__ import annotations

from bot.contract.render import KIND_LEGEND, criterion_label
from bot.evidence.models import Evidence
from bot.loop.result import RunResult
from bot.markdown import code_span, inert_line

REPRO_WORDS = {
    "verified": "the report is reproduced: these tests fail on the base commit and pass after the change",
    "missing": "no test reproduces the report (none fails on the base commit and passes after the change)",
    "passes_on_base": "the change's tests pass on the base commit too, so they do not reproduce the report",
    "fails_after": "the change's tests do not pass after the change",
    "not_collected_on_base": "the change's tests cannot be collected on the base commit (new behaviour)",
}


def reproduction_lines(evidence: Evidence) -> list[str]:
    """The reproduction: what ran on the base commit's code (with the change's own test files laid over) and after."""
    repro = evidence.reproduction
    base = f" (against {code_span(evidence.base_sha[:12])})" if evidence.base_sha else ""
    lines = [f"**Reproduction{base}: {repro.status.replace('_', ' ')}** — {REPRO_WORDS[repro.status]}."]
    if repro.tests:
        lines += ["", "| test | on the base commit | after | how it failed on the base commit |", "|---|---|---|---|"]
        for t in repro.tests:
            how = "the change's test file on the base code" if t.laid_over else "the base commit's own test"
            message = inert_line(t.message[:300]) if t.message else "–"
            lines.append(f"| {code_span(t.id)} | {t.base} ({how}) | {t.after} | {message} |")
    return lines


def criteria_lines(evidence: Evidence) -> list[str]:
    """Each acceptance criterion with the evidence that shows it, or what is missing."""
    lines = ["**Acceptance criteria:**"]
    for c in evidence.criteria:
        mark = "🧑‍⚖️" if c.for_reviewer else "✅" if c.verified else "❌"
        by = f" — shown by {', '.join(code_span(b) for b in c.by)}" if c.verified and c.by else ""
        note = f" ({inert_line(c.note)})" if c.note else ""
        lines.append(f"- {mark} {inert_line(c.text)} {criterion_label(c.origin, c.kind)}{by}{note}")
    return [*lines, "", KIND_LEGEND] if evidence.criteria else []


def old_failure_lines(evidence: Evidence) -> list[str]:
    """What already failed on the base commit and still fails: listed with both messages, not held against the change."""
    if not evidence.old_failures:
        return []
    lines = ["- Failing on the base commit already, and still failing (not counted against the change):"]
    for f in evidence.old_failures:
        where = code_span(f.test) + (f" ({code_span(f.check)})" if f.check != f.test else "")
        lines.append(
            f"  - {where}: on the base commit {inert_line(f.base) or 'no message'}; after the change "
            f"{inert_line(f.after) or 'no message'}"
        )
    return lines


def weakening_lines(evidence: Evidence) -> list[str]:
    lines: list[str] = []
    if evidence.regressions:
        lines += ["", "**Tests that ran on the base commit and were weakened (refused):**"]
        lines += [f"- {code_span(r.test)}: {inert_line(r.why)}" for r in evidence.regressions]
    if evidence.markers:
        lines += ["", "**Skip or expected-failure markers the change adds:**"]
        lines += [
            f"- {code_span(f'{m.file}:{m.line}')} {code_span(m.marker)}"
            + (f" on {code_span(m.test)}" if m.test else "")
            for m in evidence.markers
        ]
    return lines


def not_verified(result: RunResult) -> list[str]:
    """Every criterion without evidence, requests left for the reviewer, and checks that did not run."""
    items = [f"{inert_line(c.text)}: {inert_line(c.note or 'no evidence')}" for c in result.evidence.unverified()]
    items += [
        f"{inert_line(c.text)}: for the reviewer (wording, docs or naming; no test can show it)"
        for c in result.evidence.criteria
        if c.for_reviewer
    ]
    if result.setup and result.setup.guess_failed:
        items.append(
            f"the guessed setup did not run through, so the project was not installed: {guess_failure(result)}"
        )
    for check in result.contract.checks:
        after = result.final.result(check.name) if result.final else None
        base = result.baseline.result(check.name) if result.baseline else None
        if after is None or after.status == "not_run":
            set_aside = base.reason if base and base.status == "not_run" else ""  # the environment cannot run it
            reason = (after.reason if after else "") or set_aside or "not run after the change"
            items.append(f"{code_span(check.name)}: {inert_line(reason)}")
    return items


def evidence_line(result: RunResult) -> str:
    """The Summary's one line: the reproduction's status and how many criteria are shown."""
    e = result.evidence
    shown = sum(1 for c in e.criteria if c.verified)
    needed = sum(1 for c in e.criteria if not c.for_reviewer)
    return f"reproduction {e.reproduction.status.replace('_', ' ')}; {shown} of {needed} acceptance criteria shown"


def guess_failure(result: RunResult) -> str:
    """What the failed guessed setup was, in one line: the command, its exit and its last output line."""
    setup = result.setup
    if setup is None:
        return ""
    last = setup.error or (setup.last_lines.splitlines()[-1] if setup.last_lines.strip() else "no output")
    exit_code = "killed" if setup.exit_code is None else f"exit {setup.exit_code}"
    return f"{code_span(setup.failed_command)} ({exit_code}): {inert_line(last)}"
