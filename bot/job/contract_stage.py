"""The contract stage of a job: build the contract from the default branch, then post or update the
one contract comment on the issue (found by its hidden marker, so later rounds never add noise).
It is posted through delivery's GitHub output, so it is redacted and fails closed like every other text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from bot.contract.build import build_contract
from bot.contract.files import GitHubRepoFiles, RepoFiles
from bot.contract.models import TaskContract
from bot.contract.render import (
    MARKER,
    render_clarification_comment,
    render_config_error_comment,
    render_contract_comment,
)
from bot.delivery.github_out import GitHubOutput
from bot.errors import ConfigError
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot


class ContractDecision(BaseModel):
    """What the stage decided; `contract` is None only when the config is broken."""

    status: Literal["ready", "needs_clarification", "config_error"]
    contract: TaskContract | None = None
    error: str = ""
    comment_url: str = ""

    def outcome(self) -> JobOutcome | None:
        """The job's final outcome when it must stop here; None when work may go on."""
        if self.status == "ready":
            return None
        if self.status == "config_error":
            reason = f"broken .github/ai-fix.yml: {self.error}"
            return JobOutcome(status="failed", reason=reason, data={"comment": self.comment_url})
        missing = "; ".join(self.contract.missing) if self.contract else ""
        return JobOutcome(status="needs_clarification", reason=missing, data={"comment": self.comment_url})


class ContractStage:
    """The first stage of the job: the contract, or the request for clarification, on the issue."""

    def files(self, snapshot: Snapshot, ctx: JobContext) -> RepoFiles:
        """The repository's default branch through the job's installation client."""
        return GitHubRepoFiles(ctx.github.rest, snapshot.repo, snapshot.default_branch)

    def prepare(self, snapshot: Snapshot, ctx: JobContext) -> ContractDecision:
        """Build the contract and post it (or what is missing, or the config error) on the issue.

        A resumed attempt of the same job reuses the contract it checkpointed: the contract never
        changes under a running job, even if the default branch moved meanwhile.
        """
        saved = ctx.state.get("contract")
        if saved is not None:
            contract = TaskContract.model_validate(saved)
            url = str(ctx.state.get("contract_comment", ""))
            return ContractDecision(status=contract.status, contract=contract, comment_url=url)
        ctx.checkpoint()
        out = GitHubOutput(ctx.github, secrets=ctx.secrets)

        def post(body: str) -> str:
            return str(out.upsert_comment(snapshot.number, body, MARKER).get("html_url", ""))

        try:
            contract = build_contract(snapshot, self.files(snapshot, ctx))
        except ConfigError as exc:
            url = post(render_config_error_comment(str(exc)))
            ctx.record("contract", status="config_error", error=str(exc), comment=url)
            return ContractDecision(status="config_error", error=str(exc), comment_url=url)
        ready = contract.status == "ready"
        body = render_contract_comment(contract) if ready else render_clarification_comment(contract)
        url = post(body)
        ctx.record(
            "contract",
            status=contract.status,
            missing=contract.missing,
            checks=[c.name for c in contract.checks],
            ignored=contract.provenance.ignored,
            comment=url,
        )
        ctx.checkpoint(contract=contract.model_dump(mode="json"), contract_comment=url)
        return ContractDecision(status=contract.status, contract=contract, comment_url=url)
