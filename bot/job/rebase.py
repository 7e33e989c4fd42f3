"""A `rebase` job: merge the base branch into an ai-fix pull request's branch, resolve the conflicts, push.

The branch is cloned, the base merged in with `git merge` (a merge commit: the branch only moves
forward, never a rebase or a force-push); git's own clean merges are kept as they are, and the model
resolves the conflicted hunks only (`bot.job.resolve`). The contract's checks then run on the merge in
the sandbox; when they fail the model is told why and may answer again. Only a merge whose checks pass
(or a repository with no checks) is pushed; the pull request gets a reply saying what was resolved, its
body records the merge as a round (so it counts as ai-fix's own push) and the progress comment a note.
"""

from __future__ import annotations

import contextlib
import functools
import time

from bot.ci.models import CiNote
from bot.contract.models import TaskContract
from bot.errors import ConfigError
from bot.job.history import HistoryReporter
from bot.job.pull import OwnPull
from bot.job.resolve import MAX_ANSWERS, ResolveFailed, Resolver
from bot.job.state import Merged, RebaseJobState, trace_file
from bot.job.tools import JobTools
from bot.loop.accounting import Account
from bot.loop.records import Spent, StartRecord
from bot.loop.session import Parts, RunInput, open_parts
from bot.loop.state import Meter
from bot.publish.ci_notes import not_merged_reply, rebase_reply
from bot.publish.github_out import GitHubOutput
from bot.publish.models import RoundRecord
from bot.queue.pipeline import JobContext, JobInterrupted, JobOutcome
from bot.redact import redact
from bot.secrets import repo_secrets
from bot.snapshot import Snapshot
from bot.vocabulary import ACCEPTED, DONE, FAILED, HANDED_OFF, SKIPPED
from bot.workspace.conflicts import ConflictedFile, ConflictError, parse_conflicts
from bot.workspace.git import Workspace
from bot.workspace.merge import MergeStart, commit_merge, read_conflicted, start_merge, write_resolved


class RebaseJob:
    def __init__(self, tools: JobTools, snapshot: Snapshot, ctx: JobContext) -> None:
        self.tools, self.snapshot, self.ctx = tools, snapshot, ctx
        self.state = RebaseJobState.model_validate(ctx.state)
        self.out = GitHubOutput(ctx.github, secrets=self.secrets)
        self.extra_secrets: list[str] = []

    def secrets(self) -> list[str]:
        return [*self.ctx.secrets(), *self.extra_secrets]

    def save(self) -> None:
        """Persist the job's state; raises JobInterrupted after `/agent stop` or on shutdown."""
        self.ctx.checkpoint(**self.state.model_dump(mode="json"))

    def run(self) -> JobOutcome:
        pull = OwnPull.read(self.out, self.snapshot, self.ctx)
        if isinstance(pull, JobOutcome):
            return pull
        if self.state.rebase_pushed is not None:  # an attempt that pushed the merge, then died: report it
            return report(self.out, pull, self.state.rebase_pushed)
        try:
            contract = self.tools.contract(self.snapshot, self.ctx)
        except ConfigError as exc:
            return JobOutcome(status=FAILED, reason=f"broken .github/ai-fix.yml: {exc}")
        name = f"pr{pull.pr.number}-rebase-{self.ctx.job_id}"
        ws = self.tools.checkout(self.ctx, self.snapshot, name, branch=pull.pr.head_ref, existing=True)
        self.state.job_dir = str(ws.root)
        self.save()
        try:
            self.extra_secrets = repo_secrets(ws.path)
            merge = start_merge(ws, f"refs/remotes/origin/{pull.pr.base_ref}")
            if merge.state == "up_to_date":
                reason = f"#{pull.pr.number} already contains {pull.pr.base_ref} ({merge.base_sha[:7]})"
                return JobOutcome(status=SKIPPED, reason=reason)
            self.ctx.checkpoint()
            merged = self.merge(ws, merge, contract, pull.pr.base_ref)
            if not merged.problem:
                ws.push(token=self.ctx.github.token.get_secret_value())
                self.state.rebase_pushed = merged
                self.save()
            return report(self.out, pull, merged)
        finally:
            ws.remove()

    def session(self, ws: Workspace, contract: TaskContract) -> RunInput:
        """The rebase's run: the job's session parts (setup secrets and all), its trace beside the job directory."""
        return RunInput(
            contract,
            ws,
            repo=self.snapshot.repo,
            secrets=self.secrets(),
            trace_path=trace_file(ws.root),
            reporter=HistoryReporter(self.ctx, what="rebase"),
            attempt=self.ctx.attempt,
            spent=self.state.spent,
        )

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
        run = self.session(ws, contract)
        with open_parts(run, self.tools.kit) as parts:
            resolver = self.resolver(parts, files, contract, ws, base) if files else None
            setup = parts.checks.setup()
            run.reporter.setup(setup)
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
                checked = parts.checks.run(None, commit=ws.head_sha, changed_files=merge.conflicted)
                merged.checks = checked
                failing = checked.failing()
                if not failing:
                    break
                why = "; ".join(f"{r.name}: {r.summary or r.status}" for r in failing)
                if resolver is None or resolver.answers >= MAX_ANSWERS:
                    return merged.model_copy(update={"problem": f"the contract's checks fail on the merge: {why}"})
                resolver.reject(f"the merge was written, but the contract's checks fail on it: {why}")
        message = f"Merge {base} ({merge.base_sha[:12]}) into {ws.branch}" + (
            f"\n\nResolved conflicts in: {', '.join(merge.conflicted)}\n" if merge.conflicted else "\n"
        )
        merged.head_sha = commit_merge(ws, redact(message, self.secrets()), merge.conflicted)
        return merged

    def resolver(
        self, parts: Parts, files: list[ConflictedFile], contract: TaskContract, ws: Workspace, base: str
    ) -> Resolver:
        """The conflict resolver on the session's model, its calls held to the job's budget and in its trace."""
        choice, clock = parts.choice, time.time
        parts.trace.append(
            StartRecord(
                title=f"merge {base} into {ws.branch}",
                model=choice.name,
                small_model=choice.small,
                model_reason=choice.reason,
                branch=ws.branch,
                base_sha=ws.base_sha,
                contract=contract,
            )
        )

        def keep(spent: Spent) -> None:
            self.state.spent = spent
            with contextlib.suppress(JobInterrupted):  # a stop request is taken at the next checkpoint
                self.save()

        account = Account(
            meter=Meter.resumed(self.state.spent, clock()),
            budget=contract.budget,
            trace=parts.trace,
            clock=clock,
            say=lambda line: self.ctx.record("loop", line=line),
            keep_spent=keep,
        )
        redacting = functools.partial(redact, secrets=self.secrets(), key_values=False)
        return Resolver(parts.model, choice.name, files, redacting, base, account)


def report(out: GitHubOutput, pull: OwnPull, merged: Merged) -> JobOutcome:
    """The reply on the pull request, the round in its body, the note in the progress comment."""
    base, record = pull.pr.base_ref, pull.record.model_copy(deep=True)
    if merged.problem:
        out.comments.post(pull.pr.number, not_merged_reply(base, merged.base_sha, merged.problem, merged.checks))
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
    out.comments.post(pull.pr.number, reply)
    return JobOutcome(status=DONE, reason=reason, data={"pr": pull.pr.html_url, "head": merged.head_sha})
