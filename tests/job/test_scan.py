"""A `scan` job resolves a base-branch push or a commit status to the ai-fix pull requests it concerns: a real
server and worker on loopback, the fake GitHub with `mergeable` still being computed on the first reads."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from bot.job.scan import ScanJob
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from tests.support.fake_ci import CiGitHub
from tests.support.fake_github import load_payload
from tests.support.service import settled, wait_until
from tests.support.webhooks import INSTALLATION, REPO, deliver

HEAD = "d" * 40


@pytest.fixture
def fake_github() -> Iterator[CiGitHub]:
    fake = CiGitHub()
    fake.installations[INSTALLATION] = [REPO]
    with fake.mock():
        yield fake
    assert fake.violations == [], fake.violations


class ScansOnly:
    """Runs `scan` jobs for real (without pausing between reads); the jobs they queue are only recorded."""

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        if snapshot.kind != "scan":
            return JobOutcome(status="skipped", reason=f"a {snapshot.kind} job, not under test here")
        return ScanJob(snapshot, ctx, sleep=self.pauses.append).run()


def own_pull(fake: CiGitHub, head: str, *, mergeable: bool) -> dict[str, object]:
    pull = fake.new_pull(REPO, "ai-fix/1-fix-add", "master", "ai-fix: fix add", "<!-- ai-fix:pr issue=1 -->", False)
    pull["head"]["sha"] = head
    pull.update(mergeable=mergeable)
    return pull


def test_a_push_to_the_base_queues_a_rebase_for_the_pr_that_conflicts_once_github_knows(start_service, fake_github):
    conflicting = own_pull(fake_github, HEAD, mergeable=False)
    fine = own_pull(fake_github, "e" * 40, mergeable=True)
    fine["head"]["ref"] = "ai-fix/2-other"
    fake_github.computing[(REPO, conflicting["number"])] = 2  # null twice, as GitHub answers right after a push
    scans = ScansOnly()
    svc = start_service(pipeline=scans)
    payload = copy.deepcopy(load_payload("push/with-installation"))
    payload.update(ref="refs/heads/master", deleted=False, after="f" * 40)
    job = settled(svc.store, deliver(svc.client, "push", payload).json()["job_id"], timeout=30)
    assert job.kind == "scan" and job.status == "done", job.reason
    assert (
        f"queued a rebase of #{conflicting['number']}" in job.reason
        and f"#{fine['number']} merges cleanly" in job.reason
    )
    assert scans.pauses == [1.0, 2.0], "read again with a growing pause while GitHub computes it"
    [rebase] = wait_until(lambda: [j for j in svc.store.jobs.newest() if j.kind == "rebase"], timeout=30)
    assert (rebase.number, rebase.triggers[0].origin) == (conflicting["number"], "github")


def test_a_failing_status_on_an_ai_fix_head_queues_a_ci_job_for_its_pr(start_service, fake_github):
    pull = own_pull(fake_github, HEAD, mergeable=True)
    svc = start_service(pipeline=ScansOnly())
    payload = copy.deepcopy(load_payload("status/with-installation"))
    payload.update(sha=HEAD, state="failure", context="ci/jenkins")
    payload["branches"] = [{"name": "ai-fix/1-fix-add", "commit": {"sha": HEAD, "url": ""}, "protected": False}]
    job = settled(svc.store, deliver(svc.client, "status", payload).json()["job_id"], timeout=30)
    assert job.status == "done" and f"queued a CI check of #{pull['number']}" in job.reason, job.reason
    [ci] = wait_until(lambda: [j for j in svc.store.jobs.newest() if j.kind == "ci"], timeout=30)
    [trigger] = ci.triggers
    assert (ci.number, trigger.head_sha, [c.name for c in trigger.checks]) == (pull["number"], HEAD, ["ci/jenkins"])


def test_only_pull_requests_this_apps_bot_authored_count_as_ai_fix_ones(start_service, fake_github):
    """Another bot's PR whose body copies the marker gets neither a rebase nor a CI check (issue 13 item 9's rule)."""
    fake_github.bot_login = "my-fixer[bot]"  # GET /app answers this App's slug; the worker learns its login there
    ours = own_pull(fake_github, HEAD, mergeable=False)
    copied = own_pull(fake_github, "e" * 40, mergeable=False)
    copied["head"]["ref"] = "ai-fix/7-copied"
    copied["user"].update(login="renovate[bot]", type="Bot")
    svc = start_service(pipeline=ScansOnly())
    status = copy.deepcopy(load_payload("status/with-installation"))
    status.update(sha="e" * 40, state="failure", context="ci/jenkins")
    status["branches"] = [{"name": "ai-fix/7-copied", "commit": {"sha": "e" * 40, "url": ""}, "protected": False}]
    job = settled(svc.store, deliver(svc.client, "status", status).json()["job_id"], timeout=30)
    assert job.status == "skipped" and "no open ai-fix pull request has the head eeeeeee" in job.reason, job.reason
    payload = copy.deepcopy(load_payload("push/with-installation"))
    payload.update(ref="refs/heads/master", deleted=False, after="f" * 40)
    job = settled(svc.store, deliver(svc.client, "push", payload).json()["job_id"], timeout=30)
    assert job.status == "done" and f"queued a rebase of #{ours['number']}" in job.reason, job.reason
    assert f"#{copied['number']}" not in job.reason
    assert [j.number for j in svc.store.jobs.newest() if j.kind in ("rebase", "ci")] == [ours["number"]]
