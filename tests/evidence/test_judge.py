"""The judge on its own (pure): what counts as showing the fix, what is a weakened test, what each criterion needs."""

from __future__ import annotations

from bot.checks.models import CheckResult, CheckRun
from bot.checks.models import TestCase as Case
from bot.contract.models import Check, Criterion, Scope, TaskContract
from bot.evidence.judge import Observed, judge
from bot.evidence.markers import added_markers
from bot.evidence.models import CriterionMapping

T = "tests/test_calc.py::test_"


def run(*cases: tuple[str, str], status: str = "pass", name: str = "tests", message: str = "boom") -> CheckRun:
    tests = [Case(id=i, status=s, file=i.split("::")[0], message=message if s != "pass" else "") for i, s in cases]  # type: ignore[arg-type]
    return CheckRun(commit="base", results=[CheckResult(name=name, command="pytest", status=status, tests=tests)])  # type: ignore[arg-type]


def contract(*criteria: Criterion, kind: str = "bug", allow: list[str] | None = None) -> TaskContract:
    return TaskContract(
        status="ready",
        kind=kind,  # type: ignore[arg-type]
        acceptance_criteria=list(criteria) or [Criterion(text="`mul(-2, 3)` returns -6", origin="stated")],
        checks=[Check(name="tests", run="python -m pytest -q"), Check(name="lint", run="ruff check .")],
        scope=Scope(allow=allow or ["**"]),
    )


def observed(
    base: CheckRun, after: CheckRun, laid: CheckRun | None = None, changed: tuple[str, ...] = (), **kw: object
) -> Observed:
    return Observed(
        contract=kw.pop("contract", contract()),  # type: ignore[arg-type]
        base=base, after=after, laid_over=laid, changed_tests=changed, diff=str(kw.pop("diff", "")), **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_test_the_change_adds_shows_the_fix_only_by_failing_on_the_base_code() -> None:
    base = run((T + "mul", "pass"))
    after = run((T + "mul", "pass"), (T + "negative", "pass"))
    laid = run((T + "mul", "pass"), (T + "negative", "fail"), status="fail", message="AssertionError: 6 != -6")
    e = judge(observed(base, after, laid, ("tests/test_calc.py",)))
    assert e.reproduction.status == "verified" and e.verified
    [shown] = e.reproduction.tests
    assert (shown.id, shown.base, shown.after, shown.laid_over) == (T + "negative", "fail", "pass", True)
    assert shown.message == "AssertionError: 6 != -6"
    [stated] = e.criteria
    assert stated.verified and stated.by == [T + "negative"]


def test_tests_that_pass_on_the_base_code_do_not_reproduce_anything() -> None:
    after = run((T + "mul", "pass"), (T + "negative", "pass"))
    e = judge(observed(run((T + "mul", "pass")), after, after, ("tests/test_calc.py",)))
    assert e.reproduction.status == "passes_on_base" and not e.verified
    assert "pass on the base commit too" in e.criteria[0].note


def test_a_module_that_cannot_be_imported_on_the_base_counts_for_a_feature_only() -> None:
    after = run((T + "square", "pass"))
    laid = run(("tests/test_calc.py", "error"), status="fail", message="ImportError: cannot import name 'square'")
    for kind, verified in (("feature", True), ("bug", False)):
        e = judge(observed(run(), after, laid, ("tests/test_calc.py",), contract=contract(kind=kind)))
        assert e.reproduction.status == "not_collected_on_base"
        assert e.reproduction.tests[0].base == "not_collected" and e.verified is verified


def test_an_existing_failing_test_in_an_unchanged_file_shows_the_fix_from_the_baseline() -> None:
    e = judge(observed(run((T + "mul", "fail"), status="fail"), run((T + "mul", "pass"))))
    assert e.reproduction.status == "verified" and not e.reproduction.tests[0].laid_over


def test_a_test_edited_until_it_passes_is_a_regression_not_a_fix() -> None:
    base = run((T + "mul", "fail"), status="fail")
    after = run((T + "mul", "pass"))
    e = judge(observed(base, after, run((T + "mul", "pass")), ("tests/test_calc.py",)))
    assert [r.test for r in e.regressions] == [T + "mul"] and not e.verified
    assert e.reproduction.status == "passes_on_base"


def test_deleted_and_skipped_tests_are_regressions_unless_the_scope_names_them_and_the_issue_asks() -> None:
    base = run((T + "a", "pass"), (T + "b", "fail"), status="fail")
    after = run((T + "b", "skipped"))
    e = judge(observed(base, after))
    assert {(r.test, r.after) for r in e.regressions} == {(T + "a", "missing"), (T + "b", "skipped")}
    allowed = contract(allow=["tests/test_calc.py", "calc.py"])
    e = judge(observed(base, after, contract=allowed, request="Remove test_a and skip test_b in test_calc.py"))
    assert e.regressions == []
    e = judge(observed(base, after, contract=allowed, request="Fix mul"))
    assert len(e.regressions) == 2, "the issue did not ask for it"


def test_each_criterion_needs_its_own_test_when_there_are_several() -> None:
    two = contract(
        Criterion(text="`mul(-2, 3)` returns -6", origin="stated"),
        Criterion(text="`mul(2, -3)` returns -6", origin="stated"),
        Criterion(text="The checks pass: tests, lint.", origin="derived", rule="checks"),
    )
    base = run((T + "mul", "pass"))
    after = run((T + "mul", "pass"), (T + "neg", "pass"))
    laid = run((T + "mul", "pass"), (T + "neg", "fail"), status="fail")
    e = judge(observed(base, after, laid, ("tests/test_calc.py",), contract=two))
    assert [c.verified for c in e.criteria] == [False, False, True]
    mapping = [CriterionMapping(criterion="`mul(-2, 3)` returns -6", test="test_neg"),
               CriterionMapping(criterion="`mul(2, -3)`", test=T + "mul")]  # fmt: skip
    e = judge(observed(base, after, laid, ("tests/test_calc.py",), contract=two, mapping=mapping))
    assert e.criteria[0].verified and e.criteria[0].by == [T + "neg"]
    assert not e.criteria[1].verified and "did not fail on the base commit" in e.criteria[1].note


def test_reviewer_only_requests_never_need_a_test_and_checks_that_could_not_run_are_named() -> None:
    c = contract(
        Criterion(text="README.md: fix the wording", origin="review", for_reviewer=True),
        Criterion(text="The checks pass: tests, lint.", origin="derived", rule="checks"),
    )
    after = CheckRun(
        commit="after",
        results=[
            CheckResult(name="tests", command="x", status="pass"),
            CheckResult(name="lint", command="x", status="not_run", reason="ruff is not installed"),
        ],
    )
    e = judge(observed(run(), after, contract=c))
    assert e.verified and e.criteria[0].for_reviewer and "not run: lint" in e.criteria[1].note


def test_a_check_without_single_tests_is_its_own_evidence() -> None:
    make = contract()
    make.checks = [Check(name="unit", run="make test")]
    base = CheckRun(commit="b", results=[CheckResult(name="unit", command="make test", status="fail")])
    after = CheckRun(commit="a", results=[CheckResult(name="unit", command="make test", status="pass")])
    assert judge(observed(base, after, contract=make)).reproduction.tests[0].id == "unit"
    weakened = judge(observed(base, after, after, ("tests/test_x.c",), contract=make))
    assert weakened.regressions and "change to the tests" in weakened.regressions[0].why


def test_added_skip_markers_are_found_with_their_test() -> None:
    diff = (
        "diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1,4 +1,6 @@\n import pytest\n"
        "+@pytest.mark.xfail\n def test_one():\n     pass\n def test_two():\n+    pytest.skip('no')\n"
    )
    found = [(m.line, m.marker, m.test) for m in added_markers(diff)]
    assert found == [(2, "@pytest.mark.xfail", "test_one"), (6, "pytest.skip", "test_two")]


def test_a_behavioural_review_request_needs_evidence_like_any_criterion() -> None:
    c = contract(
        Criterion(text="`mul(-2, 3)` returns -6", origin="stated"),
        Criterion(text="calc.py:3: also handle negative numbers", origin="review"),
    )
    base = run((T + "mul", "fail"), status="fail")
    after = run((T + "mul", "pass"), (T + "negative", "pass"))
    laid = run((T + "mul", "fail"), (T + "negative", "pass"), status="fail")
    e = judge(observed(base, after, laid, ("tests/test_calc.py",), contract=c))
    assert [x.verified for x in e.criteria] == [False, False], "two criteria, no test named for either"
    mapping = [
        CriterionMapping(criterion="1", test=T + "mul"),
        CriterionMapping(criterion="calc.py:3: also handle", test=T + "mul"),
    ]
    e = judge(observed(base, after, laid, ("tests/test_calc.py",), contract=c, mapping=mapping))
    assert [x.verified for x in e.criteria] == [False, True]
