"""A `scan` job: a push to a base branch, or a commit status, resolved to the ai-fix pull requests it concerns.

A push to a pull request's base branch may make it conflict. GitHub computes `mergeable` in the
background after such a push (`null` until it is known), so each open ai-fix pull request into that
branch is read again with a growing pause (1, 2, 4 ... s, 60 s in all) until GitHub knows; one that
conflicts gets a `rebase` job. A failing commit status names a commit, not a pull request: the open ai-fix
pull requests whose head it is get a `ci` job.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bot.github.ci import CiApi
from bot.job.pull import refusal
from bot.queue.models import Trigger
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from bot.vocabulary import DONE, QUEUED, SKIPPED

FIRST_PAUSE = 1.0
MAX_PAUSE = 16.0
MAX_WAIT = 60.0
"""How long, in all, to wait for GitHub to compute one pull request's `mergeable`."""


class ScanJob:
    def __init__(
        self,
        snapshot: Snapshot,
        ctx: JobContext,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float = MAX_WAIT,
    ) -> None:
        self.snapshot, self.ctx = snapshot, ctx
        self.api = CiApi(ctx.github)
        self.sleep, self.max_wait = sleep, max_wait

    def run(self) -> JobOutcome:
        said: list[str] = []
        pushed = sorted({t.branch for t in self.ctx.triggers if not t.checks and t.branch})
        for branch in pushed:
            said += self.after_push(branch)
        statuses = [t for t in self.ctx.triggers if t.checks]
        if statuses:
            said += self.after_statuses(statuses)
        queued = [s for s in said if s.startswith(QUEUED)]
        return JobOutcome(status=DONE if queued else SKIPPED, reason="; ".join(said) or "no ai-fix pull request")

    def own_pulls(self, base: str | None = None) -> list[dict[str, Any]]:
        """The open ai-fix pull requests (into `base`, when given), forks left out."""
        pulls = self.api.open_pulls(base)
        return [p for p in pulls if not refusal(p, self.ctx.github.bot_login)]

    def after_push(self, branch: str) -> list[str]:
        said = []
        for pull in self.own_pulls(branch):
            number = int(pull["number"])
            mergeable = self.mergeable(number)
            if mergeable is None:
                said.append(f"#{number}: GitHub had not computed whether it merges after {self.max_wait:.0f} s")
            elif mergeable:
                said.append(f"#{number} merges cleanly")
            else:
                job, how = self.ctx.enqueue(self.trigger("rebase", number))
                said.append(f"queued a rebase of #{number} (job {job}, {how})")
        return said

    def after_statuses(self, statuses: list[Trigger]) -> list[str]:
        said = []
        pulls = self.own_pulls()
        for status in statuses:
            for pull in pulls:
                if (pull.get("head") or {}).get("sha") != status.head_sha:
                    continue
                trigger = self.trigger("ci", int(pull["number"]), head_sha=status.head_sha, checks=status.checks)
                job, how = self.ctx.enqueue(trigger)
                said.append(f"queued a CI check of #{pull['number']} (job {job}, {how})")
        return said or [f"no open ai-fix pull request has the head {', '.join(s.head_sha[:7] for s in statuses)}"]

    def mergeable(self, number: int) -> bool | None:
        """GitHub's `mergeable` for the pull request, waiting while it is still being computed (None: not in time)."""
        pause, waited = FIRST_PAUSE, 0.0
        while True:
            data = self.ctx.github.get_pull(number)
            known = data.get("mergeable")
            if isinstance(known, bool) or data.get("state") != "open":
                return known if isinstance(known, bool) else None
            if waited >= self.max_wait:
                return None
            step = min(pause, self.max_wait - waited)
            self.ctx.checkpoint()  # a chance to stop (/agent stop, shutdown) before each pause
            self.sleep(step)
            waited, pause = waited + step, min(pause * 2, MAX_PAUSE)

    def trigger(self, kind: str, number: int, **fields: Any) -> Trigger:
        s = self.snapshot
        return Trigger.model_validate(
            {
                "kind": kind,
                "repo": s.repo,
                "number": number,
                "installation_id": s.installation_id,
                "sender": s.sender,
                "delivery_id": f"scan-{self.ctx.job_id}-{kind}-{number}",
                "clone_url": s.clone_url,
                "default_branch": s.default_branch,
                "origin": "github",
                **fields,
            }
        )
