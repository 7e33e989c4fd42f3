"""The contract stage of a job: build the contract from the default branch, then show it (or what the
task lacks, or why the config cannot be read) in the one comment ai-fix keeps on the issue, through
the `post` the job gives it (redacted and failing closed like every other text ai-fix writes).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from bot.contract.build import build_contract
from bot.contract.files import GitHubRepoFiles, RepoFiles
from bot.contract.models import TaskContract
from bot.contract.render import (
    render_clarification_comment,
    render_config_error_comment,
    render_contract_comment,
)
from bot.errors import ConfigError
from bot.job.checkpoint import Checkpoint
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from bot.vocabulary import FAILED, NEEDS_CLARIFICATION, ContractStatus


class ContractDecision(BaseModel):
    """What the stage decided; `contract` is None only when the config is broken."""

    status: ContractStatus
    contract: TaskContract | None = None
    error: str = ""
    comment_url: str = ""
    section: str = ""
    """What the issue comment shows of it: the contract, what the task lacks, or the config's errors."""

    def outcome(self) -> JobOutcome | None:
        """The job's final outcome when it must stop here; None when work may go on."""
        if self.status == "ready":
            return None
        if self.status == "config_error":
            reason = f"broken .github/ai-fix.yml: {self.error}"
            return JobOutcome(status=FAILED, reason=reason, data={"comment": self.comment_url})
        missing = "; ".join(self.contract.missing) if self.contract else ""
        return JobOutcome(status=NEEDS_CLARIFICATION, reason=missing, data={"comment": self.comment_url})


class ContractStage:
    """The first stage of the job: the contract, or the request for clarification, on the issue."""

    def files(self, snapshot: Snapshot, ctx: JobContext) -> RepoFiles:
        """The repository's default branch through the job's installation client."""
        return GitHubRepoFiles(ctx.github.rest, snapshot.repo, snapshot.default_branch)

    def prepare(self, snapshot: Snapshot, checkpoint: Checkpoint, post: Callable[[str, bool], str]) -> ContractDecision:
        """Build the contract and `post(section, open)` it (or what is missing, or the config error); post returns
        the comment's URL. `open` is True when the section is what stops the job.

        A resumed attempt of the same job reuses the contract it checkpointed: the contract never
        changes under a running job, even if the default branch moved meanwhile.
        """
        ctx, job = checkpoint.ctx, checkpoint.job
        if job.contract is not None:
            contract = job.contract
            return ContractDecision(
                status=contract.status, contract=contract, comment_url=job.contract_comment, section=section(contract)
            )
        checkpoint.save()
        try:
            contract = build_contract(snapshot, self.files(snapshot, ctx))
        except ConfigError as exc:
            text = render_config_error_comment(str(exc))
            url = post(text, True)
            ctx.record("contract", status="config_error", error=str(exc), comment=url)
            return ContractDecision(status="config_error", error=str(exc), comment_url=url, section=text)
        body = section(contract)
        url = post(body, contract.status != "ready")
        ctx.record(
            "contract",
            status=contract.status,
            missing=contract.missing,
            checks=[c.name for c in contract.checks],
            ignored=contract.provenance.ignored,
            comment=url,
        )
        job.contract, job.contract_comment = contract, url
        checkpoint.save()
        return ContractDecision(status=contract.status, contract=contract, comment_url=url, section=body)


def section(contract: TaskContract) -> str:
    """The contract as the issue comment shows it, or what it lacks."""
    return render_contract_comment(contract) if contract.status == "ready" else render_clarification_comment(contract)
