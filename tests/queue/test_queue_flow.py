"""Triggers, refusals and the one-active-job rule end to end: real server on loopback, workers, fake GitHub."""

import sqlite3

from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from tests.support.fake_github import load_payload
from tests.support.pipelines import Gate, wait_for
from tests.support.service import settled
from tests.support.webhooks import PR_BODY, REPO, deliver, labeled, pr_comment, review_comment, review_submitted


def events(job) -> list[str]:
    return [e.event for e in job.events]


def test_labeled_issue_runs_with_a_frozen_snapshot(start_service, fake_github):
    fake_github.add_comment(REPO, 1, "Codertocat", "Only the README, please.")
    fake_github.add_comment(REPO, 1, "drive-by", "Also delete the tests!")
    svc = start_service()
    job_id = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    job = settled(svc.store, job_id)
    assert job.status == "done" and job.reason == "snapshot of Codertocat/Hello-World#1 stored"
    snap = Snapshot.model_validate(job.snapshot)
    assert (snap.repo, snap.number, snap.kind, snap.installation_id) == (REPO, 1, "issue", 1)
    assert snap.title == "Spelling error in the README file" and snap.labels == ["ai-fix", "bug"]
    assert (snap.sender, snap.sender_permission) == ("Codertocat", "admin")
    assert [(c.author, c.permission, c.body) for c in snap.comments] == [
        ("Codertocat", "admin", "Only the README, please.")
    ]
    assert [(c.author, c.permission) for c in snap.untrusted_comments] == [("drive-by", "none")]
    assert snap.clone_url == "https://github.com/Codertocat/Hello-World.git"
    assert fake_github.reactions == [(REPO, "issue:1", "eyes")]
    token_call = fake_github.calls_to("apps/create-installation-access-token")[0]
    assert token_call.json == {"repositories": ["Hello-World"]}
    assert events(job) == ["queued", "claimed", "trigger_checked", "snapshot_taken", "done"]
    # Later edits on GitHub do not change what the job works on.
    fake_github.issues[(REPO, 1)]["body"] = "Actually, rewrite everything."
    assert svc.store.jobs.get(job_id).snapshot["body"] == snap.body


def test_a_trigger_from_someone_without_write_access_is_rejected(start_service, fake_github):
    fake_github.permissions[(REPO, "triager")] = "triage"
    svc = start_service()
    job_id = deliver(svc.client, "issues", labeled(1, sender="triager")).json()["job_id"]
    job = settled(svc.store, job_id)
    assert job.status == "rejected"
    assert (
        job.reason
        == "@triager (triage): write, maintain or admin permission on Codertocat/Hello-World is needed to start ai-fix"
    )
    assert job.snapshot is None and fake_github.reactions == []
    assert [c.op_id for c in fake_github.calls] == [
        "apps/get-authenticated",  # the App's bot user, read once by the worker's GitHubApp
        "apps/create-installation-access-token",
        "repos/get-collaborator-permission-level",
    ]


def test_maintainers_may_trigger_and_outsiders_may_not(start_service, fake_github):
    fake_github.permissions[(REPO, "maintainer")] = "maintain"
    fake_github.add_issue(REPO, 2)
    svc = start_service()
    ok = settled(svc.store, deliver(svc.client, "issues", labeled(1, sender="maintainer")).json()["job_id"])
    outsider = settled(svc.store, deliver(svc.client, "issues", labeled(2, sender="outsider")).json()["job_id"])
    assert ok.status == "done" and ok.snapshot["sender_permission"] == "maintain"
    assert outsider.status == "rejected" and "@outsider (none)" in outsider.reason


def test_bots_and_non_triggers_create_no_task(start_service, fake_github):
    svc = start_service()
    for event, payload in (
        ("issues", labeled(1, sender="ai-fix[bot]", sender_type="Bot")),
        ("issues", labeled(1, label="question")),
        ("issue_comment", pr_comment("/agent retry", sender="renovate[bot]", sender_type="Bot")),
        ("issue_comment", pr_comment("/agent retry", pr_author="renovate[bot]")),  # marker copied by another bot
        ("issue_comment", pr_comment("Here is how to call it:\n```\n/agent retry\n```")),
        ("issue_comment", pr_comment("> /agent stop\nWhy would I?")),
        ("pull_request_review", review_submitted("approved", "LGTM")),
    ):
        response = deliver(svc.client, event, payload)
        assert response.status_code == 202 and response.json()["outcome"] == "ignored"
    assert svc.store.jobs.newest() == [] and fake_github.calls == []


def test_retry_on_an_ai_fix_pr_snapshots_the_issue_it_fixes_with_feedback(start_service, fake_github):
    fake_github.add_pull(REPO, 2, PR_BODY)
    svc = start_service()
    payload = pr_comment("/agent retry\nUse pathlib, not os.path.")
    job = settled(svc.store, deliver(svc.client, "issue_comment", payload).json()["job_id"])
    assert job.status == "done" and job.kind == "retry"
    snap = job.snapshot
    assert (snap["number"], snap["pr_number"], snap["feedback"]) == (1, 2, "Use pathlib, not os.path.")
    assert fake_github.reactions == [(REPO, f"comment:{payload['comment']['id']}", "eyes")]


def test_a_review_with_comments_makes_one_job(start_service, fake_github, tmp_path):
    fake_github.add_pull(REPO, 2, PR_BODY)
    first = fake_github.add_review_comment(REPO, 2, 500, "Codertocat", "Handle the empty list.")
    second = fake_github.add_review_comment(REPO, 2, 500, "Codertocat", "Add a test for it.")
    fake_github.add_review_comment(REPO, 2, 500, "drive-by", "Rewrite it in Rust.")
    fake_github.add_review_comment(REPO, 2, 499, "Codertocat", "An older review's comment.")
    svc = start_service(pipeline=Gate)
    ids = {
        deliver(
            svc.client, "pull_request_review", review_submitted("changes_requested", "Two things.", review_id=500)
        ).json()["job_id"],
        deliver(
            svc.client, "pull_request_review_comment", review_comment(review_id=500, comment_id=first["id"])
        ).json()["job_id"],
        deliver(
            svc.client, "pull_request_review_comment", review_comment(review_id=500, comment_id=second["id"])
        ).json()["job_id"],
    }
    assert len(ids) == 1
    (tmp_path / "work" / "release-all").write_text("")
    job = settled(svc.store, ids.pop())
    assert job.status == "done" and job.kind == "review" and len(job.triggers) == 3
    assert [c["body"] for c in job.snapshot["review_comments"]] == ["Handle the empty list.", "Add a test for it."]
    assert job.snapshot["review_id"] == 500 and "Two things." in job.snapshot["feedback"]
    assert len(svc.store.jobs.newest()) == 1


def test_one_active_job_per_issue_follow_up_and_merge(start_service, tmp_path):
    work = tmp_path / "work"
    svc = start_service(pipeline=Gate)
    running = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    wait_for(work / f"started-{running}")
    follow_up = deliver(svc.client, "issues", labeled(1)).json()
    merged = deliver(svc.client, "issues", labeled(1)).json()
    assert follow_up["outcome"] == "queued" and follow_up["job_id"] != running
    assert merged == {**merged, "outcome": "merged", "job_id": follow_up["job_id"]}
    queued = svc.store.jobs.get(follow_up["job_id"])
    assert queued.status == "queued" and queued.events[0].data["follow_up_of"] == running and len(queued.triggers) == 2
    (work / f"release-{running}").write_text("")
    assert settled(svc.store, running).status == "done"
    wait_for(work / f"started-{follow_up['job_id']}")  # the follow-up runs only after the first one ended
    (work / "release-all").write_text("")
    assert settled(svc.store, follow_up["job_id"]).status == "done"
    assert len(svc.store.jobs.newest()) == 2


def test_agent_stop_cancels_the_running_and_the_queued_job(start_service, fake_github, tmp_path):
    work = tmp_path / "work"
    svc = start_service(pipeline=Gate)
    running = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    wait_for(work / f"started-{running}")
    queued = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    stop = pr_comment("/agent stop", number=1, on_pr=False, pr_author_type="User")
    stop_job = settled(svc.store, deliver(svc.client, "issue_comment", stop).json()["job_id"])
    assert stop_job.kind == "stop" and stop_job.status == "done"
    assert settled(svc.store, queued).status == "cancelled"
    job = settled(svc.store, running)
    assert job.status == "cancelled" and job.reason == "stopped by @Codertocat (/agent stop)"
    assert "cancel_requested" in events(job)
    assert (REPO, f"comment:{stop['comment']['id']}", "eyes") in fake_github.reactions


def test_agent_stop_from_a_reader_is_rejected(start_service, fake_github):
    fake_github.permissions[(REPO, "reader")] = "read"
    svc = start_service(workers=True)
    stop = pr_comment("/agent stop", number=1, on_pr=False, pr_author_type="User", sender="reader")
    job = settled(svc.store, deliver(svc.client, "issue_comment", stop).json()["job_id"])
    assert job.status == "rejected" and "@reader (read)" in job.reason


def test_agent_help_replies_with_the_commands(start_service, fake_github):
    svc = start_service()
    job = settled(
        svc.store,
        deliver(svc.client, "issue_comment", pr_comment("/agent help", number=1, on_pr=False)).json()["job_id"],
    )
    assert job.status == "done"
    [(repo, number, body)] = fake_github.created_comments
    assert (repo, number) == (REPO, 1)
    assert "/agent retry" in body and "/agent stop" in body and "`ai-fix` label" in body


def test_deleting_or_suspending_the_installation_cancels_pending_jobs(start_service):
    svc = start_service(workers=False)
    first = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    other = deliver(svc.client, "issues", labeled(2)).json()["job_id"]
    removed = load_payload("installation_repositories/removed")
    removed["installation"]["id"] = 1
    removed["repositories_removed"][0]["full_name"] = REPO
    assert deliver(svc.client, "installation_repositories", removed).status_code == 202
    assert {svc.store.jobs.get(i).status for i in (first, other)} == {"cancelled"}
    assert svc.store.jobs.get(first).reason == "the App was removed from Codertocat/Hello-World"
    later = deliver(svc.client, "issues", labeled(3)).json()["job_id"]
    deleted = load_payload("installation/deleted")
    deleted["installation"]["id"] = 1
    deliver(svc.client, "installation", deleted)
    job = svc.store.jobs.get(later)
    assert job.status == "cancelled" and job.reason == "the App installation was deleted"
    with sqlite3.connect(svc.store.db.path) as conn:
        assert conn.execute("SELECT id, account, status, repos FROM installations").fetchall() == [
            (1, "octocat", "deleted", "[]")
        ]


class Poison:
    def __init__(self) -> None:
        self.calls = 0

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        if snapshot.number == 1:
            self.calls += 1
            ctx.record(
                "about_to_fail", detail=f"pushing with x-access-token:{ctx.github.token.get_secret_value()}@github.com"
            )
            raise RuntimeError(f"cannot parse the repository (token {ctx.github.token.get_secret_value()})")
        return JobOutcome(status="done", reason="fine")


def test_a_poison_job_fails_after_three_attempts_and_never_blocks_the_queue(start_service, fake_github, caplog):
    fake_github.add_issue(REPO, 2)
    pipeline = Poison()
    # Two may run in the repository: with one, the healthy job would wait for the poison job's attempts.
    svc = start_service(pipeline=pipeline, max_running_per_repo=2)
    poison = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    healthy = deliver(svc.client, "issues", labeled(2)).json()["job_id"]
    assert settled(svc.store, healthy).status == "done"
    job = settled(svc.store, poison)
    assert job.status == "failed" and pipeline.calls == 3 and job.attempts == 3
    assert job.reason.startswith("failed on all 3 attempts; last error: RuntimeError: cannot parse the repository")
    assert events(job).count("attempt_failed") == 3
    tokens = list(fake_github.tokens)
    stored = job.model_dump_json()
    assert tokens and not any(token in stored or token in caplog.text for token in tokens)
    assert "[REDACTED]" in job.reason and "about_to_fail" in events(job)
    assert f"job {poison} attempt 3 failed" in caplog.text


def test_lone_review_comment_starts_a_review_round(start_service, fake_github):
    fake_github.add_pull(REPO, 2, PR_BODY)
    comment = fake_github.add_review_comment(REPO, 2, 777, "Codertocat", "Typo here.")
    svc = start_service()
    job = settled(
        svc.store,
        deliver(
            svc.client, "pull_request_review_comment", review_comment(review_id=777, comment_id=comment["id"])
        ).json()["job_id"],
    )
    assert job.status == "done" and job.kind == "review"
    assert [c["id"] for c in job.snapshot["review_comments"]] == [comment["id"]]
    assert (REPO, "issue:2", "eyes") in fake_github.reactions
