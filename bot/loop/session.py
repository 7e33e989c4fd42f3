"""One run of the loop (or of its planning phase) on a prepared workspace: the sandbox opened, the checks bound
to it, context and model.

A `Toolkit` says how to get each part; the composition root (`bot.commands.toolkit.toolkit`)
builds it once from the settings, and both `ai-fix run` and the GitHub job run through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.checks.bound import SandboxChecks, Unavailable
from bot.checks.setup import setup_key
from bot.context.base import ContextProvider
from bot.contract.approach import Proposal
from bot.contract.models import SandboxConfig, TaskContract
from bot.errors import SandboxUnavailable
from bot.loop.harness import Checks, Harness, LoopConfig, Workspace
from bot.loop.loop import Loop
from bot.loop.planning import Planner, PlanResult
from bot.loop.records import Spent
from bot.loop.report import Reporter
from bot.loop.result import RunResult
from bot.loop.setup_network import model_files
from bot.loop.trace import Trace
from bot.model.base import Model
from bot.model.routing import ModelChoice, choose_model
from bot.sandbox.base import Sandbox, SandboxJob
from bot.secrets import secret_allowed

ModelOpener = Callable[[ModelChoice], Model]
"""The backends for the chosen models (each provider they name), or a replay of a recorded session."""


@dataclass(frozen=True)
class Toolkit:
    open_model: ModelOpener
    open_sandbox: Callable[[Path, SandboxConfig, SandboxJob], Sandbox]
    """A started sandbox over a working tree, with the contract's limits, for a job; the caller closes it."""
    open_context: Callable[[Path, str], ContextProvider]
    """Retrieval over a working tree of a repository ("owner/name" or a local path, which keys the shared tag cache)."""
    default_model: str
    small_model: str | None
    """None: the chosen model's provider picks it (`small_for`)."""
    work_dir: Path
    """Where job directories, local worktrees and traces live on the host."""
    setup_secrets: Mapping[str, str] = field(default_factory=dict)
    """The values the operator provides for setup commands, by name; a contract's `setup_secrets` picks from them."""
    setup_secret_repos: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For each of them, the repository patterns it is given to (`AIFIX_SETUP_SECRET_<NAME>_REPOS`; none: no repository)."""


def _setup_key(contract: TaskContract, workspace: Workspace) -> str:
    """The key of the files setup will run on: the base commit's when the model's files are in the tree."""
    if not model_files(contract, workspace):
        return setup_key(contract, workspace.path)
    with workspace.laid_over(workspace.evidence_base):
        return setup_key(contract, workspace.path)


@dataclass(frozen=True)
class RunInput:
    """What one run of the loop (or of its planning phase) is given, besides the toolkit: built once by its caller."""

    contract: TaskContract
    workspace: Workspace
    repo: str
    """"owner/name", or the local path in local mode: keys the tag cache and the setup secrets' bindings."""
    secrets: Sequence[str]
    """Every secret the run holds; redaction removes them from the trace, the prompt and the outputs."""
    trace_path: Path
    reporter: Reporter
    model_override: str | None = None
    attempt: int = 1
    """A job's attempt: the budget counts across attempts and the trace keeps every attempt's records."""
    spent: Spent | None = None
    """What the job's earlier attempts spent (stored by `keep_spent` after every step)."""
    keep_spent: Callable[[Spent], None] = lambda _spent: None
    loop_settings: Mapping[str, Any] | None = None
    """Overrides of LoopConfig's context sizes and reserve (`ai-fix eval --config`)."""


def run_session(run: RunInput, kit: Toolkit) -> RunResult:
    """Run the loop once; the trace is appended to as it goes and the sandbox is closed however it ends."""
    with _harness(run, kit) as harness:
        return Loop(harness).run()


def plan_session(
    run: RunInput, kit: Toolkit, *, feedback: str = "", earlier: Proposal | None = None, revision: int = 1
) -> PlanResult:
    """The planning phase on the same parts as a run (the model the run would use, the sandbox for the baseline)."""
    with _harness(run, kit) as harness:
        return Planner(harness, feedback=feedback, earlier=earlier, revision=revision).run()


@dataclass(frozen=True)
class Parts:
    """What every job's session is made of: the chosen model, opened, and the contract's checks bound to a sandbox
    over the workspace (with the setup secrets the repository may have and the refusal of those it may not)."""

    choice: ModelChoice
    model: Model
    checks: Checks
    trace: Trace


@contextmanager
def open_parts(run: RunInput, kit: Toolkit) -> Iterator[Parts]:
    """The one composition of a session, for the loop, its planning phase and a rebase alike; closed however it
    ends. A sandbox that cannot start gives checks that say so (the loop ends it as an environment error)."""
    contract, workspace, repo, secrets, reporter = run.contract, run.workspace, run.repo, run.secrets, run.reporter
    choice = choose_model(contract, kit.default_model, kit.small_model, override=run.model_override)
    model = kit.open_model(choice)
    job = SandboxJob(
        repo=repo,
        commands=contract.commands(),
        setup_key=_setup_key(contract, workspace),
        progress=reporter.say,
    )
    sandbox: Sandbox | None = None
    try:
        sandbox = kit.open_sandbox(workspace.path, contract.sandbox, job)
        reporter.say(f"sandbox: {sandbox.name}")
        provided = [name for name in contract.setup_secrets if name in kit.setup_secrets]
        allowed = [n for n in provided if secret_allowed(repo, kit.setup_secret_repos.get(n, ()))]
        setup_env = {name: kit.setup_secrets[name] for name in allowed}
        withheld = [n for n in provided if n not in allowed]
        checks: Checks = SandboxChecks(
            sandbox, contract, secrets, setup_env, withheld=withheld, repo=repo, described=workspace.describe()
        )
    except SandboxUnavailable as exc:
        checks = Unavailable(str(exc))
    try:
        yield Parts(choice, model, checks, Trace(run.trace_path, secrets, attempt=run.attempt))
    finally:
        model.close()
        if sandbox is not None:
            sandbox.close()


@contextmanager
def _harness(run: RunInput, kit: Toolkit) -> Iterator[Harness]:
    with open_parts(run, kit) as parts:
        choice = parts.choice
        yield Harness(
            contract=run.contract,
            model=parts.model,
            workspace=run.workspace,
            checks=parts.checks,
            context=kit.open_context(run.workspace.path, run.repo),
            trace=parts.trace,
            config=LoopConfig(
                model=choice.name, small_model=choice.small, model_reason=choice.reason, **(run.loop_settings or {})
            ),
            secrets=run.secrets,
            reporter=run.reporter,
            spent=run.spent or Spent(),
            keep_spent=run.keep_spent,
        )
