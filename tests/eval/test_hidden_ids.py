"""Hidden ids as the published datasets spell them, and the hidden tests judged against their own run on the base
commit (pure: the runs are CheckResults as the runner reports them)."""

from __future__ import annotations

from bot.checks.models import CheckResult
from bot.checks.models import TestCase as Case
from bot.eval.hidden import HiddenRun, judge_hidden
from bot.eval.ids import cleaned, matches
from bot.eval.tasks import EvalTask

SPACED = "tests/test_format.py::test_truncate_strings_doesnt_truncate_identifiers[select verrrylongcolumn from foo]"
CUT = "tests/test_format.py::test_truncate_strings_doesnt_truncate_identifiers[select"


def ran(*cases: tuple[str, str]) -> HiddenRun:
    tests = [Case(id=i, status=s) for i, s in cases]  # type: ignore[arg-type]
    return HiddenRun(
        command="pytest", check=CheckResult(name="hidden-tests", command="pytest", status="pass", tests=tests)
    )


def task(f2p: list[str], p2p: list[str]) -> EvalTask:
    return EvalTask.model_validate(
        {"instance_id": "t", "repo": "o/r", "base_commit": "b", "test_patch": "x", "problem_statement": "p",
         "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}
    )  # fmt: skip


def test_an_id_cut_at_its_first_space_names_the_parametrized_test() -> None:
    assert [t.id for t in matches(CUT, [Case(id=SPACED, status="pass"), Case(id="tests/x.py::y", status="pass")])] == [
        SPACED
    ]
    assert matches("tests/test_format.py::test_truncate", [Case(id=SPACED, status="pass")]) == [], "not a prefix match"


def test_progress_markers_are_debris_and_escapes_are_one_spelling() -> None:
    assert cleaned("[100%]") == "" and cleaned("tests/a.py::test_b [ 50%]") == "tests/a.py::test_b"
    assert matches("[100%]", [Case(id="[100%]", status="pass")]) == []
    assert matches("t.py::test_name[caf\\u00e9]", [Case(id="t.py::test_name[café]", status="pass")])
    assert matches("t.py::test_b [100%]", [Case(id="t.py::test_b", status="fail")])[0].status == "fail"


def test_ids_no_run_names_are_unmatched_never_failing() -> None:
    t = task(["tests/a.py::test_new"], ["tests/a.py::test_old", "[100%]", "tests/a.py::test_gone_from_the_dataset"])
    base = ran(("tests/a.py::test_new", "fail"), ("tests/a.py::test_old", "pass"))
    after = ran(("tests/a.py::test_new", "pass"), ("tests/a.py::test_old", "pass"))
    result = judge_hidden(t, after, base)
    assert result.unmatched == ["[100%]", "tests/a.py::test_gone_from_the_dataset"]
    assert result.pass_to_pass == {"tests/a.py::test_old": "pass"} and result.resolved


def test_a_test_the_base_could_run_and_the_change_lost_is_a_failure() -> None:
    t = task(["tests/a.py::test_new"], ["tests/a.py::test_old"])
    base = ran(("tests/a.py::test_new", "fail"), ("tests/a.py::test_old", "pass"))
    result = judge_hidden(t, ran(("tests/a.py::test_new", "pass")), base)
    assert result.pass_to_pass == {"tests/a.py::test_old": "not_run"} and not result.resolved
    assert result.unmatched == []


def test_a_pass_to_pass_test_failing_on_the_base_commit_is_an_environment_fact() -> None:
    t = task(["tests/a.py::test_new"], ["tests/a.py::test_network", "tests/a.py::test_old"])
    base = ran(
        ("tests/a.py::test_new", "fail"), ("tests/a.py::test_network", "error"), ("tests/a.py::test_old", "pass")
    )
    after = ran(
        ("tests/a.py::test_new", "pass"), ("tests/a.py::test_network", "error"), ("tests/a.py::test_old", "pass")
    )
    result = judge_hidden(t, after, base)
    assert result.failing_on_base == ["tests/a.py::test_network"] and result.resolved
    broken = ran(
        ("tests/a.py::test_new", "pass"), ("tests/a.py::test_network", "error"), ("tests/a.py::test_old", "fail")
    )
    assert not judge_hidden(t, broken, base).resolved, "a test the base environment passes still counts"
