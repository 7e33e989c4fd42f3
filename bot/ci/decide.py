"""What a `ci` job does about its pull request's head, decided from GitHub's data alone (pure).

The job has already made sure it is an open ai-fix pull request from the repository itself. In order:
CI fixing on and no opt-out label; re-runs ai-fix asked for are settled (a pass is flaky, a failure is
the second one); a round the project's CI had to judge gets its result; then, for what fails now:
nothing again for a head a round already answered, nothing for a head someone else pushed, a re-run
first, no round past the limit. Whatever leaves a failing required check unfixed puts a ready PR back
to draft (the PR is ready only while they are green or pending).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bot.ci.models import CiNote, CiRecord, FailedCheck, HeadCi, NoteKind, Rerun
from bot.contract.models import CiConfig
from bot.labels import NO_CI_FIX_LABEL
from bot.vocabulary import FAILED


class PullFacts(BaseModel):
    """What the job read of the pull request and its history."""

    number: int
    labels: list[str] = Field(default_factory=list)
    head_sha: str
    last_push: str
    """The head ai-fix pushed last, from the rounds its body records; "" when it records none."""
    ci_rounds: int
    answered: list[str] = Field(default_factory=list)
    """Heads whose CI failure a round already answered."""
    awaiting: str = ""
    """The head a CI round pushed without reproducing the failure: the project's CI on it is that round's result."""
    draft: bool = False


class Decision(BaseModel):
    action: Literal["skip", "note", "rerun", "round"]
    reason: str
    record: CiRecord
    """The CI record as it is after this decision (notes and re-runs added)."""
    reruns: list[FailedCheck] = Field(default_factory=list)
    failed: list[FailedCheck] = Field(default_factory=list)
    """What the round fixes."""
    draft: str = ""
    """Why the PR goes back to draft ("": it stays as it is): a required check fails and ai-fix leaves it."""


def _short(sha: str) -> str:
    return sha[:7]


def _names(checks: list[FailedCheck]) -> str:
    return ", ".join(f"`{c.name}` ({c.conclusion})" for c in checks)


class _Notes:
    """The notes a decision adds to the record, each at most once per head."""

    def __init__(self, record: CiRecord, head: str) -> None:
        self.record, self.head, self.added = record, head, 0

    def __call__(self, kind: NoteKind, text: str, *, per_text: bool = False) -> None:
        """`per_text`: once per head and text (a PR marked ready again and left again, for another reason)."""
        said = any(n.text == text for n in self.record.notes) if per_text else self.record.has_note(kind, self.head)
        if not said:
            self.record.add(CiNote(kind=kind, head_sha=self.head, text=text))
            self.added += 1


def refused_reruns(record: CiRecord, head: str, refused: dict[int, str]) -> CiRecord:
    """The record once GitHub refused (403) to re-run some of the runs just asked for: `refused` maps run id to
    GitHub's message. They count as re-run no more (so deciding again goes on to a round or a note), and a
    note says what the App is missing.
    """
    record = record.model_copy(deep=True)
    names = []
    for rerun in record.reruns:
        if rerun.head_sha == head and rerun.outcome == "requested" and rerun.run_id in refused:
            rerun.outcome = "refused"
            names.append(f"`{rerun.name}`")
    if not any(r.head_sha == head and r.outcome == "requested" for r in record.reruns):
        record.notes = [n for n in record.notes if not (n.kind == "rerun" and n.head_sha == head)]
    why = "; ".join(sorted(set(refused.values())))
    record.add(
        CiNote(
            kind="rerun_refused",
            head_sha=head,
            text=f"GitHub refused to re-run the failed jobs of {', '.join(names)} on {_short(head)} ({why}): re-running "
            "needs the App's `actions: write` permission (app.yml; accept it in the installation's settings), or set "
            "`ci.rerun_first: false`; went on without a re-run",
        )
    )
    return record


def _switched_off(pr: PullFacts, config: CiConfig) -> str:
    """Why ai-fix leaves this PR's CI alone whatever it reports ("" when it does not)."""
    if not config.fix:
        return "CI fixing is off for this repository (ci.fix: false in .github/ai-fix.yml)"
    if any(label.casefold() == NO_CI_FIX_LABEL for label in pr.labels):
        return f"#{pr.number} carries the label {NO_CI_FIX_LABEL}"
    return ""


def _settle_reruns(record: CiRecord, ci: HeadCi, note: _Notes) -> None:
    """The re-runs asked for on this head that have completed: passed (flaky, said in a note) or failed."""
    for rerun in record.reruns:
        run = ci.run(rerun.run_id)
        if rerun.outcome != "requested" or rerun.head_sha != note.head or run is None or run.status != "completed":
            continue
        rerun.outcome = "passed" if run.conclusion == "success" else FAILED
        if rerun.outcome == "passed":
            note(
                "flaky", f"`{rerun.name}` failed on {_short(note.head)} and passed when re-run: flaky, no round needed"
            )


def decide(pr: PullFacts, ci: HeadCi, config: CiConfig, record: CiRecord) -> Decision:
    record = record.model_copy(deep=True)
    head = pr.head_sha
    note = _Notes(record, head)

    def done(reason: str) -> Decision:
        """No re-run and no round: a note when something was added to the record, else a skip.

        The PR is ready only while the required checks are green or pending: when one fails and ai-fix
        leaves it (for whichever reason), a ready PR goes back to draft, with a note saying why.
        """
        required, draft = ci.required_failing, ""
        if required and not pr.draft:
            draft = f"{_names(required)} failed on {_short(head)} and ai-fix will not fix it: {reason}"
            note("draft", f"{draft}; the pull request is back to draft", per_text=True)
        return Decision(action="note" if note.added else "skip", reason=reason, record=record, draft=draft)

    if off := _switched_off(pr, config):
        return done(off)
    _settle_reruns(record, ci, note)
    if pr.awaiting == head and head not in record.reported and not ci.pending:
        record.reported.append(head)
        verdict = f"fails: {_names(ci.failed)}" if ci.failed else f"passes ({len(ci.passed)} checks)"
        note("ci_result", f"the project's CI on {_short(head)}, pushed by the last CI round, {verdict}")

    if not ci.failed:
        return done(f"nothing fails on {_short(head)}")
    if head in pr.answered:
        return done(f"a CI round already answered the failure on {_short(head)}")
    if head != pr.last_push:
        pushed = f"ai-fix's last push was {_short(pr.last_push)}" if pr.last_push else "ai-fix recorded no push"
        note(
            "foreign_push",
            f"{_names(ci.failed)} failed on {_short(head)}, which someone else pushed ({pushed}): no CI round "
            "on a head ai-fix did not push; comment `/agent retry` to hand the branch back",
        )
        return done(f"the head {_short(head)} was pushed by someone else since ai-fix's last push")
    fresh = [f for f in ci.failed if f.run_id is not None and f.attempt == 1 and record.rerun_of(f.run_id) is None]
    if config.rerun_first and fresh:
        record.reruns += [Rerun(run_id=f.run_id or 0, name=f.name, head_sha=head) for f in fresh]
        note(
            "rerun",
            f"re-ran the failed jobs of {_names(fresh)} on {_short(head)} once; a second failure starts a round",
        )
        return Decision(
            action="rerun", reason=f"re-ran the failed jobs of {_names(fresh)}", record=record, reruns=fresh
        )
    if pr.ci_rounds >= config.max_rounds:
        note(
            "limit",
            f"{_names(ci.failed)} failed on {_short(head)} after {pr.ci_rounds} CI rounds (ci.max_rounds: "
            f"{config.max_rounds}): no round; fix it by hand or comment `/agent retry`",
        )
        return done(f"ci.max_rounds ({config.max_rounds}) reached")
    return Decision(
        action="round", reason=f"{_names(ci.failed)} failed on {_short(head)}", record=record, failed=ci.failed
    )
