"""RunResult values shaped like a real run's record, for the rendering tests."""

from __future__ import annotations

from bot.checks.models import CheckResult, CheckRun, TestCase
from bot.contract.models import Check, Criterion, TaskContract
from bot.loop.result import Cost, Handoff, Plan, PlanStep, RunResult
from bot.workspace.models import DiffStats, FileChange


def contract() -> TaskContract:
    return TaskContract(
        status="ready",
        title="add() returns the wrong sum",
        goal="calc.add returns the sum of its arguments",
        non_goals=["no new dependencies"],
        acceptance_criteria=[Criterion(text="tests/test_calc.py::test_add passes", origin="stated")],
        checks=[Check(name="tests", run="python -m pytest -q"), Check(name="lint", run="python -m pyflakes .")],
    )


def run(commit: str, test_status: str, check_status: str, *, output: str = "") -> CheckRun:
    return CheckRun(
        commit=commit,
        results=[
            CheckResult(
                name="tests",
                command="python -m pytest -q",
                status=check_status,  # type: ignore[arg-type]
                exit_code=0 if check_status == "pass" else 1,
                duration_s=1.25,
                output=output or f"tests/test_calc.py::test_add {test_status.upper()}\n",
                tests=[
                    TestCase(
                        id="tests/test_calc.py::test_add",
                        status=test_status,
                        file="tests/test_calc.py",
                        line=4,  # type: ignore[arg-type]
                        message="assert 1 == 3",
                    ),
                    TestCase(id="tests/test_calc.py::test_sub", status="pass"),
                ],
            ),
            CheckResult(name="lint", command="python -m pyflakes .", status="pass", exit_code=0, duration_s=0.5),
        ],
    )


def accepted(**overrides: object) -> RunResult:
    values: dict[str, object] = dict(
        outcome="accepted",
        reason="every contract check passes after the change",
        contract=contract(),
        branch="ai-fix/7-add-returns-the-wrong-sum",
        base_sha="a" * 40,
        head_sha="b" * 40,
        baseline=run("a" * 40, "fail", "fail"),
        final=run("b" * 40, "pass", "pass"),
        diff=DiffStats(files=[FileChange(path="calc.py", added=1, removed=1)]),
        diff_text="-    return a - b\n+    return a + b\n",
        plan=Plan(steps=[PlanStep(do="fix add", done_when="test_add passes")], impact=["calc.py"]),
        model_summary="Fixed the operator in add().",
        risks=["callers relying on the old result"],
        cost=Cost(
            model="claude-sonnet-4-5",
            input_tokens=12000,
            output_tokens=800,
            cache_read_tokens=9000,
            usd=0.0512,
            wall_s=75,
        ),
        steps=4,
    )
    values.update(overrides)
    return RunResult.model_validate(values)


def handed_off() -> RunResult:
    return accepted(
        outcome="handed_off",
        reason="the same failure came back after 2 attempts",
        final=run("c" * 40, "fail", "fail"),
        handoff=Handoff(
            done=["changed the operator in add()"],
            not_done=["test_add still fails"],
            ruled_out=["swapping the arguments: same assertion error"],
            question="Should add() accept strings?",
            next_steps=["check the callers in api.py"],
        ),
    )
