"""The check runner: the contract's named checks, run in the sandbox, classified, signed and summarised.

A thin orchestrator; what a result means is decided by the pure functions in classify, junit,
signature and summary.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from bot.checks.classify import classify, local_module_names
from bot.checks.junit import parse_junit
from bot.checks.models import CheckResult, CheckRun, TestCase
from bot.checks.selection import runner, selected_command, test_files_for
from bot.checks.signature import failure_signature
from bot.checks.summary import summarize
from bot.checks.unittest_output import parse_unittest
from bot.contract.models import Check
from bot.redact import redact
from bot.sandbox.base import ExecResult, Sandbox

log = logging.getLogger(__name__)

OUTPUT_CAP = 64 * 1024
SETUP_TIMEOUT = 900
RERUN_STATUSES = ("fail",)
"""Statuses re-run at the baseline: a pass on the re-run marks the check flaky."""
OUT_OF_TIME = "the run's wall-time budget ran out before it could start"


def deadline(limit_s: float | None) -> float | None:
    """The monotonic time by which a run of checks given `limit_s` seconds must be over (None: no limit)."""
    return None if limit_s is None else time.monotonic() + limit_s


def run_checks(
    sandbox: Sandbox,
    checks: Sequence[Check],
    *,
    names: Iterable[str] | None = None,
    commit: str,
    secrets: Iterable[str] = (),
    changed_files: Collection[str] = (),
    output_cap: int = OUTPUT_CAP,
    until: float | None = None,
) -> CheckRun:
    """Run the named checks (all when `names` is None) in contract order; unknown names come back `not_run`.

    The model may only name checks; the commands always come from the contract. `until` (a `deadline`) is
    when the run's wall-time budget runs out: a check is stopped then, and one not begun by then is `not_run`.
    """
    by_name = {c.name: c for c in checks}
    wanted = list(by_name) if names is None else list(dict.fromkeys(names))
    secrets = tuple(secrets)
    local = local_module_names(_top_level_paths(sandbox.workspace))
    results = []
    for name in wanted:
        check = by_name.get(name)
        if check is None:
            results.append(
                CheckResult(
                    name=name,
                    command="",
                    status="not_run",
                    reason=f"no check named {name!r}; the contract has: {', '.join(by_name) or 'none'}",
                )
            )
            continue
        results.append(
            run_check(
                sandbox,
                check,
                secrets=secrets,
                changed_files=changed_files,
                local_modules=local,
                output_cap=output_cap,
                until=until,
            )
        )
    return CheckRun(commit=commit, results=results)


def run_baseline(
    sandbox: Sandbox,
    checks: Sequence[Check],
    *,
    commit: str,
    secrets: Iterable[str] = (),
    output_cap: int = OUTPUT_CAP,
    until: float | None = None,
) -> CheckRun:
    """Every check on the base commit; a failing check is run again and marked `flaky` if the re-run disagrees."""
    secrets = tuple(secrets)
    run = run_checks(sandbox, checks, commit=commit, secrets=secrets, output_cap=output_cap, until=until)
    by_name = {c.name: c for c in checks}
    for i, result in enumerate(run.results):
        if result.status not in RERUN_STATUSES:
            continue
        again = run_checks(
            sandbox, [by_name[result.name]], commit=commit, secrets=secrets, output_cap=output_cap, until=until
        ).results[0]
        if again.status != "not_run" and (again.status != result.status or again.signature != result.signature):
            run.results[i] = result.model_copy(
                update={
                    "status": "flaky",
                    "reason": f"{result.status} then {again.status} on a re-run at the base commit",
                }
            )
    return run


def run_selected(
    sandbox: Sandbox,
    checks: Sequence[Check],
    files: Sequence[str],
    *,
    commit: str,
    secrets: Iterable[str] = (),
    output_cap: int = OUTPUT_CAP,
    until: float | None = None,
) -> CheckRun:
    """The test checks narrowed to the tests in `files` (whole, when their command cannot be narrowed)."""
    secrets = tuple(secrets)
    local = local_module_names(_top_level_paths(sandbox.workspace))
    results = []
    for check in checks:
        chosen = test_files_for(check, files)
        command = selected_command(check, chosen)
        result = run_check(
            sandbox, check, command=command, secrets=secrets, local_modules=local, output_cap=output_cap, until=until
        )
        results.append(result.model_copy(update={"selected": chosen if command else []}))
    return CheckRun(commit=commit, results=results)


def run_check(
    sandbox: Sandbox,
    check: Check,
    *,
    command: str | None = None,
    secrets: tuple[str, ...] = (),
    changed_files: Collection[str] = (),
    local_modules: Collection[str] = (),
    output_cap: int = OUTPUT_CAP,
    until: float | None = None,
) -> CheckResult:
    """Run one check (or `command`, a narrowed form of it), classified, with per-test results where the runner gives them.

    It gets its own timeout or what is left before `until`, whichever is shorter.
    """
    command = command or check.run
    left = None if until is None else until - time.monotonic()
    if left is not None and left <= 0:
        return CheckResult(name=check.name, command=command, status="not_run", reason=OUT_OF_TIME)
    timeout = check.timeout if left is None else min(check.timeout, left)
    report = f"junit-{uuid.uuid4().hex[:12]}.xml"
    env = {
        # Per-test results for pytest, without leaving .pytest_cache or __pycache__ in the diff.
        "PYTEST_ADDOPTS": f"--junitxml={sandbox.artifact_dir}/{report} -o junit_family=xunit1 -p no:cacheprovider",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    result = sandbox.exec(command, timeout=timeout, output_cap=output_cap, env=env)
    tests = _tests(sandbox, check, command, result, report)
    status, reason = classify(
        result,
        timeout=check.timeout,
        limits=sandbox.config,
        local_modules=local_modules,
        missing=sandbox.missing_command,
    )
    if status == "timeout" and timeout < check.timeout:
        reason = (
            f"stopped after {timeout:.0f} s: the run's wall-time budget ran out (its own timeout is {check.timeout} s)"
        )
    output = redact(result.output, secrets)
    failed = status != "pass"
    return CheckResult(
        name=check.name,
        command=command,
        status=status,
        exit_code=result.exit_code,
        duration_s=result.duration_s,
        output=output,
        dropped_bytes=result.dropped_bytes,
        tests=tests,
        signature=failure_signature(status, tests, output, workdir=sandbox.workdir) if failed else None,
        summary=summarize(
            status, reason, output, tests, workdir=sandbox.workdir, changed_files=changed_files, secrets=secrets
        ),
        reason=reason,
    )


def _tests(sandbox: Sandbox, check: Check, command: str, result: ExecResult, report: str) -> list[TestCase]:
    """Per-test results: pytest's junit report, else unittest's `-v` lines, else none (the check is its own unit)."""
    xml = sandbox.read_artifact(report)
    if xml:
        return parse_junit(xml, workdir=sandbox.workdir)
    if runner(check) == "unittest":
        return parse_unittest(result.output, command=command, workdir=sandbox.workdir)
    return []


def run_setup(
    sandbox: Sandbox,
    commands: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    network: bool = True,
    timeout: float = SETUP_TIMEOUT,
) -> list[ExecResult]:
    """The contract's setup commands in order, as setup (network only under `network: setup`); stops at the first failure.

    `env` (the setup secrets, the derived version) reaches these commands only. `network=False` runs them as ordinary
    commands: no network and no package caches, whatever the config says.
    """
    results: list[ExecResult] = []
    for command in commands:
        result = sandbox.exec(command, timeout=timeout, setup=network, env=env)
        results.append(result)
        if result.exit_code != 0:
            log.warning("setup command failed (exit %s, timed out %s): %s", result.exit_code, result.timed_out, command)
            break
    return results


def _top_level_paths(workspace: Path) -> list[str]:
    """Entries at the top of the workspace and of `src/` ("name/" for folders), to tell the project's own modules from dependencies."""
    paths: list[str] = []
    for base, prefix in ((workspace, ""), (workspace / "src", "src/")):
        if base.is_dir():
            paths += [f"{prefix}{p.name}{'/' if p.is_dir() else ''}" for p in base.iterdir()]
    return paths
