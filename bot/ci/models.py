"""What ai-fix knows about the project's own CI on one of its pull requests, and what it keeps in the PR body."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from bot.markers import hidden_record, read_hidden_record
from bot.vocabulary import RerunOutcome

FAILING = frozenset({"failure", "timed_out"})
"""Check conclusions that start a round (a commit status's `failure` and `error` count too)."""
CI_RECORD = "ci"
MAX_NOTES = 30


class FailedCheck(BaseModel):
    """A check that did not pass on a head commit."""

    source: Literal["workflow_run", "check_run", "status"]
    name: str
    """The workflow's name, the check run's, or the status's context."""
    conclusion: str
    run_id: int | None = None
    """The GitHub Actions workflow run, which can be re-run."""
    attempt: int = 1
    check_run_id: int | None = None
    url: str = ""
    summary: str = ""
    """A check run's output title and summary, or a status's description."""
    required: bool = True
    """Required by the base branch's protection (every check is, when the branch names none)."""


class WorkflowRun(BaseModel):
    id: int
    name: str
    status: str
    conclusion: str | None = None
    attempt: int = 1


class HeadCi(BaseModel):
    """The project's CI on one commit, as GitHub reports it now (ai-fix's own check run left out)."""

    head_sha: str
    failed: list[FailedCheck] = Field(default_factory=list)
    pending: list[str] = Field(default_factory=list)
    passed: list[str] = Field(default_factory=list)
    runs: list[WorkflowRun] = Field(default_factory=list)

    def run(self, run_id: int) -> WorkflowRun | None:
        return next((r for r in self.runs if r.id == run_id), None)

    @property
    def required_failing(self) -> list[FailedCheck]:
        return [f for f in self.failed if f.required]


class Rerun(BaseModel):
    """A re-run of a workflow's failed jobs that ai-fix asked for."""

    run_id: int
    name: str
    head_sha: str
    outcome: RerunOutcome = "requested"
    """`refused`: GitHub would not re-run it (403), so the job went on without a re-run."""


NoteKind = Literal[
    "rerun", "rerun_refused", "flaky", "round", "ci_result", "foreign_push", "limit", "draft", "rebase", "not_merged"
]


class CiNote(BaseModel):
    """One line of the progress comment's CI section."""

    kind: NoteKind
    head_sha: str
    text: str


class CiRecord(BaseModel):
    """What ai-fix did about CI and conflicts on one pull request: kept in its body, so restarts lose nothing."""

    reruns: list[Rerun] = Field(default_factory=list)
    notes: list[CiNote] = Field(default_factory=list)
    reported: list[str] = Field(default_factory=list)
    """Heads pushed by a CI round whose CI result was already reported."""

    def has_note(self, kind: NoteKind, head_sha: str) -> bool:
        return any(n.kind == kind and n.head_sha == head_sha for n in self.notes)

    def add(self, note: CiNote) -> None:
        self.notes = [*self.notes, note][-MAX_NOTES:]

    def rerun_of(self, run_id: int) -> Rerun | None:
        return next((r for r in self.reruns if r.run_id == run_id), None)


class CiRound(BaseModel):
    """What a `ci` round answered, recorded with the round."""

    head_sha: str
    """The head whose CI failed."""
    checks: list[str] = Field(default_factory=list)
    """The failing checks' names."""
    mapped: list[str] = Field(default_factory=list)
    """The contract checks the failing commands map to (reproduced in the sandbox first)."""
    reproduced_by: list[str] = Field(default_factory=list)
    """Those of them that failed in the sandbox on that head; empty: the project's CI on the pushed commit decides."""


def ci_record(record: CiRecord) -> str:
    return hidden_record(CI_RECORD, record.model_dump(mode="json"))


def read_ci_record(body: str | None) -> CiRecord:
    """The CI record of a PR body; an edited or damaged one counts as none, never as an error."""
    data = read_hidden_record(CI_RECORD, body)
    try:
        return CiRecord.model_validate(data) if isinstance(data, dict) else CiRecord()
    except ValidationError:
        return CiRecord()
