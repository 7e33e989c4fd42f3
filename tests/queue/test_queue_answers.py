"""Answers to a waiting job through the real server and workers (fake GitHub): `/agent approve|revise|stop`
comments reach the job that waits, are refused from readers, and are answered when nothing waits."""

from bot.queue.models import Job
from tests.support.pipelines import Parks
from tests.support.service import settled
from tests.support.webhooks import REPO, deliver, labeled, pr_comment


def on_issue(svc, text: str, sender: str = "Codertocat") -> Job:
    payload = pr_comment(text, number=1, sender=sender, on_pr=False, pr_body="")
    return settled(svc.store, deliver(svc.client, "issue_comment", payload).json()["job_id"])


def waiting(svc, job_id: int) -> Job:
    job = settled(svc.store, job_id)  # settled: out of queued and running
    assert job.status == "awaiting_approval", job
    return job


def test_revise_then_approve_reach_the_waiting_job_and_readers_are_refused(start_service, fake_github):
    fake_github.permissions[(REPO, "reader")] = "read"
    svc = start_service(pipeline=Parks())
    job_id = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    waiting(svc, job_id)
    refused = on_issue(svc, "/agent approve 2", sender="reader")
    assert refused.status == "rejected" and "@reader (read)" in refused.reason
    assert waiting(svc, job_id).state["parked"] == 1
    assert on_issue(svc, "/agent revise\nsmaller, please").reason == f"answered the plan of job {job_id}"
    assert waiting(svc, job_id).state["revised"] == "smaller, please"
    assert on_issue(svc, "/agent approve 2").status == "done"
    job = settled(svc.store, job_id)
    assert (job.status, job.reason) == ("done", "approve 2 by Codertocat; parked 1 time(s), revised 'smaller, please'")


def test_an_answer_with_nothing_waiting_says_so_on_the_issue(start_service, fake_github):
    svc = start_service(pipeline=Parks())
    job = on_issue(svc, "/agent approve")
    assert (job.status, job.reason) == ("done", "no plan is awaiting approval on #1")
    assert fake_github.created_comments == [
        (REPO, 1, "`/agent approve`: no plan is awaiting approval on #1, so there is nothing to answer.")
    ]


def test_stop_ends_the_waiting_job_through_its_pipeline(start_service, fake_github):
    svc = start_service(pipeline=Parks())
    job_id = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    waiting(svc, job_id)
    assert on_issue(svc, "/agent stop").reason == f"stopped job(s) [{job_id}]"
    job = settled(svc.store, job_id)
    assert (job.status, job.reason) == ("cancelled", "stop None by Codertocat; parked 1 time(s), revised '-'")
