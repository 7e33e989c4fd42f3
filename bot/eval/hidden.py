"""The hidden tests, run on a run's result: `test_patch` applied, FAIL_TO_PASS and PASS_TO_PASS run in a sandbox.

As SWE-bench's harness does it: the files `test_patch` touches are first put back as they were on the
base commit (whatever the run did to them), then the patch is applied, the task's setup runs, and the
test command runs the test files the hidden ids name. A hidden id that did not run counts as failing.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bot.checks.models import CheckResult
from bot.checks.runner import run_check, run_setup
from bot.checks.selection import runs_tests, selected_command
from bot.contract.models import Check, SandboxConfig, TaskContract
from bot.eval.gitrepo import git, patched_paths
from bot.eval.models import HiddenResult
from bot.eval.tasks import EvalTask
from bot.sandbox.base import Sandbox, SandboxJob
from bot.vocabulary import SKIPPED, TestState
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


def state_of(wanted: str, result: CheckResult) -> TestState:
    """A hidden id's status: the same id, an id ending in `::<wanted>`, or every test of a file."""
    matches = [
        t for t in result.tests if t.id == wanted or t.id.endswith(f"::{wanted}") or t.id.split("::", 1)[0] == wanted
    ]
    if not matches:
        return "not_run"
    for status in ("error", "fail", SKIPPED):
        if any(t.status == status for t in matches):
            return status
    return "pass"


def reset_tests(tree: Path, base: str, paths: Sequence[str]) -> None:
    """The files `test_patch` touches, as they were on the base commit (absent there: removed, by git, which
    touches nothing beyond a symbolic link the run committed)."""
    for path in paths:
        try:
            git(["checkout", base, "--", path], cwd=tree)
        except WorkspaceError:
            git(["rm", "-q", "-f", "--ignore-unmatch", "--", path], cwd=tree)


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
) -> tuple[HiddenResult, str]:
    """(the statuses, the log) of the hidden tests on commit `head` of `repo`."""
    began = time.monotonic()
    log: list[str] = [f"# hidden tests of {task.instance_id} on {head[:12]} (base {base[:12]})"]
    none: dict[str, TestState] = {}
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
                result = HiddenResult(applied=False, problem="test_patch does not apply to the result")
                return _finish(task, result, none, began), "\n".join(log)
            try:
                command, timeout = hidden_command(task, contract, test_files(task, test_patch))
            except ValueError as exc:
                return _finish(task, HiddenResult(problem=str(exc)), none, began), "\n".join([*log, str(exc)])
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
    states = {t: state_of(t, ran) for t in [*task.fail_to_pass, *task.pass_to_pass]}
    result = _finish(task, HiddenResult(command=command), states, began)
    log.append("# FAIL_TO_PASS")
    log += [f"{s:8} {t}" for t, s in result.fail_to_pass.items()]
    log.append("# PASS_TO_PASS")
    log += [f"{s:8} {t}" for t, s in result.pass_to_pass.items()]
    return result, "\n".join(log) + "\n"


def _finish(task: EvalTask, result: HiddenResult, states: dict[str, TestState], began: float) -> HiddenResult:
    result.fail_to_pass = {t: states.get(t, "not_run") for t in task.fail_to_pass}
    result.pass_to_pass = {t: states.get(t, "not_run") for t in task.pass_to_pass}
    result.duration_s = round(time.monotonic() - began, 3)
    return result
