"""A `rebase` job: merge the base branch into an ai-fix pull request's branch, resolve the conflicts, push.

The branch is cloned, the base merged in with `git merge` (a merge commit: the branch only moves
forward, never a rebase or a force-push); git's own clean merges are kept as they are, and the model
resolves the conflicted hunks only (`bot.job.resolve`). The contract's checks then run on the merge in
the sandbox; when they fail the model is told why and may answer again. Only a merge whose checks pass
(or a repository with no checks) is pushed; the pull request gets a reply saying what was resolved, its
body records the merge as a round (so it counts as ai-fix's own push) and the progress comment a note.
"""

from __future__ import annotations

import shutil

from pydantic import BaseModel

from bot.checks.bound import SandboxChecks
from bot.checks.models import CheckRun
from bot.ci.models import CiNote
from bot.contract.build import build_contract
from bot.contract.models import TaskContract
from bot.errors import ConfigError
from bot.job.pipeline import RoundPipeline
from bot.job.pull import OwnPull
from bot.job.resolve import MAX_ANSWERS, ResolveFailed, Resolver
from bot.loop.result import Cost
from bot.model.routing import choose_model
from bot.publish.ci_notes import not_merged_reply, rebase_reply
from bot.publish.github_out import GitHubOutput
from bot.publish.models import RoundRecord
from bot.queue.pipeline import JobContext, JobOutcome
from bot.redact import redact
from bot.sandbox.base import SandboxJob
from bot.secrets import repo_secrets
from bot.snapshot import Snapshot
from bot.vocabulary import ACCEPTED, DONE, FAILED, HANDED_OFF, SKIPPED
from bot.workspace import opening
from bot.workspace.conflicts import ConflictedFile, ConflictError, parse_conflicts
from bot.workspace.git import Workspace
from bot.workspace.merge import MergeStart, commit_merge, read_conflicted, start_merge, write_resolved

PUSHED = "rebase_pushed"
"""The job's state key for a merge already pushed."""


class Merged(BaseModel):
    """What a merge came to, before it is reported."""

    base_sha: str
    head_sha: str = ""
    resolved: list[str] = []
    checks: CheckRun | None = None
    summary: str = ""
    cost: Cost = Cost(rounds=0)
    problem: str = ""
    """Why nothing was pushed; "" when the merge was pushed."""


class RebaseJob:
    def __init__(self, rounds: RoundPipeline, snapshot: Snapshot, ctx: JobContext) -> None:
        self.rounds, self.snapshot, self.ctx = rounds, snapshot, ctx
        self.kit = rounds.kit
        self.out = GitHubOutput(ctx.github, secrets=self.secrets)
        self.extra_secrets: list[str] = []

    def secrets(self) -> list[str]:
        return [*self.ctx.secrets(), *self.extra_secrets]

    def run(self) -> JobOutcome:
        pull = OwnPull.read(self.out, self.snapshot, self.ctx)
        if isinstance(pull, JobOutcome):
            return pull
        number = pull.pr.number
        pushed = self.ctx.state.get(PUSHED)
        if pushed is not None:  # an attempt that pushed the merge, then died: report it, do not merge again
            return self.report(pull, Merged.model_validate(pushed))
        try:
            contract = build_contract(self.snapshot, self.rounds.stage.files(self.snapshot, self.ctx))
        except ConfigError as exc:
            return JobOutcome(status=FAILED, reason=f"broken .github/ai-fix.yml: {exc}")
        root = (
            self.kit.work_dir / "jobs" / f"{self.snapshot.repo.replace('/', '--')}-pr{number}-rebase-{self.ctx.job_id}"
        )
        shutil.rmtree(root, ignore_errors=True)
        token = self.ctx.github.token.get_secret_value()
        ws = opening.checkout_existing(self.snapshot.clone_url, root, branch=pull.pr.head_ref, token=token)
        try:
            self.extra_secrets = repo_secrets(ws.path)
            merge = start_merge(ws, f"refs/remotes/origin/{pull.pr.base_ref}")
            if merge.state == "up_to_date":
                return JobOutcome(
                    status=SKIPPED, reason=f"#{number} already contains {pull.pr.base_ref} ({merge.base_sha[:7]})"
                )
            self.ctx.checkpoint()
            merged = self.merge(ws, merge, contract, pull.pr.base_ref)
            if not merged.problem:
                ws.push(token=token)
                self.ctx.checkpoint(**{PUSHED: merged.model_dump(mode="json")})
            return self.report(pull, merged)
        finally:
            ws.remove()

    def merge(self, ws: Workspace, merge: MergeStart, contract: TaskContract, base: str) -> Merged:
        """Resolve (when git could not), run the checks, commit the merge when they pass; nothing is pushed here."""
        merged = Merged(base_sha=merge.base_sha, resolved=merge.conflicted)
        files: list[ConflictedFile] = []
        for path in merge.conflicted:
            text = read_conflicted(ws, path)
            if text is None:
                return merged.model_copy(
                    update={"problem": f"{path} is not a text conflict (deleted or binary on one side)"}
                )
            try:
                files.append(parse_conflicts(path, text))
            except ConflictError as exc:
                return merged.model_copy(update={"problem": str(exc)})
        resolver = self.resolver(files, contract, base) if files else None
        job = SandboxJob(repo=self.snapshot.repo, commands=contract.commands())
        sandbox = self.kit.open_sandbox(ws.path, contract.sandbox, job)
        try:
            checks = SandboxChecks(sandbox, contract, self.secrets())
            setup = checks.setup()
            if setup.status == FAILED:
                return merged.model_copy(update={"problem": f"setup failed: {setup.problem}"})
            while True:
                if resolver is not None:
                    try:
                        for path, text in resolver.ask().items():
                            write_resolved(ws, path, text)
                    except ResolveFailed as exc:
                        return merged.model_copy(update={"problem": str(exc), "cost": resolver.cost})
                    merged.summary, merged.cost = resolver.summary, resolver.cost
                self.ctx.checkpoint()
                run = checks.run(None, commit=ws.head_sha, changed_files=merge.conflicted)
                merged.checks = run
                failing = run.failing()
                if not failing:
                    break
                why = "; ".join(f"{r.name}: {r.summary or r.status}" for r in failing)
                if resolver is None or resolver.answers >= MAX_ANSWERS:
                    return merged.model_copy(update={"problem": f"the contract's checks fail on the merge: {why}"})
                resolver.reject(f"the merge was written, but the contract's checks fail on it: {why}")
        finally:
            sandbox.close()
            if resolver is not None:
                resolver.model.close()
        message = f"Merge {base} ({merge.base_sha[:12]}) into {ws.branch}" + (
            f"\n\nResolved conflicts in: {', '.join(merge.conflicted)}\n" if merge.conflicted else "\n"
        )
        merged.head_sha = commit_merge(ws, redact(message, self.secrets()), merge.conflicted)
        return merged

    def resolver(self, files: list[ConflictedFile], contract: TaskContract, base: str) -> Resolver:
        choice = choose_model(contract, self.kit.default_model, self.kit.small_model)
        secrets = self.secrets()
        return Resolver(
            self.kit.open_model(choice), choice.name, files, lambda text: redact(text, secrets, key_values=False), base
        )

    def report(self, pull: OwnPull, merged: Merged) -> JobOutcome:
        """The reply on the pull request, the round in its body, the note in the progress comment."""
        base, record = pull.pr.base_ref, pull.record.model_copy(deep=True)
        if merged.problem:
            self.out.comments.post(
                pull.pr.number, not_merged_reply(base, merged.base_sha, merged.problem, merged.checks)
            )
            record.add(
                CiNote(kind="not_merged", head_sha=pull.pr.head_sha, text=f"could not merge {base}: {merged.problem}")
            )
            pull.save(record)
            return JobOutcome(status=HANDED_OFF, reason=f"not merged: {merged.problem}", data={"pr": pull.pr.html_url})
        resolved = f"resolved {', '.join(merged.resolved)}" if merged.resolved else "no conflicts"
        reason = f"merged {base} ({merged.base_sha[:7]}) as {merged.head_sha[:7]}: {resolved}, checks pass"
        first = pull.rounds[0].base_sha if pull.rounds else ""
        rounds = [
            *pull.rounds,
            RoundRecord(
                n=len(pull.rounds) + 1,
                kind="rebase",
                outcome=ACCEPTED,
                reason=reason,
                head_sha=merged.head_sha,
                base_sha=first,
                files=len(merged.resolved),
                cost=merged.cost,
            ),
        ]
        record.add(CiNote(kind="rebase", head_sha=merged.head_sha, text=reason))
        pull.save(record, rounds)
        reply = rebase_reply(base, merged.base_sha, merged.head_sha, merged.resolved, merged.checks, merged.summary)
        self.out.comments.post(pull.pr.number, reply)
        return JobOutcome(status=DONE, reason=reason, data={"pr": pull.pr.html_url, "head": merged.head_sha})
