"""What an eval records: each run's hidden-test results and class, the variants compared, the figures per variant."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.vocabulary import TestState

Class = Literal["automatic", "incorrect", "partial", "refused", "error"]
CLASSES: tuple[Class, ...] = ("incorrect", "automatic", "partial", "refused")
"""The classes of a run, the dangerous one first (the order of every table and chart)."""


class HiddenResult(BaseModel):
    """The hidden tests on the run's result: `test_patch` applied, FAIL_TO_PASS and PASS_TO_PASS run."""

    command: str = ""
    applied: bool = True
    """False when `test_patch` did not apply to the result (every hidden test then counts as not run)."""
    problem: str = ""
    """Why the tests could not run, in words; empty when they ran."""
    fail_to_pass: dict[str, TestState] = Field(default_factory=dict)
    pass_to_pass: dict[str, TestState] = Field(default_factory=dict)
    duration_s: float = 0.0
    failing_on_base: list[str] = Field(default_factory=list)
    """PASS_TO_PASS ids that fail on the base commit in the same environment: a fact of the environment, never counted
    against the change."""
    unmatched: list[str] = Field(default_factory=list)
    """Published ids that name no test in either run (cut or debris ids no runner reports): reported, never failing."""
    base_problem: str = ""
    """Why the hidden tests could not run on the base commit, when they could not."""

    @property
    def resolved(self) -> bool:
        """Every FAIL_TO_PASS test passes, and every PASS_TO_PASS test the base environment could pass."""
        kept = [s for t, s in self.pass_to_pass.items() if t not in self.failing_on_base]
        return bool(self.fail_to_pass) and all(s == "pass" for s in [*self.fail_to_pass.values(), *kept])

    @property
    def some_fixed(self) -> bool:
        """At least one FAIL_TO_PASS test passes."""
        return any(s == "pass" for s in self.fail_to_pass.values())


class Tokens(BaseModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write


class TaskRecord(BaseModel):
    """One task run by one variant: what ai-fix said, what the hidden tests showed, the class, the cost."""

    model_config = ConfigDict(populate_by_name=True)

    instance_id: str
    variant: str
    model: str
    config: str
    klass: Class = Field(alias="class")
    outcome: str = ""
    """ai-fix's outcome (accepted, unverified, handed_off, failed, needs_clarification); empty for an error."""
    reason: str = ""
    error: str = ""
    """Why the task could not be run (not a result of the model or the harness: it counts in no rate)."""
    hidden: HiddenResult | None = None
    steps: int = 0
    rounds: int = 0
    """Check rounds: how often the harness ran the contract's checks on a change (run_checks and finish)."""
    rolled_back: bool = False
    tokens: Tokens = Field(default_factory=Tokens)
    usd: float | None = 0.0
    wall_s: float = 0.0
    """The whole run as `ai-fix run` does it: contract, setup, baseline, loop, evidence."""
    branch: str = ""
    repo: str = ""
    """The run's repository, holding the branch with its work."""


class Rate(BaseModel):
    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None
    """The 95 % Wilson score interval."""


class Summary(BaseModel):
    """The figures of one variant over the tasks it ran."""

    variant: str
    model: str
    config: str
    tasks: int
    errors: int
    classes: dict[str, Rate]
    resolved: Rate
    """Every hidden test passes, whatever ai-fix said."""
    takeover: Rate
    """Unverified, handed off or needing clarification: a person has to take over."""
    rollback: Rate
    rounds: float | None
    steps: float | None
    tokens: Tokens
    """Mean per task."""
    cached_share: float | None
    """Prompt tokens read from the cache, over all prompt tokens."""
    usd_per_task: float | None
    """None when a model used is missing from the price table."""
    wall_s_per_task: float | None
