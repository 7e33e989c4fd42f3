"""An ai-fix pull request as the `ci`, `rebase` and `scan` jobs see it: read from GitHub, with the records its
body keeps (rounds, CI), and the two places ai-fix writes them (the PR body, the issue's progress comment).
"""

from __future__ import annotations

from typing import Any

from bot.ci.models import CI_RECORD, CiRecord, read_ci_record
from bot.markers import PROGRESS_KIND, head_in_base, marker, opened_by_ai_fix, replace_hidden_record
from bot.publish.github_out import GitHubOutput, PullRef, pull_ref
from bot.publish.models import ROUNDS_RECORD, RoundRecord, read_rounds
from bot.publish.progress import with_ci_section
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from bot.vocabulary import SKIPPED


def refusal(data: dict[str, Any], bot_login: str) -> str:
    """Why ai-fix leaves a pull request alone ("" when it may work on it): not its own, closed, or from a fork."""
    number = data.get("number")
    if not opened_by_ai_fix(data, bot_login):
        return f"#{number} is not a pull request ai-fix opened"
    if data.get("state") != "open":
        return f"#{number} is closed"
    if not head_in_base(data):
        return f"#{number} has its head outside this repository (a fork or a deleted branch): ai-fix never works on it"
    return ""


class OwnPull:
    """One pull request and what its body records."""

    @classmethod
    def read(cls, out: GitHubOutput, snapshot: Snapshot, ctx: JobContext) -> OwnPull | JobOutcome:
        """The job's pull request as GitHub has it now, or the `skipped` outcome saying why ai-fix leaves it alone."""
        data = ctx.github.get_pull(snapshot.pr_number or snapshot.number)
        if why := refusal(data, ctx.github.bot_login):
            return JobOutcome(status=SKIPPED, reason=why)
        return cls(out, data, issue=snapshot.number)

    def __init__(self, out: GitHubOutput, data: dict[str, Any], *, issue: int) -> None:
        self.out, self.data, self.issue = out, data, issue
        self.pr: PullRef = pull_ref(data)
        self.rounds: list[RoundRecord] = read_rounds(self.pr.body)
        self.record: CiRecord = read_ci_record(self.pr.body)

    @property
    def labels(self) -> list[str]:
        return [str(label.get("name")) for label in self.data.get("labels") or [] if isinstance(label, dict)]

    @property
    def last_push(self) -> str:
        """The head ai-fix pushed last, as its rounds record it ("" when they record none)."""
        return next((r.head_sha for r in reversed(self.rounds) if r.head_sha), "")

    def save(self, record: CiRecord, rounds: list[RoundRecord] | None = None) -> None:
        """Write the records into the PR body and the notes into the issue's progress comment."""
        body = replace_hidden_record(CI_RECORD, self.pr.body, record.model_dump(mode="json"))
        if rounds is not None:
            body = replace_hidden_record(ROUNDS_RECORD, body, [r.model_dump(mode="json") for r in rounds])
            self.rounds = rounds
        if body != self.pr.body:
            self.pr = self.out.pulls.update_body(self.pr, body)
        self.record = record
        progress = (
            self.out.comments.progress_body(self.issue) or f"{marker(PROGRESS_KIND, self.issue)}\n### ai-fix progress\n"
        )
        self.out.comments.upsert_progress(self.issue, with_ci_section(progress, record), None)
