"""From what ran to what is shown (pure): the reproduction, each criterion's evidence, weakened tests.

A test counts as showing the fix when it fails on the base commit's code and passes after the
change. For a test in a file the change did not touch, the base commit's own run says how it did;
for a test the change wrote or edited, only a run of the changed test file against the base code
(`laid_over`) can say it, so a test edited until it passes never counts as a fix. A test that ran on
the base commit and no longer runs, or is skipped now, is a regression unless the contract's scope
names its file and the issue asks for it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.checks.models import CheckRun, TestCase
from bot.checks.selection import runs_tests
from bot.contract.globs import glob_match
from bot.contract.models import Criterion, TaskContract
from bot.evidence.markers import added_markers
from bot.evidence.models import (
    CriterionEvidence,
    CriterionMapping,
    Evidence,
    Regression,
    Reproduction,
    ReproStatus,
    ReproTest,
)
from bot.markdown import first_line
from bot.vocabulary import SKIPPED, BaseStatus

FAILED = ("fail", "error")
RAN = ("pass", "fail", "error")
_ASKS_TO_CHANGE_TESTS = re.compile(r"\b(remov|delet|drop|skip|renam|xfail|disabl)\w*", re.I)


@dataclass(frozen=True)
class Observed:
    """What the harness ran, in the form the judge needs."""

    contract: TaskContract
    base: CheckRun
    """The checks at the evidence base (the base commit; the pull request's original base in later rounds)."""
    after: CheckRun
    """The checks on the change."""
    laid_over: CheckRun | None
    """The test checks, narrowed to the change's test files, run against the base code with those files laid over."""
    changed_tests: Sequence[str]
    """Test files the change added, modified or deleted, against the evidence base."""
    diff: str
    mapping: Sequence[CriterionMapping] = ()
    request: str = ""
    """The issue's words (goal, criteria, constraints, feedback): may they ask to change a test?"""


Tests = dict[str, tuple[str, TestCase]]


def _tests(run: CheckRun | None, checks: set[str]) -> Tests:
    return {t.id: (r.name, t) for r in (run.results if run else []) if r.name in checks for t in r.tests}


def short(message: str) -> str:
    """How a test failed, in one line: pytest's `E ` line with the exception, else the last line of the text."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    exception = next((e for e in errors if re.match(r"^[\w.]*(?:Error|Exception|Exit)\b", e)), None)
    return exception or (errors[0] if errors else lines[-1] if lines else "")


def _module_level(test_id: str) -> bool:
    return "::" not in test_id


def judge(o: Observed) -> Evidence:
    checks = {c.name for c in o.contract.checks if runs_tests(c)}
    base, after, over = _tests(o.base, checks), _tests(o.after, checks), _tests(o.laid_over, checks)
    changed = set(o.changed_tests)
    shown: list[ReproTest] = []
    candidates: list[ReproTest] = []
    regressions: list[Regression] = []
    for test_id, (check, t) in after.items():
        if t.file in changed:
            r = _laid_over(test_id, check, t, over)
            candidates.append(r)
            if t.status == "pass" and r.base in FAILED:
                shown.append(r)
            original = base.get(test_id)
            if original and original[1].status in FAILED and t.status == "pass" and r.base == "pass":
                regressions.append(
                    Regression(
                        test=test_id,
                        check=check,
                        base=original[1].status,
                        after="pass",
                        why="its test file was changed and it now passes on the base code too: the change to the "
                        "test, not to the code, made it pass",
                    )
                )
        elif t.status == "pass" and (b := base.get(test_id)) and b[1].status in FAILED:
            shown.append(
                ReproTest(id=test_id, check=check, base=b[1].status, after="pass", message=short(b[1].message))
            )
    shown += _whole_checks(o, checks, regressions)
    regressions += _gone(base, after, o.after)
    regressions = [r for r in regressions if not _allowed(r, o)]
    status = _status(shown, candidates)
    counts = status == "verified" or (status == "not_collected_on_base" and o.contract.kind == "feature")
    by = [r.id for r in shown] if shown else [r.id for r in candidates if r.base == "not_collected" and counts]
    return Evidence(
        base_sha=o.base.commit,
        reproduction=Reproduction(status=status, tests=shown or candidates),
        criteria=_criteria(o, by if counts else [], status),
        regressions=regressions,
        markers=added_markers(o.diff),
    )


def _laid_over(test_id: str, check: str, t: TestCase, over: Tests) -> ReproTest:
    """A test of the change's own test files, as it did on the base code."""
    found = over.get(test_id)
    if found:
        return ReproTest(
            id=test_id,
            check=check,
            base=found[1].status,
            after=t.status,
            message=short(found[1].message),
            laid_over=True,
        )
    module = over.get(t.file or "")
    if module and module[1].status == "error":  # the test file could not even be imported on the base code
        return ReproTest(
            id=test_id,
            check=check,
            base="not_collected",
            after=t.status,
            message=short(module[1].message),
            laid_over=True,
        )
    return ReproTest(id=test_id, check=check, base="not_run", after=t.status, laid_over=True)


def _whole_checks(o: Observed, checks: set[str], regressions: list[Regression]) -> list[ReproTest]:
    """Test checks whose runner reports no single tests: the check itself is the unit of evidence."""
    shown: list[ReproTest] = []
    for name in sorted(checks):
        base, after = o.base.result(name), o.after.result(name)
        over = o.laid_over.result(name) if o.laid_over else None
        if after is None or after.status != "pass" or after.tests:
            continue
        if over is not None and not over.tests and o.changed_tests:
            if over.status in FAILED:
                shown.append(_check_shown(name, over.status, first_line(over.summary), laid_over=True))
            elif base is not None and base.status in FAILED:
                regressions.append(
                    Regression(
                        test=name,
                        check=name,
                        base=base.status,
                        after="pass",
                        why="it passes on the base code once the change's test files are laid over: the change to "
                        "the tests, not to the code, made it pass",
                    )
                )
        elif base is not None and base.status in FAILED and not base.tests:
            shown.append(_check_shown(name, base.status, first_line(base.summary), laid_over=False))
    return shown


def _check_shown(name: str, status: str, message: str, *, laid_over: bool) -> ReproTest:
    base: BaseStatus = "error" if status == "error" else "fail"
    return ReproTest(id=name, check=name, base=base, after="pass", message=message, laid_over=laid_over)


def _gone(base: Tests, after: Tests, run: CheckRun) -> list[Regression]:
    """Tests that ran on the base commit and no longer run (deleted, renamed away) or are skipped now."""
    out = []
    for test_id, (check, b) in base.items():
        if b.status not in RAN or _module_level(test_id):
            continue
        a = after.get(test_id)
        reported = run.result(check)
        if a is None and reported is not None and reported.tests:
            why = "it ran on the base commit and no longer runs (deleted or renamed away)"
            out.append(Regression(test=test_id, check=check, base=b.status, after="missing", why=why))
        elif a is not None and a[1].status == SKIPPED:
            why = "it ran on the base commit and is skipped now (a skip or xfail marker)"
            out.append(Regression(test=test_id, check=check, base=b.status, after=SKIPPED, why=why))
    return out


def _allowed(r: Regression, o: Observed) -> bool:
    """The scope names the test's file (not just `**`) and the issue asks to remove, skip or rename it."""
    file = r.test.split("::", 1)[0]
    named = any(g not in ("**", "**/*") and glob_match(file, g) for g in o.contract.scope.allow)
    mentioned = posixpath.basename(file) in o.request or r.test.rsplit("::", 1)[-1] in o.request
    return named and mentioned and bool(_ASKS_TO_CHANGE_TESTS.search(o.request))


def _status(shown: list[ReproTest], candidates: list[ReproTest]) -> ReproStatus:
    if shown:
        return "verified"
    passing = [r for r in candidates if r.after == "pass"]
    if any(r.base == "not_collected" for r in passing):
        return "not_collected_on_base"
    if passing and all(r.base == "pass" for r in passing):
        return "passes_on_base"
    if candidates and not passing:
        return "fails_after"
    return "missing"


def _criteria(o: Observed, shown: list[str], status: ReproStatus) -> list[CriterionEvidence]:
    needing = [c for c in o.contract.acceptance_criteria if c.rule is None and not c.for_reviewer]
    out = []
    for c in o.contract.acceptance_criteria:
        e = CriterionEvidence(text=c.text, origin=c.origin, for_reviewer=c.for_reviewer)
        if c.for_reviewer:
            e.note = "for the reviewer: wording, docs or naming, which no test can show"
        elif c.rule == "reproduction":
            e.verified, e.by = bool(shown), shown
            e.note = "a test fails on the base commit and passes after the change" if shown else _missing(status)
        elif c.rule == "checks":
            ran = [r for r in o.after.results if r.status != "not_run"]
            e.verified = bool(ran) and all(r.status == "pass" for r in ran)
            e.by = [r.name for r in ran if r.status == "pass"]
            skipped = [r.name for r in o.after.results if r.status == "not_run"]
            e.note = "every check that could run passes" + (f"; not run: {', '.join(skipped)}" if skipped else "")
        else:
            _mapped(e, c, o.mapping, shown, only=len(needing) == 1, status=status)
        out.append(e)
    return out


def _mapped(
    e: CriterionEvidence,
    c: Criterion,
    mapping: Sequence[CriterionMapping],
    shown: list[str],
    *,
    only: bool,
    status: ReproStatus,
) -> None:
    claims = [m.test for m in mapping if _same_criterion(m.criterion, c.text)]
    confirmed = [t for claim in claims for t in shown if _same_test(claim, t)]
    if confirmed:
        e.verified, e.by, e.note = True, sorted(set(confirmed)), "mapped by finish and confirmed by the harness"
    elif claims:
        e.note = f"finish named {', '.join(claims)}, which did not fail on the base commit and pass after the change"
    elif only and shown:
        e.verified, e.by, e.note = True, shown, "the only criterion a test must show; shown by the reproduction"
    else:
        e.note = _missing(status) if not shown else "no test was named for it: map it in finish's `criteria`"


def _same_criterion(claim: str, text: str) -> bool:
    a, b = " ".join(claim.casefold().split()), " ".join(text.casefold().split())
    return bool(a) and (a == b or (len(a) >= 10 and b.startswith(a)))


def _same_test(claim: str, test_id: str) -> bool:
    return claim == test_id or test_id.endswith(f"::{claim}") or test_id.split("::", 1)[0] == claim


def _missing(status: ReproStatus) -> str:
    return {
        "missing": "no test reproduces the report: none failed on the base commit and passed after the change",
        "passes_on_base": "the change's tests pass on the base commit too, so they do not reproduce the report",
        "fails_after": "the change's tests do not pass after the change",
        "not_collected_on_base": "the change's tests cannot even be collected on the base commit: that shows new "
        "behaviour, not a fixed bug",
        "verified": "",
    }[status]
