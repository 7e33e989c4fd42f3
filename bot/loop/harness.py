"""What a run works with: the contract and the collaborators passed in, and the seams they must fit.

The loop never builds any of these; `bot.loop.session.run_session` assembles them from a Toolkit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from bot.checks.models import CheckRun, SetupReport
from bot.context.base import ContextProvider
from bot.contract.models import TaskContract
from bot.loop.records import Spent
from bot.loop.report import Reporter, Silent
from bot.loop.trace import Trace
from bot.model.base import Model
from bot.redact import redact
from bot.workspace.gate import PatchGate
from bot.workspace.models import DiffStats


class Workspace(Protocol):
    """The job's checkout (`bot.workspace.git.Workspace`)."""

    @property
    def path(self) -> Path: ...
    @property
    def branch(self) -> str: ...
    @property
    def base_sha(self) -> str: ...
    @property
    def head_sha(self) -> str: ...

    @property
    def evidence_base(self) -> str: ...
    @property
    def attempts_ref(self) -> str: ...
    @property
    def has_attempts(self) -> bool: ...

    def diff(self, against: str | None = None) -> str: ...
    def commit_diff(self, sha: str) -> str: ...
    def stats(self, against: str | None = None) -> DiffStats: ...
    def read_base(self, path: str) -> bytes | None: ...
    def describe(self) -> str: ...
    def checkpoint(self, message: str, *, gate: PatchGate | None = None) -> str | None: ...
    def put_back_unwritten(self, gate: PatchGate) -> None: ...
    def untracked(self) -> set[str]: ...
    def keep_out(self, paths: Iterable[str]) -> list[str]: ...
    def rollback(self) -> str: ...
    def save_work(self, message: str, *, gate: PatchGate) -> str: ...
    def keep_attempt(self, message: str) -> str | None: ...
    def laid_over(self, base: str, keep: Sequence[str] = ()) -> AbstractContextManager[None]: ...


class Checks(Protocol):
    """The contract's setup and checks, bound to a sandbox (`bot.checks.bound.SandboxChecks`)."""

    def setup(self, *, offline: bool = False) -> SetupReport:
        """Prepare the environment (run the setup commands, or reuse their snapshot); what failed is in the report.

        `offline`: for a tree holding the model's files: the commands run without network, package
        caches or setup secrets, and no snapshot is reused or kept.
        """

    def baseline(self, commit: str, *, limit_s: float | None = None) -> CheckRun:
        """Every check on the base commit; `limit_s`, here and below: the seconds the whole run may take at most
        (what is left of the wall-time budget): a check still going then is stopped, one not begun is `not_run`."""

    def run(
        self, names: list[str] | None, *, commit: str, changed_files: list[str], limit_s: float | None = None
    ) -> CheckRun: ...

    def run_selected(
        self, names: list[str], files: list[str], *, commit: str, limit_s: float | None = None
    ) -> CheckRun:
        """The named test checks narrowed to the tests in `files` (whole when their command cannot be narrowed)."""


class LoopConfig(BaseModel):
    model: str
    """The model for steps (see `bot.model.routing`)."""
    small_model: str
    """The model that compresses history."""
    model_reason: str = ""
    repo_map_tokens: int = 1500
    slice_tokens: int = 1500
    history_tokens: int = 1200
    """Above this the older conclusions are compressed by the small model."""
    reserve: float = 0.1
    """Share of the cost and wall-time budget kept for the final checks and the handoff."""
    max_tokens: int = 4096


@dataclass(frozen=True)
class Harness:
    contract: TaskContract
    model: Model
    workspace: Workspace
    checks: Checks
    context: ContextProvider
    trace: Trace
    config: LoopConfig
    secrets: Sequence[str] = ()
    reporter: Reporter = field(default_factory=Silent)
    clock: Callable[[], float] = time.monotonic
    spent: Spent = field(default_factory=Spent)
    """What earlier attempts of this job spent: this run goes on from it."""
    keep_spent: Callable[[Spent], None] = lambda _spent: None
    """Called after every step with the total spent so far, to store it with the job; must not raise."""

    def redact(self, text: str) -> str:
        """`text` with every secret the run holds removed (before it reaches the model or the trace)."""
        return redact(text, self.secrets, key_values=False)
