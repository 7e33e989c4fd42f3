"""The pull request side of a round: finding its PR, and everything a finished round shows there."""

from __future__ import annotations

from bot.ci.models import CiRecord, ci_record, read_ci_record
from bot.job.checkpoint import Checkpoint
from bot.job.progress_comment import ProgressComment
from bot.job.rounds import RoundInput, ready_for_review
from bot.loop.result import RunResult
from bot.publish.checkrun import render_check_run
from bot.publish.ci_notes import answered, round_note
from bot.publish.github_out import GitHubOutput, PullRef
from bot.publish.models import RoundRecord, read_rounds
from bot.publish.render import render_pr_body
from bot.publish.replies import render_reply
from bot.snapshot import Snapshot
from bot.workspace.branch import branch_name


class PullRequestSide:
    """Owns the round's pull request, the rounds it recorded before this job, and its CI record."""

    def __init__(
        self,
        out: GitHubOutput,
        snapshot: Snapshot,
        checkpoint: Checkpoint,
        comment: ProgressComment,
        round_input: RoundInput | None,
        run_url: str,
    ) -> None:
        self.out, self.snapshot, self.checkpoint, self.comment = out, snapshot, checkpoint, comment
        self.round_input, self.run_url = round_input, run_url
        self.pr: PullRef | None = None
        self.rounds: list[RoundRecord] = []
        self.ci = CiRecord()

    def find(self) -> None:
        """The PR this round continues, if any, and what its body records; the progress comment shows them."""
        state, progress = self.checkpoint.state, self.comment.progress
        if state.pr_number is not None:
            self.pr = self.out.pulls.get(state.pr_number)
        elif self.snapshot.pr_number is not None:
            self.pr = self.out.pulls.get(self.snapshot.pr_number)
        else:
            self.pr = self.out.pulls.find(self.snapshot.number, branch_name(self.snapshot.number, self.snapshot.title))
        if state.rounds is None:
            # Read once per job: after this job publishes, the PR body also records this job's own round.
            state.rounds = read_rounds(self.pr.body) if self.pr else []
        self.rounds = state.rounds
        self.ci = progress.ci = read_ci_record(self.pr.body) if self.pr else CiRecord()
        progress.rounds, progress.round_n = self.rounds, len(self.rounds) + 1
        progress.pr_url = self.pr.html_url if self.pr else ""

    @property
    def first_base(self) -> str:
        """The base commit round 1 took its evidence against ("" before any round)."""
        return self.rounds[0].base_sha if self.rounds else ""

    def publish(self, result: RunResult) -> None:
        """The PR body, review request, ready state, outcome label, check run and replies to review comments."""
        progress, run_url = self.comment.progress, self.run_url
        progress.current = "pull_request"
        ci = answered(self.round_input.ci, result) if self.round_input else None
        if ci is not None and not self.ci.has_note("round", ci.head_sha):
            self.ci.add(round_note(ci, result, len(self.rounds) + 1))
        kept = [ci_record(self.ci)] if self.ci.notes or self.ci.reruns else []
        body = render_pr_body(
            result,
            issue_number=self.snapshot.number,
            rounds=self.rounds,
            kind=self.snapshot.kind,
            run_url=run_url,
            ci=ci,
            records=kept,
        )
        pr = self.out.pulls.upsert(
            issue_number=self.snapshot.number,
            branch=result.branch,
            base=self.snapshot.default_branch,
            title=f"ai-fix: {self.snapshot.title}",
            body=body,
            existing=self.pr,
        )
        self.pr = pr
        self.checkpoint.state.pr_number = pr.number
        progress.pr_url = pr.html_url
        self.checkpoint.save()
        self.out.pulls.request_review(pr, self.snapshot.sender)
        self.pr = pr = self.out.pulls.set_ready(pr, ready_for_review(result))
        self.out.pulls.set_outcome_label(pr, result.outcome)
        if result.head_sha:
            self.out.checks.publish(
                result.head_sha,
                render_check_run(result, pr_url=pr.html_url, run_url=run_url),
                details_url=run_url or pr.html_url,
            )
        self.reply(result, pr)

    def reply(self, result: RunResult, pr: PullRef) -> None:
        """Answer each review comment of the round once (a later attempt skips those already answered)."""
        replied = self.checkpoint.state.replied
        for comment in self.snapshot.review_comments:
            if comment.id in replied:
                continue
            reply = render_reply(comment, result, round_diff=result.diff, pr_url=pr.html_url)
            self.out.comments.reply_once(pr, comment.id, reply, key=f"comment={comment.id} head={result.head_sha[:12]}")
            replied.append(comment.id)
            self.checkpoint.save()
