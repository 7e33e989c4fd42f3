"""One run of the loop (or of its planning phase) on a prepared workspace: the sandbox opened, the checks bound
to it, context and model.

A `Toolkit` says how to get each part; the composition root (`bot.commands.toolkit.toolkit`)
builds it once from the settings, and both `ai-fix run` and the GitHub job run through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bot.checks.bound import SandboxChecks
from bot.context.base import ContextProvider
from bot.contract.approach import Proposal
from bot.contract.models import SandboxConfig, TaskContract
from bot.loop.harness import Harness, LoopConfig, Workspace
from bot.loop.loop import Loop
from bot.loop.planning import Planner, PlanResult
from bot.loop.report import Reporter
from bot.loop.result import RunResult
from bot.loop.trace import Trace
from bot.model.base import Model
from bot.model.routing import ModelChoice, choose_model
from bot.sandbox.base import Sandbox

ModelOpener = Callable[[ModelChoice], Model]
"""The backends for the chosen models (each provider they name), or a replay of a recorded session."""


@dataclass(frozen=True)
class Toolkit:
    open_model: ModelOpener
    open_sandbox: Callable[[Path, SandboxConfig], Sandbox]
    """A started sandbox over a working tree, with the contract's limits; the caller closes it."""
    open_context: Callable[[Path, str], ContextProvider]
    """Retrieval over a working tree of a repository ("owner/name" or a local path, which keys the shared tag cache)."""
    default_model: str
    small_model: str
    work_dir: Path
    """Where job directories, local worktrees and traces live on the host."""


def run_session(
    contract: TaskContract,
    workspace: Workspace,
    kit: Toolkit,
    *,
    repo: str,
    secrets: Sequence[str],
    trace_path: Path,
    reporter: Reporter,
    model_override: str | None = None,
) -> RunResult:
    """Run the loop once; the trace is written as it goes and the sandbox is closed however it ends."""
    with _harness(contract, workspace, kit, repo, secrets, trace_path, reporter, model_override) as harness:
        return Loop(harness).run()


def plan_session(
    contract: TaskContract,
    workspace: Workspace,
    kit: Toolkit,
    *,
    repo: str,
    secrets: Sequence[str],
    trace_path: Path,
    reporter: Reporter,
    feedback: str = "",
    earlier: Proposal | None = None,
    revision: int = 1,
    model_override: str | None = None,
) -> PlanResult:
    """The planning phase on the same parts as a run (the model the run would use, the sandbox for the baseline)."""
    with _harness(contract, workspace, kit, repo, secrets, trace_path, reporter, model_override) as harness:
        return Planner(harness, feedback=feedback, earlier=earlier, revision=revision).run()


@contextmanager
def _harness(
    contract: TaskContract,
    workspace: Workspace,
    kit: Toolkit,
    repo: str,
    secrets: Sequence[str],
    trace_path: Path,
    reporter: Reporter,
    model_override: str | None,
) -> Iterator[Harness]:
    choice = choose_model(contract, kit.default_model, kit.small_model, override=model_override)
    model = kit.open_model(choice)
    sandbox = kit.open_sandbox(workspace.path, contract.sandbox)
    reporter.say(f"sandbox: {sandbox.name}")
    try:
        yield Harness(
            contract=contract,
            model=model,
            workspace=workspace,
            checks=SandboxChecks(sandbox, contract, secrets),
            context=kit.open_context(workspace.path, repo),
            trace=Trace(trace_path, secrets),
            config=LoopConfig(model=choice.name, small_model=choice.small, model_reason=choice.reason),
            secrets=secrets,
            reporter=reporter,
        )
    finally:
        sandbox.close()
