"""What every job kind works with, composed once in the composition root (`bot.commands.toolkit.delivery_pipeline`):
the run toolkit, the contract stage, the run viewer's links, and the one way a job gets a checkout of its repository.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.contract.build import build_contract
from bot.contract.models import TaskContract
from bot.job.contract_stage import ContractStage
from bot.loop.session import Toolkit
from bot.queue.pipeline import JobContext
from bot.snapshot import Snapshot
from bot.workspace import opening
from bot.workspace.git import Workspace


@dataclass(frozen=True)
class JobTools:
    kit: Toolkit
    """How a run gets its model, sandbox and retrieval (`bot.loop.session`)."""
    stage: ContractStage = field(default_factory=ContractStage)
    run_link: Callable[[str, int], str] | None = None
    """(the job store's id, the job id) → the signed link to its page in the run viewer; None when links are off."""

    def contract(self, snapshot: Snapshot, ctx: JobContext) -> TaskContract:
        """The task contract from the repository's default branch; ConfigError when its config cannot be read."""
        return build_contract(snapshot, self.stage.files(snapshot, ctx))

    def job_dir(self, snapshot: Snapshot, name: str) -> Path:
        """`<work_dir>/jobs/<owner--name>-<name>`: where one job (or one of its attempts) works."""
        return self.kit.work_dir / "jobs" / f"{snapshot.repo.replace('/', '--')}-{name}"

    def checkout(
        self,
        ctx: JobContext,
        snapshot: Snapshot,
        name: str,
        *,
        branch: str,
        existing: bool = False,
        evidence_base: str = "",
    ) -> Workspace:
        """The one job-directory-and-clone sequence of every job kind: the folder `job_dir(name)` emptied, then the
        repository cloned onto a new `branch` from the default branch, or onto the `existing` branch of that name
        (new commits go on top; `evidence_base` is what later rounds take their evidence against)."""
        root = self.job_dir(snapshot, name)
        shutil.rmtree(root, ignore_errors=True)
        token = ctx.github.token.get_secret_value()
        if existing:
            return opening.checkout_existing(
                snapshot.clone_url, root, branch=branch, token=token, evidence_base=evidence_base
            )
        return opening.clone(snapshot.clone_url, root, branch=branch, token=token, ref=None)
