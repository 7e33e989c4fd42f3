"""Wiring one run: the contract's checks bound to a sandbox, the model routed, the trace opened, the loop run.

The adapters here are thin; local mode and the GitHub worker both call `run_task`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from bot.checks.classify import environment_error
from bot.checks.models import CheckRun
from bot.checks.runner import run_baseline, run_checks, run_setup
from bot.context.provider import RepoContext
from bot.contract.models import TaskContract
from bot.loop.loop import Checks, Loop, LoopConfig, Workspace, first_line
from bot.loop.result import RunResult
from bot.loop.trace import Trace
from bot.model.base import Model
from bot.model.routing import ModelChoice, choose_model
from bot.redact import redact
from bot.sandbox.base import Sandbox
from bot.settings import Settings


class SandboxChecks:
    """`Checks` over the checks runner: setup, baseline and check runs in one sandbox."""

    def __init__(self, sandbox: Sandbox, contract: TaskContract, secrets: Sequence[str]) -> None:
        self.sandbox, self.contract, self.secrets = sandbox, contract, tuple(secrets)

    def setup(self) -> str | None:
        results = run_setup(self.sandbox, self.contract.setup, self.contract.sandbox)
        if not results or results[-1].exit_code == 0:
            return None
        last, command = results[-1], self.contract.setup[len(results) - 1]
        output = redact(last.output, self.secrets)
        why = environment_error(output) or ("timed out" if last.timed_out else first_line(output[-500:]))
        return f"setup command `{command}` failed (exit {last.exit_code}): {why}"

    def baseline(self, commit: str) -> CheckRun:
        return run_baseline(self.sandbox, self.contract.checks, commit=commit, secrets=self.secrets)

    def run(self, names: list[str] | None, *, commit: str, changed_files: list[str]) -> CheckRun:
        return run_checks(
            self.sandbox,
            self.contract.checks,
            names=names,
            commit=commit,
            secrets=self.secrets,
            changed_files=changed_files,
        )


def route(contract: TaskContract, settings: Settings, override: str | None) -> ModelChoice:
    """`--model` wins; otherwise the contract's `model:` config and the task's size decide."""
    choice = choose_model(contract, settings.model, settings.small_model)
    if override:
        return ModelChoice(name=override, small=choice.small, reason=f"given on the command line: {override}")
    return choice


def run_task(
    contract: TaskContract,
    workspace: Workspace,
    model: Model,
    *,
    checks: Checks,
    choice: ModelChoice,
    secrets: Sequence[str],
    trace_path: Path,
    progress: Callable[[str], None] = lambda _line: None,
    tag_cache: Path | None = None,
) -> RunResult:
    """Run the loop once on a prepared workspace; the trace is written as it goes.

    The retrieval index lives beside the working tree in the job's folder: outside the sandbox, removed with the job.
    Its tag cache is `tag_cache` when given (`repo_tag_cache(settings.work_dir, repo)`: one per repository, shared
    by its jobs, so an unchanged file is parsed once across jobs), else in the job's folder too.
    """
    config = LoopConfig(model=choice.name, small_model=choice.small, model_reason=choice.reason)
    provider = RepoContext(workspace.path, cache_dir=workspace.path.parent / "context", tag_cache=tag_cache)
    loop = Loop(
        contract,
        model,
        workspace,
        checks,
        provider,
        Trace(trace_path, secrets),
        config,
        secrets=secrets,
        progress=progress,
    )
    return loop.run()
