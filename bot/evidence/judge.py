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
from typing import assert_never

from bot.checks.models import CheckResult, CheckRun, TestCase
from bot.checks.selection import runs_tests
from bot.context.subjects import is_test_path
from bot.contract.globs import glob_match
from bot.contract.models import Criterion, TaskContract
from bot.evidence.failures import new_failures, old_failures, short
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
from bot.evidence.renames import renamed_tests
from bot.markdown import first_line
from bot.vocabulary import BEHAVIOUR, SKIPPED, BaseStatus

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
            r = _laid_over(test_id, check, t, over, o.laid_over)
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
    regressions += _gone(base, after, o.after, o.diff)
    regressions = [r for r in regressions if not _allowed(r, o)]
    status = _status(shown, candidates)
    counts = status == "verified" or (status == "not_collected_on_base" and o.contract.kind == "feature")
    proof = shown or [r for r in candidates if r.base == "not_collected" and counts]
    seen = Seen(proof if counts else [], status, regressions, new_failures(o.base, o.after))
    return Evidence(
        base_sha=o.base.commit,
        reproduction=Reproduction(status=status, tests=shown or candidates),
        criteria=[_criterion(o, c, seen) for c in o.contract.acceptance_criteria],
        regressions=regressions,
        markers=added_markers(o.diff),
        old_failures=old_failures(o.base, o.after),
    )


def _laid_over(test_id: str, check: str, t: TestCase, over: Tests, run: CheckRun | None) -> ReproTest:
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
    crash = _crash(run.result(check) if run else None)
    if crash:  # the bug takes the test runner down on the base code: the test reproduces it
        return ReproTest(id=test_id, check=check, base="error", after=t.status, message=crash, laid_over=True)
    return ReproTest(id=test_id, check=check, base="not_run", after=t.status, laid_over=True)


def _crash(result: CheckResult | None) -> str:
    """The line saying the test runner itself crashed, for a run that reported no tests and imported its files."""
    if result is None or result.tests or result.status not in FAILED or _IMPORT_FAILED.search(result.output):
        return ""
    lines = [m.group(0).strip() for m in _CRASHED.finditer(result.output)]
    said = [line for line in lines if re.search(r"(?:Error|Exception)\b", line)]
    return (said or lines or [""])[-1][:300]


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


def _gone(base: Tests, after: Tests, run: CheckRun, diff: str) -> list[Regression]:
    """Tests that ran on the base commit and no longer run (deleted, renamed away) or are skipped now; a test the
    diff renames with its body kept is not gone when it runs under its new name."""
    out = []
    renamed = renamed_tests(diff)
    for test_id, (check, b) in base.items():
        if b.status not in RAN or _module_level(test_id):
            continue
        a = after.get(test_id) or after.get(_new_name(test_id, renamed))
        reported = run.result(check)
        if a is None and reported is not None and reported.tests:
            why = "it ran on the base commit and no longer runs (deleted or renamed away)"
            out.append(Regression(test=test_id, check=check, base=b.status, after="missing", why=why))
        elif a is not None and a[1].status == SKIPPED:
            why = "it ran on the base commit and is skipped now (a skip or xfail marker)"
            out.append(Regression(test=test_id, check=check, base=b.status, after=SKIPPED, why=why))
    return out


def _new_name(test_id: str, renamed: dict[tuple[str, str], str]) -> str:
    """The id a test has after the diff renamed its function (`file::Class::old[p]` → `file::Class::new[p]`)."""
    file, _, rest = test_id.partition("::")
    *outer, last = rest.split("::")
    name, bracket, params = last.partition("[")
    new = renamed.get((file, name))
    return "::".join([file, *outer, new + bracket + params]) if new else ""


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


@dataclass(frozen=True)
class Seen:
    """What the judge found, which each criterion is held to."""

    proof: list[ReproTest]
    """The tests that fail on the base commit and pass after the change (or show new behaviour, for a feature)."""
    status: ReproStatus
    weakened: list[Regression]
    broken: list[CheckResult]
    """Checks failing after the change with something the base commit did not fail with."""


def _criterion(o: Observed, c: Criterion, seen: Seen) -> CriterionEvidence:
    e = CriterionEvidence(text=c.text, origin=c.origin, kind=c.kind)
    claims = [m.test for m in o.mapping if _same_criterion(m.criterion, c.text)]
    match c.kind:
        case "reviewer":
            e.note = "for the reviewer: wording, docs or naming, which no test can show"
        case "regression":
            _regression(e, o, claims, named_tests(c.text), seen)
        case "behaviour" if c.origin == "derived":
            e.verified, e.by = bool(seen.proof), [t.id for t in seen.proof]
            e.note = (
                "a test fails on the base commit and passes after the change" if seen.proof else _missing(seen.status)
            )
            e.needs = "" if seen.proof else REPRODUCE
        case "behaviour":
            only = sum(1 for x in o.contract.acceptance_criteria if x.kind == BEHAVIOUR and x.origin != "derived") == 1
            _behaviour(e, claims, named_tests(c.text), seen, only=only)
        case _:
            assert_never(c.kind)
    return e


def _behaviour(e: CriterionEvidence, claims: list[str], named: list[str], seen: Seen, *, only: bool) -> None:
    """Shown by a test that fails on the base commit and passes after: the one `finish` maps to it (a test, or a
    check whose tests include one), one the criterion names itself, or the reproduction when it is the only one."""
    confirmed = sorted({t.id for claim in claims for t in seen.proof if _same_test(claim, t)})
    by_name = sorted({t.id for name in named for t in seen.proof if _same_test(name, t)})
    if confirmed:
        e.verified, e.by, e.note = True, confirmed, "mapped by finish and confirmed by the harness"
    elif by_name:
        e.verified, e.by, e.note = True, by_name, "named in the criterion, confirmed by the harness"
    elif claims:
        e.note = f"finish named {', '.join(claims)}, which did not fail on the base commit and pass after the change"
        e.needs = f"{REPRODUCE}, and name it in finish's `criteria`"
    elif only and seen.proof:
        e.verified, e.by = True, [t.id for t in seen.proof]
        e.note = "the only criterion a test must show; shown by the reproduction"
    elif seen.proof:
        e.note = "no test was named for it: map it in finish's `criteria`"
        e.needs = "name the test that shows it in finish's `criteria`"
    else:
        e.note, e.needs = _missing(seen.status), REPRODUCE


def _regression(e: CriterionEvidence, o: Observed, claims: list[str], named: list[str], seen: Seen) -> None:
    """Shown by the checks (the ones `finish` names for it, else all) passing, or failing only with what already
    failed on the base commit, with no test weakened, and by a test run from each test file it names."""
    asked = [claim for claim in claims if o.after.result(claim) is not None]
    pool = [r for r in o.after.results if not asked or r.name in asked]
    ran = [r for r in pool if r.status != "not_run"]
    idle = [r.name for r in pool if r.status == "not_run"]
    broken = [r.name for r in seen.broken if r.name in {p.name for p in pool}]
    unseen = [f for f in named if not any(_same_test(f, t) and t.status == "pass" for r in ran for t in r.tests)]
    if broken:
        e.note = f"{', '.join(broken)} fail{'s' if len(broken) == 1 else ''} with something that passed on the base commit or did not exist there"
        e.needs = f"make {', '.join(broken)} pass again without weakening a test"
    elif seen.weakened:
        e.note = "tests that ran on the base commit were weakened: " + ", ".join(r.test for r in seen.weakened)
        e.needs = "restore the weakened tests"
    elif not ran or (asked and idle):
        e.note = f"check {', '.join(idle)} did not run" if idle else "no check could run"
        e.needs = e.note
    elif unseen:
        e.note = f"no test of {', '.join(unseen)} passed after the change"
        e.needs = f"run the checks that hold {', '.join(unseen)}"
    else:
        e.verified, e.by = True, [r.name for r in ran]
        old = sorted({f.check for f in old_failures(o.base, o.after)} & set(e.by))
        e.note = (
            "every check that could run passes"
            + (f" but for failures the base commit already had ({', '.join(old)})" if old else "")
            + (f"; not run: {', '.join(idle)}" if idle else "")
        )


def named_tests(text: str) -> list[str]:
    """The tests and test files a criterion names (`tests/test_calc.py`, `tests/test_calc.py::test_add`)."""
    found = []
    for token in _PATH.findall(text):
        path = token.split("::", 1)[0]
        if is_test_path(path) and token not in found:
            found.append(token)
    return found


def _same_criterion(claim: str, text: str) -> bool:
    a, b = " ".join(claim.casefold().split()), " ".join(text.casefold().split())
    return bool(a) and (a == b or (len(a) >= 10 and b.startswith(a)))


def _same_test(claim: str, test: ReproTest | TestCase) -> bool:
    """A claim names this test: its id, its name after `::`, its file, or (for a reproduction) its check."""
    test_id = test.id
    check = test.check if isinstance(test, ReproTest) else ""
    return claim in (test_id, check) or test_id.endswith(f"::{claim}") or test_id.split("::", 1)[0] == claim


REPRODUCE = "add a test that fails on the base commit and passes after the change"
_CRASHED = re.compile(r"^INTERNALERROR>.*\S.*$|^Fatal Python error:.*$|^.*Segmentation fault.*$", re.M)
_IMPORT_FAILED = re.compile(r"ImportError while importing test module|^E\s+(?:ModuleNotFoundError|ImportError):", re.M)
_PATH = re.compile(r"[\w./-]+\.\w+(?:::[\w.\[\]-]+)*")


def _missing(status: ReproStatus) -> str:
    return {
        "missing": "no test reproduces the report: none failed on the base commit and passed after the change",
        "passes_on_base": "the change's tests pass on the base commit too, so they do not reproduce the report",
        "fails_after": "the change's tests do not pass after the change",
        "not_collected_on_base": "the change's tests cannot even be collected on the base commit: that shows new "
        "behaviour, not a fixed bug",
        "verified": "",
    }[status]
