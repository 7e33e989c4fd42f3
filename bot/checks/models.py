"""Results of running a contract's checks; the evidence every PR carries."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bot.envdir import DEPENDENCY_DIRS
from bot.vocabulary import FAILED, CheckStatus, OfflineSetup, SetupStatus, TestStatus


class TestCase(BaseModel):
    id: str
    """e.g. "tests/test_calc.py::test_add"."""
    status: TestStatus
    file: str | None = None
    line: int | None = None
    message: str = ""


class CheckResult(BaseModel):
    name: str
    command: str
    status: CheckStatus
    exit_code: int | None = None
    duration_s: float = 0.0
    output: str = ""
    """Head and tail of the combined output, capped."""
    dropped_bytes: int = 0
    """How much of the output was cut out of the middle."""
    tests: list[TestCase] = Field(default_factory=list)
    signature: str | None = None
    """Normalised failure signature; equal signatures mean "the same failure again"."""
    summary: str = ""
    """What the model is shown: failed assertions, key frames, secrets redacted."""
    reason: str = ""
    """Why a check is `error`, `killed`, `timeout` or `not_run`, in words."""
    selected: list[str] = Field(default_factory=list)
    """The test files it was narrowed to; empty when the whole check ran."""


class CheckRun(BaseModel):
    """All checks run at one point (baseline on the base commit, or after a change)."""

    commit: str
    results: list[CheckResult] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.status == "pass" for r in self.results)

    def result(self, name: str) -> CheckResult | None:
        return next((r for r in self.results if r.name == name), None)

    def failing(self) -> list[CheckResult]:
        """The results that did not pass, in run order."""
        return [r for r in self.results if r.status != "pass"]


class SetupReport(BaseModel):
    """How the job's environment was prepared: its setup commands run, a snapshot of them reused, or neither."""

    status: SetupStatus
    origin: Literal["config", "detected"] = "config"
    commands: int = 0
    """How many setup commands ran (or the snapshot stands for)."""
    duration_s: float = 0.0
    snapshot: str = ""
    """The setup snapshot reused, or the one saved after this setup ran."""
    problem: str = ""
    """What failed and why (redacted), when status is `failed`."""
    on_base: str = ""
    """The commit whose files setup ran on, when the tree held the model's files (a later round's branch)."""
    changed_inputs: list[str] = Field(default_factory=list)
    """Setup inputs the model's change touched: setup ran again on the tree's own files, without network."""
    offline: OfflineSetup = ""
    """How that second, offline run went ("" when there was none)."""
    offline_problem: str = ""
    failed_command: str = ""
    """The setup command that failed, when status is `failed`."""
    exit_code: int | None = None
    """Its exit code (None when it was killed or timed out)."""
    error: str = ""
    """The line of its output that says what went wrong (an exception, pip's error), whole, not a notice."""
    fix: str = ""
    """For a guessed setup that failed: the `.github/ai-fix.yml` line that replaces it, to edit and commit."""
    last_lines: str = ""
    """The end of its output (redacted), for the trace and the evidence."""
    notes: list[str] = Field(default_factory=list)
    """What setup said of itself: its output's lines starting `ai-fix:` (which way a guessed install took)."""
    removed: list[str] = Field(default_factory=list)
    """What a failed guessed setup had made, removed so the checks run with the environment as it was."""
    withheld: list[str] = Field(default_factory=list)
    """What a setup given secrets created outside the environment folders, removed before any check or the model
    sees it: it may hold a secret in a form no search finds."""
    searched: int = 0
    """Paths setup created or changed that were searched for the setup secrets it was given (none held one)."""
    search_s: float = 0.0
    secret_files: list[str] = Field(default_factory=list)
    """Paths setup left holding a setup secret (as written, backwards or encoded): the job stops before the model."""

    @property
    def guess_failed(self) -> bool:
        """A detected setup failed (and left no secret behind): the run goes on without it and the baseline decides."""
        return self.status == FAILED and self.origin == "detected" and not self.secret_files

    def describe(self) -> str:
        """One line for the log, the job's events and the progress comment."""
        took = f"{self.duration_s:.1f} s"
        which = f"{self.commands} {self.origin} command{'s' if self.commands != 1 else ''}"
        where = f" on the files of the base commit {self.on_base[:12]}" if self.on_base else ""
        if self.status == "none":
            return "no setup commands"
        if self.status == "reused":
            line = f"reused the setup snapshot {self.snapshot} ({which}; their inputs are unchanged{where}) in {took}"
        elif self.guess_failed:
            fix = f"; to set it up yourself, put `{self.fix}` in .github/ai-fix.yml" if self.fix else ""
            return (
                f"the guessed setup failed after {took}{where}: {self.problem}; "
                f"going on with the checks in the environment as it was{fix}"
            )
        elif self.status == FAILED:
            return f"failed after {took}{where}: {self.problem}"
        else:
            saved = f"; snapshot saved as {self.snapshot}" if self.snapshot else ""
            line = f"ran {which}{where} in {took}{saved}"
        line += "".join(f"; {note}" for note in self.notes)
        if self.searched:
            paths = f"{self.searched} path{'s' if self.searched != 1 else ''}"
            line += f"; searched the {paths} it wrote for its setup secrets in {self.search_s:.1f} s: none found"
        if self.withheld:
            shown = ", ".join(self.withheld[:5]) + (
                f" and {len(self.withheld) - 5} more" if len(self.withheld) > 5 else ""
            )
            line += (
                f"; removed what it created outside the environment folders ({shown}): a setup given secrets keeps "
                f"only what it writes into {' or '.join(sorted(DEPENDENCY_DIRS))}"
            )
        inputs = ", ".join(self.changed_inputs)
        if self.offline == "ran":
            line += f"; ran again without network for the change to {inputs}"
        elif self.offline == FAILED:
            line += (
                f"; running again without network for the change to {inputs} failed ({self.offline_problem}), "
                "so the checks use the environment of the base commit's files"
            )
        return line
