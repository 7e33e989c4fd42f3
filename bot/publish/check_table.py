"""The PR body's check evidence: each contract check before and after the change, the tests whose state changed,
the reproduction and the criteria's evidence, and the checks' logs (their tails, fenced)."""

from __future__ import annotations

from bot.checks.models import CheckResult, CheckRun
from bot.loop.result import RunResult
from bot.markdown import code_block, code_span
from bot.publish.evidence import criteria_lines, reproduction_lines, weakening_lines

STATUS_ICONS = {
    "pass": "✅ pass",
    "fail": "❌ fail",
    "error": "⚠️ error",
    "timeout": "⏱️ timeout",
    "killed": "🛑 killed",
    "flaky": "🔀 flaky",
    "not_run": "➖ not run",
}


def status(result: CheckResult | None) -> str:
    return STATUS_ICONS.get(result.status, result.status) if result else STATUS_ICONS["not_run"]


def passing_checks(result: RunResult) -> int:
    """How many of the contract's checks passed after the change."""
    final = result.final
    return sum(1 for c in result.contract.checks if final and (r := final.result(c.name)) and r.status == "pass")


def transitions(baseline: CheckRun | None, final: CheckRun | None) -> tuple[list[str], list[str]]:
    """(tests that went failing → passing, tests that went passing → failing), by test id."""
    before = {t.id: t.status for r in (baseline.results if baseline else []) for t in r.tests}
    after = {t.id: t.status for r in (final.results if final else []) for t in r.tests}
    fixed = sorted(i for i, s in after.items() if s == "pass" and before.get(i) in ("fail", "error"))
    broken = sorted(i for i, s in after.items() if s in ("fail", "error") and before.get(i) == "pass")
    return fixed, broken


def evidence_section(result: RunResult, log_chars: int) -> str:
    """The checks' table before and after, the tests that changed state, the reproduction and criteria, the logs."""
    lines = [
        "## Evidence",
        "",
        "Checks run by ai-fix in a sandbox"
        + (f", before the change on {code_span(result.baseline.commit[:12])}" if result.baseline else "")
        + (f" and after the change {code_span(result.final.commit[:12])}" if result.final else "")
        + ":",
        "",
        "| check | command | base | after | duration |",
        "|---|---|---|---|---:|",
    ]
    for check in result.contract.checks:
        base = result.baseline.result(check.name) if result.baseline else None
        after = result.final.result(check.name) if result.final else None
        duration = f"{after.duration_s:.1f} s" if after and after.status != "not_run" else "–"
        lines.append(
            f"| {code_span(check.name)} | {code_span(check.run)} | {status(base)} | {status(after)} | {duration} |"
        )
    fixed, broken = transitions(result.baseline, result.final)
    if fixed:
        lines += ["", f"**Tests that went from failing to passing ({len(fixed)}):**"] + [
            f"- {code_span(t)}" for t in fixed
        ]
    if broken:
        lines += ["", f"**Tests that went from passing to failing ({len(broken)}):**"] + [
            f"- {code_span(t)}" for t in broken
        ]
    lines += ["", *reproduction_lines(result.evidence)]
    if result.evidence.criteria:
        lines += ["", *criteria_lines(result.evidence)]
    lines += weakening_lines(result.evidence)
    if log_chars:
        lines += _logs(result, log_chars)
    return "\n".join(lines)


def _logs(result: RunResult, log_chars: int) -> list[str]:
    out: list[str] = []
    runs = [("base", result.baseline), ("after", result.final)]
    for label, run in runs:
        for r in run.results if run else []:
            if label == "base" and r.status == "pass":
                continue  # a passing baseline log says nothing the table does not
            if not r.output.strip():
                continue
            out += [
                "",
                f"<details><summary>Log: {code_span(r.name)} {label} ({r.status})</summary>",
                "",
                trim_log(r, log_chars),
                "",
                "</details>",
            ]
    return out


def trim_log(result: CheckResult, limit: int) -> str:
    """The tail of a check's output (where failures are reported), fenced so it renders nothing."""
    text = result.output
    dropped = result.dropped_bytes
    if len(text) > limit:
        dropped += len(text) - limit
        text = text[-limit:]
        text = text.split("\n", 1)[1] if "\n" in text else text
    note = f"[… {dropped} bytes of output cut …]\n" if dropped else ""
    return code_block(note + text)
