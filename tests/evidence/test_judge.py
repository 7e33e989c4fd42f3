"""The judge on its own (pure): what counts as showing the fix, what is a weakened test, what each criterion needs."""

from __future__ import annotations

from bot.checks.models import CheckResult, CheckRun
from bot.checks.models import TestCase as Case
from bot.contract.models import Check, Criterion, Scope, TaskContract
from bot.evidence.failures import new_failures, old_failures
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
        Criterion(text="The checks pass: tests, lint.", origin="derived", kind="regression"),
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
        Criterion(text="README.md: fix the wording", origin="review", kind="reviewer"),
        Criterion(text="The checks pass: tests, lint.", origin="derived", kind="regression"),
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


KEEP = "The existing tests in `tests/test_calc.py` pass"


def two_kinds(*, keep: str = KEEP) -> TaskContract:
    return contract(
        Criterion(text="`mul(-2, 3)` returns -6", origin="stated", kind="behaviour"),
        Criterion(text=keep, origin="stated", kind="regression"),
    )


def test_a_regression_criterion_is_shown_by_the_checks_with_nothing_that_passed_broken() -> None:
    base = run((T + "mul", "fail"), (T + "add", "pass"), status="fail")
    after = run((T + "mul", "pass"), (T + "add", "pass"))
    for mapping in ([], [CriterionMapping(criterion=KEEP, test="tests")]):
        e = judge(observed(base, after, contract=two_kinds(), mapping=mapping))
        assert e.verified, [c.note for c in e.criteria]
        assert e.criteria[1].by == ["tests"] and e.criteria[1].note.startswith("every check that could run passes")
    broken = run((T + "mul", "pass"), (T + "add", "fail"), status="fail")
    e = judge(observed(base, broken, contract=two_kinds()))
    assert not e.criteria[1].verified and "tests fails with something that passed" in e.criteria[1].note
    assert e.criteria[1].needs == "make tests pass again without weakening a test"


def test_a_regression_criterion_naming_a_check_that_did_not_run_says_so() -> None:
    after = run((T + "mul", "pass"))
    after.results.append(CheckResult(name="lint", command="ruff check .", status="not_run", reason="no ruff"))
    mapping = [CriterionMapping(criterion=KEEP, test="lint")]
    e = judge(observed(run((T + "mul", "fail"), status="fail"), after, contract=two_kinds(), mapping=mapping))
    assert not e.criteria[1].verified and e.criteria[1].needs == "check lint did not run"
    unnamed = judge(observed(run((T + "mul", "fail"), status="fail"), after, contract=two_kinds()))
    assert unnamed.criteria[1].verified and unnamed.criteria[1].note.endswith("; not run: lint")


def test_a_regression_criterion_naming_test_files_needs_one_of_their_tests_to_pass() -> None:
    other = two_kinds(keep="The other tests in `tests/test_recipes.py` keep passing")
    e = judge(observed(run((T + "mul", "fail"), status="fail"), run((T + "mul", "pass")), contract=other))
    assert (
        not e.criteria[1].verified and e.criteria[1].note == "no test of tests/test_recipes.py passed after the change"
    )


def test_a_check_name_in_finish_confirms_a_behaviour_criterion_through_one_of_its_tests() -> None:
    base = run((T + "mul", "fail"), (T + "add", "pass"), status="fail")
    after = run((T + "mul", "pass"), (T + "add", "pass"))
    two = contract(
        Criterion(text="`mul(-2, 3)` returns -6", origin="stated"),
        Criterion(text="`mul(2, -3)` returns -6", origin="stated"),
    )
    e = judge(
        observed(
            base, after, contract=two, mapping=[CriterionMapping(criterion="`mul(-2, 3)` returns -6", test="tests")]
        )
    )
    assert e.criteria[0].verified and e.criteria[0].by == [T + "mul"]
    lint = [CriterionMapping(criterion="`mul(-2, 3)` returns -6", test="lint")]
    assert not judge(observed(base, after, contract=two, mapping=lint)).criteria[0].verified


def test_a_criterion_that_names_its_test_is_shown_by_it_without_a_mapping() -> None:
    base = run((T + "mul", "fail"), (T + "neg", "fail"), status="fail")
    after = run((T + "mul", "pass"), (T + "neg", "pass"))
    named = contract(
        Criterion(text=f"`{T}mul` passes: `mul(-2, 3)` is -6", origin="stated"),
        Criterion(text="`mul(2, -3)` is -6 (tests/test_calc.py::test_neg)", origin="stated"),
    )
    e = judge(observed(base, after, contract=named))
    assert [(c.verified, c.by, c.note) for c in e.criteria] == [
        (True, [T + "mul"], "named in the criterion, confirmed by the harness"),
        (True, [T + "neg"], "named in the criterion, confirmed by the harness"),
    ]


def test_a_test_that_already_failed_on_the_base_commit_is_a_known_risk_not_a_blocker() -> None:
    base = run(
        (T + "mul", "fail"), ("tests/test_net.py::test_fetch", "fail"), status="fail", message="E   OSError: no network"
    )
    after = run(
        (T + "mul", "pass"),
        ("tests/test_net.py::test_fetch", "fail"),
        status="fail",
        message="E   OSError: still no network",
    )
    e = judge(observed(base, after, contract=two_kinds()))
    assert e.verified, [c.note for c in e.criteria]
    assert "but for failures the base commit already had (tests)" in e.criteria[1].note
    [old] = e.old_failures
    assert (old.test, old.check, old.base, old.after) == (
        "tests/test_net.py::test_fetch",
        "tests",
        "OSError: no network",
        "OSError: still no network",
    )
    assert new_failures(base, after) == []
    worse = run((T + "mul", "pass"), (T + "add", "fail"), ("tests/test_net.py::test_fetch", "fail"), status="fail")
    assert [r.name for r in new_failures(base, worse)] == ["tests"], "a test that did not fail on the base is new"


def test_a_check_without_single_tests_is_old_only_with_the_same_signature() -> None:
    base = CheckRun(commit="b", results=[CheckResult(name="lint", command="x", status="fail", signature="s1")])
    same = CheckRun(commit="a", results=[CheckResult(name="lint", command="x", status="fail", signature="s1")])
    other = CheckRun(commit="a", results=[CheckResult(name="lint", command="x", status="fail", signature="s2")])
    timed_out = CheckRun(commit="a", results=[CheckResult(name="lint", command="x", status="timeout", signature="s1")])
    assert new_failures(base, same) == [] and [f.test for f in old_failures(base, same)] == ["lint"]
    assert [r.name for r in new_failures(base, other)] == ["lint"] and old_failures(base, other) == []
    assert [r.name for r in new_failures(base, timed_out)] == ["lint"]


RENAME_DIFF = "\n".join(
    [
        "diff --git a/tests/test_config.py b/tests/test_config.py",
        "--- a/tests/test_config.py",
        "+++ b/tests/test_config.py",
        "@@ -20,7 +20,7 @@ def common_object_test(app):",
        '     assert app.config["TEST_KEY"] == "foo"',
        " ",
        " ",
        "-def test_config_from_file():",
        "+def test_config_from_file_json():",
        "     app = flask.Flask(__name__)",
        "     current_dir = os.path.dirname(os.path.abspath(__file__))",
        '     app.config.from_file(os.path.join(current_dir, "static", "config.json"), json.load)',
        "",
    ]
)


def test_a_test_renamed_with_its_body_kept_is_not_a_weakened_test() -> None:
    """flask's own fix (pallets/flask 4045) renames test_config_from_file to test_config_from_file_json."""
    old, new = "tests/test_config.py::test_config_from_file", "tests/test_config.py::test_config_from_file_json"
    base = run((old, "pass"), (T + "mul", "fail"), status="fail")
    after = run((new, "pass"), (T + "mul", "pass"))
    e = judge(observed(base, after, diff=RENAME_DIFF))
    assert e.regressions == [] and e.verified
    shrunk = RENAME_DIFF.replace(
        "     current_dir = os.path.dirname(os.path.abspath(__file__))\n",
        "-    current_dir = os.path.dirname(os.path.abspath(__file__))\n",
    )
    assert [r.test for r in judge(observed(base, after, diff=shrunk)).regressions] == [old], "a body that lost a line"
    assert [r.test for r in judge(observed(base, after)).regressions] == [old], "gone with no rename in the diff"


def test_a_test_that_crashes_the_runner_on_the_base_code_reproduces_the_report() -> None:
    """pytest-dev/pytest 7168: the bug makes pytest itself crash (INTERNALERROR) when the new test runs."""
    new = "testing/test_repr.py::test_broken_repr"
    after = run((new, "pass"))
    crash = CheckRun(
        commit="base",
        results=[
            CheckResult(
                name="tests",
                command="pytest",
                status="error",
                output="INTERNALERROR> Traceback (most recent call last):\n"
                'INTERNALERROR>   File "src/_pytest/_io/saferepr.py", line 23, in _format_repr_exception\n'
                "INTERNALERROR> RuntimeError: No active exception to reraise\n",
            )
        ],
    )
    e = judge(observed(run(), after, crash, ("testing/test_repr.py",)))
    assert e.reproduction.status == "verified" and e.verified
    [shown] = e.reproduction.tests
    assert (shown.base, shown.message) == ("error", "INTERNALERROR> RuntimeError: No active exception to reraise")
    import_failed = crash.model_copy(deep=True)
    import_failed.results[0].output = "ImportError while importing test module 'testing/test_repr.py'.\n" + (
        "E   ImportError: cannot import name 'saferepr'\n"
    )
    assert judge(observed(run(), after, import_failed, ("testing/test_repr.py",))).reproduction.status == "missing"
