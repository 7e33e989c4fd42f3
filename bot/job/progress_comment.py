"""The issue's one progress comment as a job round keeps it: what it shows, and posting it in place."""

from __future__ import annotations

from bot.job.checkpoint import Checkpoint
from bot.publish.github_out import GitHubOutput
from bot.publish.models import Progress
from bot.publish.progress import render_progress
from bot.vocabulary import CommentPhase, Outcome


class ProgressComment:
    def __init__(self, out: GitHubOutput, checkpoint: Checkpoint, progress: Progress) -> None:
        self.out, self.checkpoint, self.progress = out, checkpoint, progress

    def post(self) -> str:
        """Create or update the comment; its URL. Its id is kept in the round's state, so it is edited, never doubled."""
        state = self.checkpoint.state
        comment = self.out.comments.upsert_progress(
            self.progress.issue_number, render_progress(self.progress), state.comment_id
        )
        state.comment_id = int(comment["id"])
        return str(comment.get("html_url", ""))

    def show_contract(self, section: str, open_: bool) -> str:
        """The contract stage's section in the comment (`open_`: it is what stops the job); the comment's URL."""
        self.progress.contract, self.progress.contract_open = section, open_
        return self.post()

    def move(self, phase: CommentPhase) -> None:
        self.progress.current = phase
        self.post()
        self.checkpoint.save()

    def finish(self, outcome: Outcome, reason: str) -> None:
        self.progress.outcome, self.progress.reason = outcome, reason
        self.post()
