"""Taking the evidence at `finish`: the change's test files run against the base code, then judged.

The harness picks what runs: the test checks, narrowed to the test files the change added or
edited (relative to the evidence base: the base commit, or the pull request's original base in
later rounds), with the base commit's code and the change's test files laid over it.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.checks.models import CheckRun
from bot.checks.selection import runs_tests
from bot.context.subjects import is_test_path
from bot.evidence.judge import Observed, judge
from bot.evidence.models import CriterionMapping, Evidence
from bot.loop.budget import time_left
from bot.loop.harness import Harness
from bot.loop.state import RunState


def request_text(h: Harness) -> str:
    """The words of the request: may they ask to remove or skip a test?"""
    c = h.contract
    return "\n".join([c.title, c.goal, *c.constraints, *(x.text for x in c.acceptance_criteria), *c.feedback])


def evidence_base_run(h: Harness, state: RunState) -> CheckRun:
    """The checks at the evidence base: the baseline, or (later rounds) the test checks run on the original base's
    code. What failed there is never held against the change."""
    ws = h.workspace
    base = ws.evidence_base
    if base == ws.base_sha and state.checks.baseline is not None:
        return state.checks.baseline
    if state.checks.evidence_base_run is not None:
        return state.checks.evidence_base_run
    names = [c.name for c in h.contract.checks if runs_tests(c)]
    h.reporter.say(f"evidence: running the test checks on the original base {base[:12]}")
    with ws.laid_over(base):
        run = h.checks.run(names, commit=base, changed_files=[], limit_s=time_left(h, state))
    state.checks.base_ran(run)
    return run


def numbered(h: Harness, mapping: Sequence[CriterionMapping]) -> list[CriterionMapping]:
    """Criteria named by their number in the contract (from 1) replaced by their text."""
    criteria = h.contract.acceptance_criteria
    out = []
    for m in mapping:
        n = m.criterion.strip().rstrip(".")
        if n.isdigit() and 1 <= int(n) <= len(criteria):
            m = m.model_copy(update={"criterion": criteria[int(n) - 1].text})
        out.append(m)
    return out


def take_evidence(
    h: Harness, state: RunState, final: CheckRun, mapping: Sequence[CriterionMapping], base_run: CheckRun
) -> Evidence:
    ws = h.workspace
    base = ws.evidence_base
    names = [c.name for c in h.contract.checks if runs_tests(c)]
    changed = [f.path for f in ws.stats(against=base).files if is_test_path(f.path)]
    laid_over: CheckRun | None = None
    if changed and names:
        h.reporter.say(f"evidence: the change's test files ({', '.join(changed)}) against the base commit's code")
        with ws.laid_over(base, keep=changed):
            laid_over = h.checks.run_selected(names, changed, commit=base, limit_s=time_left(h, state))
    observed = Observed(
        contract=h.contract,
        base=base_run,
        after=final,
        laid_over=laid_over,
        changed_tests=changed,
        diff=ws.diff(against=base),
        mapping=numbered(h, mapping),
        request=request_text(h),
    )
    evidence = judge(observed)
    state.change.forget()  # the tree was swapped and put back; the checks may have written files
    for test in evidence.reproduction.tests:
        h.reporter.say(f"evidence: {test.id}: {test.base} on the base commit, {test.after} after")
    return evidence


def missing_evidence(evidence: Evidence, kind: str) -> str:
    """What `finish` lacks, per criterion not shown: its number, kind and the one thing that would show it."""
    lines = [
        f"criterion {n} ({c.kind}) {c.text!r} is not shown ({c.note}): {c.needs or c.note}"
        for n, c in enumerate(evidence.criteria, 1)
        if not c.verified and not c.for_reviewer
    ]
    status = evidence.reproduction.status
    if lines and evidence.old_failures:
        still = ", ".join(f.test for f in evidence.old_failures)
        lines.append(
            f"these failed on the base commit and still fail: {still}; if one of them shows the report, the change "
            "does not fix it yet"
        )
    if status == "passes_on_base":
        names = ", ".join(t.id for t in evidence.reproduction.tests if t.base == "pass")
        lines.append(
            f"your tests pass on the base commit too ({names}), so they do not reproduce the report: change the "
            "test so it fails before the fix and passes after it"
        )
    elif status == "not_collected_on_base" and kind == "bug":
        lines.append(
            "your test cannot even be collected on the base commit (it imports something that does not exist "
            "there): for a bug report, write the test against the existing code so it fails by its assertion"
        )
    if evidence.regressions:
        lines.append("weakened tests: " + "; ".join(f"{r.test}: {r.why}" for r in evidence.regressions))
    return "; ".join(lines)
