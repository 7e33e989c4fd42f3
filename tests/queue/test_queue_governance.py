"""Governance on both databases: running jobs per repository and installation, the daily cost cap, and the
issue comment that says what a queued job waits behind."""

import threading
import time

import pytest

from bot.intake.metrics import Metrics
from bot.queue.governance import Limits, day_start, waiting_notices
from bot.queue.health import job_counts, queue_figures
from bot.queue.models import Trigger
from bot.queue.store import Store
from bot.vocabulary import WORK_KINDS
from tests.support.pipelines import Gate, wait_for
from tests.support.postgres import Clock
from tests.support.service import settled, wait_until
from tests.support.webhooks import deliver, labeled

LEASE = 60.0
A, B = "acme/api", "acme/web"


@pytest.fixture
def clock() -> Clock:
    return Clock(day_start(time.time()) + 12 * 3600)  # noon UTC


def enqueue(store: Store, repo: str, number: int, installation: int = 1) -> int:
    trigger = Trigger(kind="issue", repo=repo, number=number, installation_id=installation, sender="octo")
    with store.transaction() as conn:
        return store.work.enqueue(conn, trigger, store.clock())[0]


def test_one_job_per_repository_runs_and_the_waiting_one_is_told_behind_what(store):
    first, second, other = enqueue(store, A, 1), enqueue(store, A, 2), enqueue(store, B, 3)
    limits = Limits(per_repo=1)
    assert store.leases.claim("w1", WORK_KINDS, LEASE, limits).id == first
    assert store.leases.claim("w2", WORK_KINDS, LEASE, limits).id == other  # passes over the one waiting in acme/api
    assert store.leases.claim("w3", WORK_KINDS, LEASE, limits) is None
    [(job, reason)] = waiting_notices(store, limits)
    assert job.id == second
    assert reason.startswith("Queued behind acme/api#1: at most 1 job(s) run at once in acme/api")
    assert waiting_notices(store, limits) == []  # told once, until the reason changes
    assert store.leases.finish(first, "w1", "done", "")
    assert store.leases.claim("w3", WORK_KINDS, LEASE, limits).id == second


def test_the_installation_limit_counts_every_repository_of_it(store):
    first, _, elsewhere = enqueue(store, A, 1), enqueue(store, B, 2), enqueue(store, A, 3, installation=2)
    limits = Limits(per_repo=None, per_installation=1)
    assert store.leases.claim("w1", WORK_KINDS, LEASE, limits).id == first
    assert store.leases.claim("w2", WORK_KINDS, LEASE, limits).id == elsewhere  # another installation, own budget
    assert store.leases.claim("w3", WORK_KINDS, LEASE, limits) is None
    [(job, reason)] = waiting_notices(store, limits)
    assert job.repo == B and "Queued behind acme/api#1" in reason and "AIFIX_MAX_RUNNING_PER_INSTALLATION" in reason


def test_past_the_daily_cost_a_job_waits_for_the_next_utc_day(store, clock):
    spent = enqueue(store, A, 1)
    store.leases.claim("w1", WORK_KINDS, LEASE)
    assert store.leases.finish(spent, "w1", "done", "", cost_usd=3.25)
    waiting = enqueue(store, A, 2)
    limits = Limits(daily_cost_usd=3.0)
    assert store.leases.claim("w2", WORK_KINDS, LEASE, limits) is None
    [(job, reason)] = waiting_notices(store, limits)
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(clock.now + 86400))
    assert job.id == waiting
    assert reason == (
        f"Waiting until {tomorrow} 00:00 UTC: this installation's jobs spent $3.25 today, its daily budget is "
        "$3.00 (AIFIX_DAILY_COST_USD). It starts on the next UTC day."
    )
    clock.now += 12 * 3600 + 1  # just past midnight
    assert store.leases.claim("w2", WORK_KINDS, LEASE, limits).id == waiting


def test_claims_at_once_never_run_more_than_the_limit(store, database_url):
    for n in range(1, 11):
        enqueue(store, A, n)
    limits = Limits(per_repo=2)
    stores = [Store.from_url(database_url, clock=store.clock) for _ in range(8)]
    barrier = threading.Barrier(len(stores))
    claimed: list[int] = []

    def claim(own: Store, name: str) -> None:
        barrier.wait()
        if (job := own.leases.claim(name, WORK_KINDS, LEASE, limits)) is not None:
            claimed.append(job.id)

    threads = [threading.Thread(target=claim, args=(s, f"w{i}")) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for own in stores:
        own.close()
    assert len(claimed) <= 2 and job_counts(store)[("issue", "running")] == len(claimed)


def test_the_issue_comment_says_the_job_is_queued_and_behind_what(start_service, fake_github, tmp_path):
    fake_github.add_issue("Codertocat/Hello-World", 2)
    svc = start_service(pipeline=Gate, max_running_per_repo=1)
    running = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    wait_for(tmp_path / "work" / f"started-{running}")
    queued = deliver(svc.client, "issues", labeled(2)).json()["job_id"]

    def told() -> str:
        bodies = [body for repo, number, body in fake_github.created_comments if number == 2]
        return next((b for b in bodies if "is queued" in b), "")

    comment = wait_until(told)
    assert comment.startswith("<!-- ai-fix:progress issue=2 -->")
    assert f"job {queued} is queued. Queued behind Codertocat/Hello-World#1" in comment
    assert svc.store.jobs.get(queued).status == "queued"
    (tmp_path / "work" / "release-all").write_text("")
    assert settled(svc.store, queued).status == "done"


def test_metrics_report_cost_and_outcomes_per_repository_and_the_queue(store, clock):
    first, second = enqueue(store, A, 1), enqueue(store, B, 2)
    enqueue(store, A, 3)
    for job_id, cost in ((first, 1.5), (second, 0.25)):
        store.leases.claim("w", WORK_KINDS, LEASE)
        assert store.leases.finish(job_id, "w", "done" if job_id == first else "failed", "", cost_usd=cost)
    clock.now += 42
    text = Metrics().render(job_counts(store), queue_figures(store))
    assert 'aifix_cost_usd_total{repo="acme/api"} 1.500000' in text
    assert 'aifix_cost_usd_total{repo="acme/web"} 0.250000' in text
    assert 'aifix_outcomes_total{repo="acme/api",outcome="done"} 1' in text
    assert 'aifix_outcomes_total{repo="acme/web",outcome="failed"} 1' in text
    assert "aifix_queue_depth 1\n" in text and "aifix_queue_oldest_seconds 42.000\n" in text
