"""The run's state: everything the loop learns as it goes, typed, in one object the ending renders from."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.checks.models import CheckResult, CheckRun, SetupReport
from bot.context.base import Query
from bot.evidence.models import CriterionMapping, Evidence
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
class Meter:
    """What the run has spent against the budget; `accounting` adds each model call, the loop counts steps."""

    started: float
    """When the run began, on the harness's clock (earlier attempts' wall time already subtracted)."""
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cost_known: bool = True
    """False once a model without a price answered: its cost is unknown and the cost limit cannot apply."""

    @classmethod
    def resumed(cls, spent: Spent, now: float) -> Meter:
        """A meter going on from what earlier attempts `spent` (their wall time already counted as begun)."""
        return cls(
            started=now - spent.wall_s,
            steps=spent.steps,
            usage=spent.usage,
            cost=spent.cost_usd,
            cost_known=spent.cost_known,
        )

    def step_done(self) -> None:
        self.steps += 1

    def add(self, usage: Usage, cost_usd: float | None) -> bool:
        """Count one model call; True when it is the first whose cost is unknown (the caller says so once)."""
        self.usage = self.usage + usage
        if cost_usd is None:
            first, self.cost_known = self.cost_known, False
            return first
        self.cost += cost_usd
        return False

    def spend(self) -> str:
        return f"${self.cost:.4f}" if self.cost_known else "unknown (a model has no price)"

    def spent(self, now: float) -> Spent:
        return Spent(
            steps=self.steps,
            usage=self.usage,
            cost_usd=self.cost,
            cost_known=self.cost_known,
            wall_s=now - self.started,
        )


@dataclass
class Notes:
    """What the run has learnt, for the history layer, the next request and the handoff."""

    conclusions: list[str] = field(default_factory=list)
    """One line per finding, for the history layer (older ones compressed by the small model)."""
    ruled_out: list[str] = field(default_factory=list)
    """Approaches tried and why they failed; kept verbatim."""
    done: list[str] = field(default_factory=list)
    """Edits kept in checkpoints."""
    attempt_edits: list[str] = field(default_factory=list)
    """Edits since the last good checkpoint: the approach being tried."""
    last_results: list[str] = field(default_factory=list)
    """What the tool calls of the current step answered, shown in the next request."""
    tried: list[str] = field(default_factory=list)
    """One line per step: what it tried and what came of it (the handoff's record)."""

    def conclude(self, *lines: str) -> None:
        self.conclusions.extend(lines)

    def compressed(self, summary: list[str], keep: int) -> None:
        """The older conclusions replaced by the small model's `summary`; the last `keep` stay verbatim."""
        self.conclusions = [f"(earlier) {line}" for line in summary] + self.conclusions[-keep:]

    def edited(self, what: str) -> None:
        self.attempt_edits.append(what)

    def kept(self) -> None:
        """The attempt's edits are in a checkpoint now."""
        self.done += self.attempt_edits
        self.attempt_edits = []

    def rule_out(self, approach: str, why: str) -> None:
        """The attempt failed the same way again: it is ruled out and its edits are gone."""
        self.ruled_out.append(f"{approach} — still fails: {why}")
        self.attempt_edits = []

    def new_step(self) -> None:
        self.last_results = []

    def result(self, line: str) -> None:
        self.last_results.append(line)

    def step_ended(self, summary: str) -> None:
        self.tried.append(summary)


@dataclass
class Stalls:
    """How the run fails to move: failures counted by signature, repeated calls, silent answers, refusals."""

    failures: dict[str, int] = field(default_factory=dict)
    """How often each failure signature came back since the last progress."""
    narrowed: bool = False
    """Set once the scope was narrowed after a rollback: the next repeated failure hands off."""
    last_call: str = ""
    repeats: int = 0
    """How many times in a row the same tool call with the same input came."""
    silent: int = 0
    """How many answers in a row came without a tool call."""
    evidence_refusals: int = 0
    """How often `finish` was refused for want of evidence: the model gets one chance to add it."""

    def failed(self, key: str) -> int:
        """One more time failure `key` came back; how many times in all."""
        self.failures[key] = self.failures.get(key, 0) + 1
        return self.failures[key]

    def forget_failures(self) -> None:
        """Counting starts again: the checks improved, or the approach that kept failing was ruled out."""
        self.failures = {}

    def narrow(self) -> None:
        self.narrowed = True

    def called(self, call: str) -> int:
        """A tool call (its name and input): how many times in a row it came."""
        self.silent = 0
        self.repeats = self.repeats + 1 if call == self.last_call else 1
        self.last_call = call
        return self.repeats

    def no_call(self) -> int:
        """An answer without a tool call; how many in a row."""
        self.silent += 1
        return self.silent

    def reset(self) -> None:
        """The repetition was dealt with (rolled back): counting starts again."""
        self.repeats = self.silent = 0
        self.last_call = ""

    def refuse_evidence(self) -> bool:
        """A `finish` without enough evidence: True the first time (the model may add it), False after."""
        self.evidence_refusals += 1
        return self.evidence_refusals == 1


@dataclass
class CheckState:
    """What the checks have shown: setup, the baseline, the latest run and each check's status at the last good
    checkpoint."""

    setup: SetupReport | None = None
    """How the environment was prepared (a guessed setup that failed is said in the PR)."""
    baseline: CheckRun | None = None
    latest: CheckRun | None = None
    latest_tree: str = ""
    """The change (its diff) the latest run ran on: a stall on a passing change that is still this one ends the run
    without rolling back."""
    good: dict[str, CheckResult] = field(default_factory=dict)
    """Each check's result at the last good checkpoint."""
    environment_ok: bool = False
    """Set once setup and the baseline ran: only then are final checks worth running."""
    evidence_base_run: CheckRun | None = None
    """The test checks on the pull request's original base (later rounds), run once."""

    def prepared(self, setup: SetupReport) -> None:
        self.setup = setup

    def began(self, baseline: CheckRun) -> None:
        self.baseline = self.latest = baseline

    def ready(self) -> None:
        """Setup and the baseline ran: the baseline's statuses are the first bar, and final checks are worth running."""
        self.good = {r.name: r for r in self.baseline.results} if self.baseline else {}
        self.environment_ok = True

    def ran(self, run: CheckRun, *, tree: str) -> None:
        self.latest, self.latest_tree = run, tree

    def kept(self, run: CheckRun) -> None:
        """`run` passed well enough to be a checkpoint: its statuses are the new bar."""
        self.good.update({r.name: r for r in run.results})

    def rolled_back(self) -> None:
        self.latest, self.latest_tree = None, ""

    def base_ran(self, run: CheckRun) -> None:
        self.evidence_base_run = run


@dataclass
class Finish:
    """What the last verified `finish` claimed and showed; the ending renders the result from it."""

    final: CheckRun | None = None
    summary: str = ""
    risks: list[str] = field(default_factory=list)
    mapping: list[CriterionMapping] = field(default_factory=list)
    """The criteria → tests the model named at its last `finish`."""
    evidence: Evidence | None = None
    """What the harness showed at the last verified `finish`."""

    def shown(self, evidence: Evidence) -> None:
        self.evidence = evidence

    def claimed(self, final: CheckRun, summary: str, risks: list[str], mapping: list[CriterionMapping]) -> None:
        self.final, self.summary, self.risks, self.mapping = final, summary, risks, mapping

    def checked(self, final: CheckRun) -> None:
        """The ending's own last run of the checks."""
        self.final = final


@dataclass
class RunState:
    """Everything the loop learns as it goes, in parts that change only through their own methods."""

    gate: PatchGate
    """The patch gate every write passes; narrowed to the failing area after a rollback (`steering`)."""
    scope_note: str
    change: ChangeView
    meter: Meter
    plan: Plan | None = None
    """Set by the `plan` tool."""
    notes: Notes = field(default_factory=Notes)
    stalls: Stalls = field(default_factory=Stalls)
    checks: CheckState = field(default_factory=CheckState)
    finish: Finish = field(default_factory=Finish)
    stable: str = ""
    """The stable context layer, built once after the baseline (`preflight`, or the planner's own)."""
    retrieved: tuple[Query, str] | None = None
    """The last retrieval and its query (`prompt`): asked again only when the query changes."""

    @classmethod
    def begin(cls, h: Harness) -> RunState:
        """A run's state, counting what earlier attempts spent (`h.spent`) against the budget."""
        scope, spent = h.contract.scope, h.spent
        return cls(
            gate=PatchGate.over(h.workspace, scope, h.contract.budget),
            scope_note="allow " + ", ".join(scope.allow) + "; deny " + ", ".join(scope.deny),
            change=ChangeView(h.workspace),
            meter=Meter.resumed(spent, h.clock()),
        )

    def narrowed(self, gate: PatchGate | None, note: str) -> None:
        """After a rollback: the scope narrowed to the failing area (`gate`), or kept when none was found."""
        if gate is not None:
            self.gate, self.scope_note = gate, note
