"""The check runner end to end: the contract's checks run for real in each sandbox backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.checks.runner import run_baseline, run_checks, run_setup
from bot.contract.models import Check
from bot.sandbox.base import Sandbox
from tests.support.pytest_samples import FLAKY, SECRET, calc_repo, write_repo
from tests.support.sandbox import BACKENDS, open_test_sandbox, skip_reason

PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q"  # the venv's plugins cost seconds to import

CHECKS = [
    Check(name="unit", run=f"{PYTEST} tests/test_calc.py"),
    Check(name="ok", run=f"{PYTEST} tests/test_calc.py -k test_ok"),
    Check(name="deps", run=f"{PYTEST} tests/test_missing.py"),
    Check(name="lint", run="no-such-linter --check ."),
]


@pytest.fixture(scope="module", params=BACKENDS)
def box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    reason = skip_reason(request.param)
    if reason:
        pytest.skip(f"this machine cannot run {request.param}: {reason}")
    workspace = calc_repo(tmp_path_factory.mktemp(f"runner-{request.param}"))
    write_repo(workspace, {"tests/test_missing.py": "import numpyxyz\n", "tests/test_flaky.py": FLAKY})
    sandbox = open_test_sandbox(request.param, workspace)
    try:
        yield sandbox
    finally:
        sandbox.close()


def test_checks_are_run_classified_and_summarised(box: Sandbox) -> None:
    run = run_checks(box, CHECKS, commit="abc123", secrets=[SECRET], changed_files=["calc.py"])
    assert run.commit == "abc123"
    assert [(r.name, r.status) for r in run.results] == [
        ("unit", "fail"),
        ("ok", "pass"),
        ("deps", "error"),
        ("lint", "error"),
    ]
    unit, ok, deps, lint = run.results
    assert {t.id: t.status for t in unit.tests} == {
        "tests/test_calc.py::test_add": "fail",
        "tests/test_calc.py::TestDiv::test_div": "pass",
        "tests/test_calc.py::TestDiv::test_zero": "fail",
        "tests/test_calc.py::test_ok": "pass",
        "tests/test_calc.py::test_token": "fail",
    }
    assert unit.exit_code == 1 and unit.duration_s > 0 and unit.signature and unit.signature.startswith("fail:")
    assert "assert -1 == 5" in unit.summary and "frame in a changed file: calc.py:6" in unit.summary
    assert SECRET not in unit.output and SECRET not in unit.summary
    assert ok.signature is None and ok.summary == "" and ok.reason == ""
    assert deps.reason.startswith("missing Python module 'numpyxyz'")
    assert lint.reason.startswith("command not found: no-such-linter")
    # Nothing left behind for the diff: no pytest cache, no bytecode.
    assert not list(box.workspace.rglob(".pytest_cache")) and not list(box.workspace.rglob("__pycache__"))


def test_only_named_checks_run_and_unknown_names_are_not_run(box: Sandbox) -> None:
    run = run_checks(box, CHECKS, names=["ok", "rm -rf /"], commit="abc123")
    assert [(r.name, r.status) for r in run.results] == [("ok", "pass"), ("rm -rf /", "not_run")]
    assert run.results[1].reason == "no check named 'rm -rf /'; the contract has: unit, ok, deps, lint"
    assert run.results[1].command == ""


def test_the_same_failure_keeps_its_signature_across_runs(box: Sandbox) -> None:
    first = run_checks(box, CHECKS, names=["unit"], commit="a").results[0]
    second = run_checks(box, CHECKS, names=["unit"], commit="a").results[0]
    assert first.output != second.output  # a printed time and object address differ
    assert first.signature == second.signature


def test_baseline_reruns_failures_and_spots_flaky_checks(box: Sandbox) -> None:
    (box.workspace / "ran-once").unlink(missing_ok=True)
    checks = [*CHECKS[:2], Check(name="flaky", run=f"{PYTEST} tests/test_flaky.py")]
    run = run_baseline(box, checks, commit="base")
    statuses = {r.name: r.status for r in run.results}
    assert statuses == {"unit": "fail", "ok": "pass", "flaky": "flaky"}
    assert run.result("flaky").reason == "fail then pass on a re-run at the base commit"  # type: ignore[union-attr]
    assert not run.passed


def test_setup_runs_in_order_and_stops_at_the_first_failure(box: Sandbox) -> None:
    results = run_setup(box, ["echo one > setup-1.txt", "exit 3", "echo never > setup-3.txt"])
    assert [r.exit_code for r in results] == [0, 3]
    assert (box.workspace / "setup-1.txt").read_text() == "one\n"
    assert not (box.workspace / "setup-3.txt").exists()


def test_a_timeout_is_reported_with_the_checks_limit(box: Sandbox) -> None:
    result = run_checks(box, [Check(name="hang", run="sleep 30", timeout=1)], commit="a").results[0]
    assert (result.status, result.reason, result.exit_code) == (
        "timeout",
        "did not finish within 1 s; its whole process tree was killed",
        None,
    )
    assert result.summary.startswith("timeout: did not finish within 1 s")
