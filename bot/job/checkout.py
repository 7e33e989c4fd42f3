"""A round's git checkout: its job directory resumed, the pull request's branch continued, or a new branch."""

from __future__ import annotations

from pathlib import Path

from bot.job.checkpoint import Checkpoint
from bot.job.tools import JobTools
from bot.publish.github_out import PullRef
from bot.queue.pipeline import JobContext
from bot.secrets import repo_secrets
from bot.snapshot import Snapshot
from bot.workspace import opening
from bot.workspace.branch import branch_name
from bot.workspace.git import Workspace


class Checkout:
    """Owns the round's workspace and the secrets its repository holds (.env files and the like)."""

    def __init__(self, tools: JobTools, snapshot: Snapshot, ctx: JobContext, checkpoint: Checkpoint) -> None:
        self.tools, self.snapshot, self.ctx, self.checkpoint = tools, snapshot, ctx, checkpoint
        self.ws: Workspace | None = None
        self.repo_secrets: list[str] = []

    def secrets(self) -> list[str]:
        """Everything redaction removes: the job's own secrets and those found in the checkout."""
        return [*self.ctx.secrets(), *self.repo_secrets]

    def open(self, pr: PullRef | None, first_base: str) -> Workspace:
        """Resume this job's directory, continue the PR's branch, or start a new branch from the default one.

        `first_base`: the base commit of the PR's first round, against which later rounds take their evidence."""
        state = self.checkpoint.state
        if state.job_dir and Path(state.job_dir, "workspace.json").is_file():
            return self.attach(opening.resume(state.job_dir))
        snap, name = self.snapshot, f"{self.snapshot.number}-{self.ctx.job_id}-{self.ctx.attempt}"
        if pr is not None:
            # Evidence is taken against the pull request's original base, so round 1's reproduction stays valid.
            base = first_base or f"refs/remotes/origin/{snap.default_branch}"
            ws = self.tools.checkout(self.ctx, snap, name, branch=pr.head_ref, existing=True, evidence_base=base)
        else:
            ws = self.tools.checkout(self.ctx, snap, name, branch=branch_name(snap.number, snap.title))
        state.job_dir, state.branch = str(ws.root), ws.branch
        self.checkpoint.save()
        return self.attach(ws)

    def current(self) -> Workspace:
        """The workspace this attempt opened, or the job directory an earlier attempt left (its checkpoints)."""
        return self.ws or self.attach(opening.resume(self.checkpoint.state.job_dir))

    def attach(self, ws: Workspace) -> Workspace:
        self.ws = ws
        self.repo_secrets = repo_secrets(ws.path)
        return ws

    def push(self, ws: Workspace) -> None:
        """Push the checkpoints, and the rolled-back attempts (no-ops when the remote has them; never forced)."""
        token = self.ctx.github.token.get_secret_value()
        if ws.head_sha != ws.base_sha:
            ws.push(token=token)
        if ws.has_attempts:
            ws.push(token=token, attempts=True)

    def remove(self) -> None:
        """Delete the checkout once everything is pushed; the trace stays beside the job directory."""
        if self.ws is not None:
            self.ws.remove()
