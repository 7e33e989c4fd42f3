"""The hidden tests, run on a run's result: `test_patch` applied, FAIL_TO_PASS and PASS_TO_PASS run in a sandbox.

As SWE-bench's harness does it: the files `test_patch` touches are first put back as they were on the
base commit (whatever the run did to them), then the patch is applied, the task's setup runs, and the
test command runs the test files the hidden ids name. The same runs once on the base commit itself, in the
same environment: a PASS_TO_PASS test that fails there is a fact of the environment, reported apart and never
counted against the change, and an id that names no test in either run is *unmatched* (reported, never a
failure). Any other hidden id that did not run counts as failing.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.checks.models import CheckResult
from bot.checks.runner import run_check, run_setup
from bot.checks.selection import runs_tests, selected_command
from bot.contract.models import Check, SandboxConfig, TaskContract
from bot.eval.gitrepo import git, patched_paths
from bot.eval.ids import cleaned, matches, state
from bot.eval.models import HiddenResult
from bot.eval.tasks import EvalTask
from bot.sandbox.base import Sandbox, SandboxJob
from bot.workspace.gitcmd import WorkspaceError

HIDDEN_TIMEOUT = 900
OpenSandbox = Callable[[Path, SandboxConfig, SandboxJob], Sandbox]


def test_files(task: EvalTask, test_patch: str) -> list[str]:
    """The files the hidden ids name (`path::test`), else the files `test_patch` touches."""
    named = [t.split("::", 1)[0] for t in [*task.fail_to_pass, *task.pass_to_pass] if "::" in t]
    return list(dict.fromkeys(named)) or patched_paths(test_patch)


def hidden_command(task: EvalTask, contract: TaskContract, files: Sequence[str]) -> tuple[str, int]:
    """The task's `test_command` (`{tests}` replaced by the files), else its test check narrowed to them."""
    if task.test_command:
        return task.test_command.replace("{tests}", " ".join(shlex.quote(f) for f in files)), HIDDEN_TIMEOUT
    check = next((c for c in contract.checks if runs_tests(c)), None)
    if check is None:
        raise ValueError("the task's contract has no check that runs tests: give the task a test_command (or checks)")
    return selected_command(check, list(files)) or check.run, max(check.timeout, HIDDEN_TIMEOUT)


def reset_tests(tree: Path, base: str, paths: Sequence[str]) -> None:
    """The files `test_patch` touches, as they were on the base commit (absent there: removed, by git, which
    touches nothing beyond a symbolic link the run committed)."""
    for path in paths:
        try:
            git(["checkout", base, "--", path], cwd=tree)
        except WorkspaceError:
            git(["rm", "-q", "-f", "--ignore-unmatch", "--", path], cwd=tree)


@dataclass(frozen=True)
class HiddenRun:
    """One run of the hidden tests on one commit: what ran and what it said (`check` is None when nothing ran)."""

    command: str = ""
    check: CheckResult | None = None
    applied: bool = True
    problem: str = ""
    log: str = ""
    duration_s: float = 0.0


def run_hidden(
    task: EvalTask,
    *,
    repo: Path,
    head: str,
    base: str,
    test_patch: str,
    contract: TaskContract,
    open_sandbox: OpenSandbox,
    work: Path,
) -> HiddenRun:
    """The hidden tests on commit `head` of `repo` (`head == base`: on the base commit itself)."""
    began = time.monotonic()
    log: list[str] = [f"# hidden tests of {task.instance_id} on {head[:12]} (base {base[:12]})"]

    def ended(**fields: Any) -> HiddenRun:
        return HiddenRun(log="\n".join(log) + "\n", duration_s=round(time.monotonic() - began, 3), **fields)

    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hidden-", dir=work, ignore_cleanup_errors=True) as tmp:
        tree = Path(tmp) / "tree"
        git(["worktree", "add", "-q", "--detach", str(tree), head], cwd=repo)
        try:
            reset_tests(tree, base, patched_paths(test_patch))
            try:
                git(["apply", "--whitespace=nowarn", "-"], cwd=tree, input=test_patch.encode())
            except WorkspaceError as exc:
                log.append(f"test_patch does not apply: {exc}")
                return ended(applied=False, problem="test_patch does not apply to the result")
            try:
                command, timeout = hidden_command(task, contract, test_files(task, test_patch))
            except ValueError as exc:
                log.append(str(exc))
                return ended(problem=str(exc))
            # The same environment as the run's: bwrap mounts the tools these commands name.
            job = SandboxJob(repo=str(repo), commands=(*contract.setup, command))
            sandbox = open_sandbox(tree, contract.sandbox, job)
            try:
                setup = run_setup(sandbox, contract.setup, network=contract.sandbox.network == "setup")
                for done, cmd in zip(setup, contract.setup):
                    log.append(f"$ {cmd}  (setup, exit {done.exit_code})\n{done.output}")
                ran = run_check(sandbox, Check(name="hidden-tests", run=command, timeout=timeout))
            finally:
                sandbox.close()
        finally:
            git(["worktree", "remove", "--force", str(tree)], cwd=repo)
    log += [f"$ {command}  ({ran.status}, exit {ran.exit_code}, {ran.duration_s:.1f} s)", ran.output]
    return ended(command=command, check=ran)


def judge_hidden(task: EvalTask, after: HiddenRun, on_base: HiddenRun | None) -> HiddenResult:
    """Each hidden id's status after the change, judged against the same tests on the base commit (pure)."""
    result = HiddenResult(
        command=after.command,
        applied=after.applied,
        problem=after.problem,
        duration_s=after.duration_s,
        base_problem=on_base.problem if on_base else "the hidden tests were not run on the base commit",
    )
    ran = after.check.tests if after.check else []
    base = on_base.check.tests if on_base and on_base.check else []
    for published in dict.fromkeys([*task.fail_to_pass, *task.pass_to_pass]):
        now, before = matches(published, ran), matches(published, base)
        if not now and not before and ((on_base is not None and on_base.check is not None) or not cleaned(published)):
            result.unmatched.append(published)
            continue
        if published in task.fail_to_pass:
            result.fail_to_pass[published] = state(now)
            continue
        result.pass_to_pass[published] = state(now)
        if before and state(before) != "pass":
            result.failing_on_base.append(published)
    return result


def hidden_lines(result: HiddenResult) -> list[str]:
    """The hidden tests' statuses, for the run's hidden.log."""
    lines = ["# FAIL_TO_PASS", *(f"{s:8} {t}" for t, s in result.fail_to_pass.items())]
    lines += ["# PASS_TO_PASS", *(f"{s:8} {t}" for t, s in result.pass_to_pass.items())]
    if result.failing_on_base:
        lines += ["# failing on the base commit in this environment", *result.failing_on_base]
    if result.unmatched:
        lines += ["# unmatched: no test of either run has these ids", *result.unmatched]
    return lines
