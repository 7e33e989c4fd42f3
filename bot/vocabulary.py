"""The words ai-fix's states are spelled with: outcomes, statuses, kinds and phases, once.

Each family is a `Literal` type and its tuple comes from `get_args`, so the two cannot drift apart. Code
elsewhere names a word through its constant (`ACCEPTED`, never the string): mypy treats a `Final` name
bound to a string as that literal, and `tests/test_vocabulary.py` fails on a status word spelled as a
string anywhere else in `bot/`. Word tables (what a person reads for a phase or a kind) live here too,
keyed by the family they translate, so adding a word without its wording is a type error.
"""

from __future__ import annotations

from typing import Final, Literal, assert_never, get_args

ACCEPTED: Final = "accepted"
UNVERIFIED: Final = "unverified"
HANDED_OFF: Final = "handed_off"
FAILED: Final = "failed"
NEEDS_CLARIFICATION: Final = "needs_clarification"
QUEUED: Final = "queued"
RUNNING: Final = "running"
AWAITING_APPROVAL: Final = "awaiting_approval"
DONE: Final = "done"
CANCELLED: Final = "cancelled"
REJECTED: Final = "rejected"
SKIPPED: Final = "skipped"

Outcome = Literal["accepted", "unverified", "handed_off", "failed", "needs_clarification"]
"""How one run of the execution loop ended (`RunResult.outcome`)."""
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

FinalStatus = Literal[
    "done", "unverified", "failed", "cancelled", "rejected", "needs_clarification", "handed_off", "skipped"
]
"""A job's status once nothing will run it again."""
FINAL_STATUSES: frozenset[FinalStatus] = frozenset(get_args(FinalStatus))

JobStatus = Literal["queued", "running", "awaiting_approval", FinalStatus]
"""Every status a stored job can have."""
JOB_STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)

EndStatus = Literal[
    "done", "unverified", "failed", "needs_clarification", "handed_off", "cancelled", "awaiting_approval", "skipped"
]
"""What a pipeline may end an attempt with (`JobOutcome.status`): a final status, or waiting for an answer.
`rejected` is not among them: only the store rejects a job (a trigger it refuses to run)."""

ContractReadiness = Literal["ready", "needs_clarification"]
"""Whether a task contract can be worked on, or the issue must first say what it lacks."""
ContractStatus = Literal[ContractReadiness, "config_error"]
"""What the contract stage decided: go on, ask the issue for what it lacks, or report a broken config."""

PlanOutcome = Literal["proposed", "handed_off", "failed", "needs_clarification"]
"""How the read-only planning phase ended."""

SetupStatus = Literal["none", "ran", "reused", "failed"]
"""What became of a run's setup: nothing to do, run now, reused from a snapshot, or failed."""
OfflineSetup = Literal["", "ran", "failed"]
"""The second, network-free run of a setup that had network (`""`: there was none)."""

TestStatus = Literal["pass", "fail", "error", "skipped"]
"""One test case's result, as junit and unittest report it."""
TestState = Literal[TestStatus, "not_run"]
"""A hidden test's result in an evaluation (`not_run`: its file never ran)."""
BaseStatus = Literal[TestStatus, "not_collected", "not_run"]
"""A test's result on the base commit (`not_collected`: it did not exist there)."""
CheckStatus = Literal["pass", "fail", "error", "timeout", "killed", "flaky", "not_run"]
"""One contract check's result."""

BEHAVIOUR: Final = "behaviour"
REGRESSION: Final = "regression"
REVIEWER: Final = "reviewer"

CriterionKind = Literal["behaviour", "regression", "reviewer"]
"""What shows an acceptance criterion: `behaviour`, a test that fails on the base commit and passes after the
change; `regression` (something must keep working), the checks passing with nothing that passed on the base commit
now failing, skipped or gone; `reviewer` (wording, docs, naming), a person reading the change."""
CRITERION_KINDS: tuple[CriterionKind, ...] = get_args(CriterionKind)

STORED: Final = "stored"
IGNORED: Final = "ignored"
PING: Final = "ping"
DUPLICATE: Final = "duplicate"
MERGED: Final = "merged"

Enqueued = Literal["queued", "merged"]
"""What became of a trigger: a new job `queued`, or `merged` into the active job of its issue or PR."""
Meaning = Literal["ignored", "ping", "trigger", "installation", "label_removed"]
"""What the intake decided a delivery means, before anything is stored (`bot.intake.triggers`)."""
IntakeAnswer = Literal["ignored", "ping", "installation", "label_removed", "queued", "merged", "duplicate", "stored"]
"""The webhook's answer word for a delivery it kept (`"outcome"` in its JSON): what it meant, or, for a trigger, what
became of it (`queued` as a new job, `merged` into one), `duplicate` for a delivery id seen before, and `stored` for a
delivery stored whose meaning is applied soon after (until 5 December 2026 that word was `accepted`)."""

UNVERIFIED_EVENT: Final = "unverified"
"""The /metrics event label for deliveries whose signature was not checked or failed (not an outcome)."""

RerunOutcome = Literal["requested", "passed", "failed", "refused"]
"""A re-run of the project's CI that ai-fix asked GitHub for."""


def job_status(outcome: Outcome) -> Literal["done", "unverified", "handed_off", "failed", "needs_clarification"]:
    """The job status a run's outcome gives; mypy fails here when an outcome is added and not mapped."""
    match outcome:
        case "accepted":
            return DONE
        case "unverified" | "handed_off" | "failed" | "needs_clarification":
            return outcome
        case _:
            assert_never(outcome)


def plan_end_status(outcome: PlanOutcome) -> Literal["failed", "needs_clarification", "handed_off"]:
    """How a planning phase that made no proposal ends the job: its own failure or question, else handed off."""
    match outcome:
        case "failed" | "needs_clarification":
            return outcome
        case "proposed" | "handed_off":
            return HANDED_OFF
        case _:
            assert_never(outcome)


WorkKind = Literal["issue", "retry", "review", "ci", "rebase", "scan"]
"""Jobs that work on an issue or PR; at most one of them runs per issue or PR at a time. `scan`: a
base-branch push or a commit status, resolved to the ai-fix pull requests it concerns (no issue)."""
WORK_KINDS: tuple[WorkKind, ...] = get_args(WorkKind)
OwnFamilyKind = Literal["ci", "rebase", "scan"]
"""Kinds whose triggers merge only into a queued job of the same kind (a CI failure is not a review)."""
OWN_FAMILY_KINDS: tuple[OwnFamilyKind, ...] = get_args(OwnFamilyKind)
AnswerKind = Literal["approve", "revise"]
"""Commands that answer a plan awaiting approval."""
ANSWER_KINDS: tuple[AnswerKind, ...] = get_args(AnswerKind)
CommandKind = Literal["stop", "help", AnswerKind]
"""Short commands; a separate control worker runs them so `/agent stop` never waits behind long jobs."""
COMMAND_KINDS: tuple[CommandKind, ...] = get_args(CommandKind)
ChoreKind = Literal["labels"]
"""Upkeep ai-fix does on a repository by itself, with no issue and no person behind it (its labels, made when the
App is installed on the repository); a worker of their own runs them, so they never wait behind work or commands."""
CHORE_KINDS: tuple[ChoreKind, ...] = get_args(ChoreKind)
TriggerKind = Literal[WorkKind, CommandKind, ChoreKind]
"""Every kind of trigger, and so of job."""
RunKind = Literal[WorkKind, "local"]
"""What started a run of the loop: a job's kind, or `ai-fix run` on this machine."""

KIND_WORDS: dict[WorkKind, str] = {
    "issue": "first run",
    "retry": "`/agent retry`",
    "review": "review",
    "ci": "CI fix",
    "rebase": "merge of the base branch",
    "scan": "base-branch check",
}
"""How the progress comment names a round of each kind."""

RunPhase = Literal["setup", "baseline", "steps", "verifying", "final_checks"]
"""What a run of the loop is doing, as it reports to its `Reporter`."""
RUN_PHASE_WORDS: dict[RunPhase, str] = {
    "setup": "setup",
    "baseline": "baseline checks",
    "steps": "steps",
    "verifying": "verifying finish",
    "final_checks": "final checks",
}
"""How `ai-fix run` prints each phase."""

CommentPhase = Literal["contract", "plan", "baseline", "round", "checks", "pull_request"]
"""The phases the progress comment ticks off, in order."""
COMMENT_PHASES: tuple[CommentPhase, ...] = get_args(CommentPhase)
COMMENT_PHASE_WORDS: dict[CommentPhase, str] = {
    "contract": "Task contract",
    "plan": "Plan: two approaches, one approved by a maintainer",
    "baseline": "Baseline checks on the base commit",
    "round": "Round",
    "checks": "Contract checks on the change",
    "pull_request": "Pull request",
}


def comment_phase(phase: RunPhase) -> CommentPhase | None:
    """The progress comment's phase a run's phase moves it to; None for those it shows as part of another."""
    match phase:
        case "baseline":
            return "baseline"
        case "steps":
            return "round"
        case "final_checks":
            return "checks"
        case "setup" | "verifying":
            return None
        case _:
            assert_never(phase)
