"""The run's state: everything the loop learns as it goes, typed, in one object the ending renders from."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.checks.models import CheckRun, SetupReport
from bot.context.base import Query
from bot.evidence.models import Evidence
from bot.loop.harness import Harness, Workspace
from bot.loop.records import Spent
from bot.loop.result import Plan
from bot.model.base import Usage
from bot.workspace.gate import PatchGate
from bot.workspace.models import DiffStats


class ChangeView:
    """The change against the base, asked of git again only after the workspace changed."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._stats: DiffStats | None = None
        self._diff: str | None = None

    def stats(self) -> DiffStats:
        if self._stats is None:
            self._stats = self.workspace.stats()
        return self._stats

    def diff(self) -> str:
        if self._diff is None:
            self._diff = self.workspace.diff() if self.stats().files else ""
        return self._diff

    def changed_files(self) -> list[str]:
        return [f.path for f in self.stats().files]

    def forget(self) -> None:
        """The workspace changed (an edit, a rollback, checks that write files)."""
        self._stats = self._diff = None


@dataclass
class RunState:
    gate: PatchGate
    """The patch gate every write passes; narrowed to the failing area after a rollback."""
    scope_note: str
    change: ChangeView
    started: float
    plan: Plan | None = None
    steps: int = 0
    conclusions: list[str] = field(default_factory=list)
    """One line per finding, for the history layer (older ones compressed by the small model)."""
    ruled_out: list[str] = field(default_factory=list)
    """Approaches tried and why they failed; kept verbatim."""
    done: list[str] = field(default_factory=list)
    """Edits kept in checkpoints."""
    attempt_edits: list[str] = field(default_factory=list)
    """Edits since the last good checkpoint: the approach being tried."""
    last_results: list[str] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    """How often each failure signature came back since the last progress."""
    narrowed: bool = False
    setup: SetupReport | None = None
    """How the environment was prepared (a guessed setup that failed is said in the PR)."""
    baseline: CheckRun | None = None
    latest: CheckRun | None = None
    good: dict[str, str] = field(default_factory=dict)
    """Each check's status at the last good checkpoint."""
    final: CheckRun | None = None
    summary: str = ""
    risks: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cost_known: bool = True
    environment_ok: bool = False
    """Set once setup and the baseline ran: only then are final checks worth running."""
    stable: str = ""
    """The stable context layer, built once after the baseline."""
    retrieved: tuple[Query, str] | None = None
    evidence: Evidence | None = None
    """What the harness showed at the last verified `finish`."""
    evidence_refusals: int = 0
    """How often `finish` was refused for want of evidence: the model gets one chance to add it."""
    evidence_base_run: CheckRun | None = None
    """The test checks on the pull request's original base (later rounds), run once."""
    tried: list[str] = field(default_factory=list)
    """One line per step: what it tried and what came of it (the handoff's record)."""
    last_call: str = ""
    repeats: int = 0
    """How many times in a row the same tool call with the same input came."""
    silent: int = 0
    """How many answers in a row came without a tool call."""

    @classmethod
    def begin(cls, h: Harness) -> RunState:
        """A run's state, counting what earlier attempts spent (`h.spent`) against the budget."""
        scope, spent = h.contract.scope, h.spent
        return cls(
            gate=PatchGate.over(h.workspace, scope, h.contract.budget),
            scope_note="allow " + ", ".join(scope.allow) + "; deny " + ", ".join(scope.deny),
            change=ChangeView(h.workspace),
            started=h.clock() - spent.wall_s,
            steps=spent.steps,
            usage=spent.usage,
            cost=spent.cost_usd,
            cost_known=spent.cost_known,
        )

    def spent(self, now: float) -> Spent:
        return Spent(
            steps=self.steps,
            usage=self.usage,
            cost_usd=self.cost,
            cost_known=self.cost_known,
            wall_s=now - self.started,
        )
