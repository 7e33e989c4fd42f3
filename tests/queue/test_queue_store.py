"""Leases, attempts and claims at the store level, on a real SQLite file and a real PostgreSQL server."""

import json
import threading
import time
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.intake.apply import Incoming, apply_batch
from bot.intake.events import Event
from bot.intake.triggers import decide
from bot.queue.health import event_counts
from bot.queue.models import Trigger
from bot.queue.sqlite_db import parse_sqlite_url
from bot.queue.store import Store
from bot.vocabulary import WORK_KINDS
from tests.support.webhooks import labeled

LEASE = 30.0


def enqueue(store: Store, *numbers: int) -> list[int]:
    items = []
    for n in numbers:
        payload = labeled(n)
        event = Event("issues", f"delivery-{n}-{time.monotonic_ns()}", payload)
        items.append(
            Incoming(
                event,
                json.dumps(payload).encode(),
                decide(event, trigger_label="ai-fix", bot_login="ai-fix[bot]"),
                store.clock(),
            )
        )
    return [ack.job_id for ack in apply_batch(store, items)]


def test_an_expired_lease_is_claimed_again_and_the_old_owner_lost_it(store, clock):
    [job_id] = enqueue(store, 1)
    first = store.leases.claim("worker-a", WORK_KINDS, LEASE)
    assert first.id == job_id and first.attempts == 1
    assert store.leases.claim("worker-b", WORK_KINDS, LEASE) is None  # leased: nobody else gets it
    clock.now += LEASE + 1
    again = store.leases.claim("worker-b", WORK_KINDS, LEASE)
    assert again.id == job_id and again.attempts == 2
    assert [e.event for e in again.events][-2:] == ["lease_expired", "claimed"]
    assert store.leases.finish(job_id, "worker-a", "done", "late") is False  # the dead worker's write is refused
    assert store.leases.finish(job_id, "worker-b", "done", "ok") is True


def test_renewed_leases_are_not_taken(store, clock):
    enqueue(store, 1)
    job = store.leases.claim("worker-a", WORK_KINDS, LEASE)
    for _ in range(3):
        clock.now += LEASE * 0.6
        assert store.leases.renew("worker-a", LEASE, [job.id]) == 1
        assert store.leases.claim("worker-b", WORK_KINDS, LEASE) is None


def test_only_the_leases_named_are_renewed(store, clock):
    """A job its worker no longer runs (its outcome could not be stored) is not kept by the worker's renewals."""
    enqueue(store, 1, 2)
    running = store.leases.claim("worker-a", WORK_KINDS, LEASE)
    orphan = store.leases.claim("worker-a", WORK_KINDS, LEASE)
    for _ in range(2):
        clock.now += LEASE * 0.6
        assert store.leases.renew("worker-a", LEASE, [running.id]) == 1
    again = store.leases.claim("worker-b", WORK_KINDS, LEASE)
    assert again.id == orphan.id and again.attempts == 2
    assert store.leases.claim("worker-c", WORK_KINDS, LEASE) is None  # the renewed one is still worker-a's
    assert store.leases.renew("worker-a", LEASE, []) == 0


def test_a_job_whose_worker_dies_three_times_fails_with_the_reason(store, clock):
    [job_id] = enqueue(store, 1)
    for attempt in (1, 2, 3):
        assert store.leases.claim(f"worker-{attempt}", WORK_KINDS, LEASE).attempts == attempt
        clock.now += LEASE + 1
    assert store.leases.claim("worker-4", WORK_KINDS, LEASE) is None
    job = store.jobs.get(job_id)
    assert job.status == "failed" and job.reason == "its worker stopped answering (lease expired) on attempt 3 of 3"


def test_release_on_shutdown_does_not_spend_an_attempt(store):
    [job_id] = enqueue(store, 1)
    store.leases.claim("worker-a", WORK_KINDS, LEASE)
    store.leases.save_state(job_id, {"step": 4})
    assert store.leases.release(job_id, "worker-a") is True
    job = store.leases.claim("worker-b", WORK_KINDS, LEASE)
    assert job.attempts == 1 and job.state == {"step": 4}


def test_failed_attempts_wait_before_the_next_try(store, clock):
    [job_id] = enqueue(store, 1)
    store.leases.claim("w", WORK_KINDS, LEASE)
    assert store.leases.fail_attempt(job_id, "w", "GitHub 502", retry_in=10) == "queued"
    assert store.leases.claim("w", WORK_KINDS, LEASE) is None
    clock.now += 11
    assert store.leases.claim("w", WORK_KINDS, LEASE).id == job_id


def test_concurrent_claims_from_separate_connections_never_share_a_job(database_url, store):
    job_ids = enqueue(store, *range(1, 41))
    claimed: list[tuple[str, int]] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        own = Store.from_url(database_url)  # its own connections, as another process would have
        while (job := own.leases.claim(name, WORK_KINDS, LEASE)) is not None:
            with lock:
                claimed.append((name, job.id))
            own.leases.finish(job.id, name, "done", "")
        own.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(job for _, job in claimed) == sorted(job_ids)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///ai-fix.db", (Path("ai-fix.db"), "full")),
        ("sqlite:////var/lib/ai-fix/q.db", (Path("/var/lib/ai-fix/q.db"), "full")),
        ("sqlite:///q.db?synchronous=normal", (Path("q.db"), "normal")),
    ],
)
def test_database_urls(url, expected):
    assert parse_sqlite_url(url) == expected


@pytest.mark.parametrize(
    "url", ["postgresql://db/aifix", "sqlite:///", "sqlite:///q.db?synchronous=off", "sqlite:///q.db?cache=shared"]
)
def test_unsupported_database_urls_say_what_to_use(url):
    with pytest.raises(ConfigError, match="AIFIX_DATABASE_URL .* use sqlite:///ai-fix.db"):
        parse_sqlite_url(url)


def github_trigger(kind: str, delivery: str, number: int = 2) -> Trigger:
    return Trigger(
        kind=kind, repo="o/r", number=number, installation_id=1, sender="", delivery_id=delivery, origin="github"
    )


def test_ci_triggers_merge_only_into_a_queued_job_of_their_kind(store):
    def put(trigger: Trigger) -> tuple[int, str]:
        with store.transaction() as conn:
            return store.work.enqueue(conn, trigger, store.clock())

    first, how = put(github_trigger("ci", "d1"))
    assert how == "queued"
    assert put(github_trigger("ci", "d2")) == (first, "merged"), "several failing checks of one head make one job"
    retry = put(Trigger(kind="retry", repo="o/r", number=2, installation_id=1, sender="u", delivery_id="d3"))
    assert retry[0] != first and retry[1] == "queued", "a CI failure is not a review: its own job"
    rebase = put(github_trigger("rebase", "d4"))
    assert rebase[0] not in (first, retry[0])
    assert [len(store.jobs.get(j).triggers) for j in (first, retry[0], rebase[0])] == [2, 1, 1]


def test_event_counts_group_a_history_event_by_a_field(store):
    [job] = enqueue(store, 5)
    store.history.record(job, "ci_round", {"outcome": "accepted"})
    store.history.record(job, "ci_round", {"outcome": "accepted"})
    store.history.record(job, "ci_round", {"outcome": "handed_off"})
    assert event_counts(store, "ci_round", "outcome") == {"accepted": 2, "handed_off": 1}
    assert event_counts(store, "ci_flaky", "head") == {}


def test_an_idle_worker_on_postgresql_wakes_on_the_enqueue_not_the_poll(postgres_server):
    url = postgres_server.new_database()
    store, intake = Store.from_url(url), Store.from_url(url)
    store.init_schema()
    token = store.db.work_token()
    woke: list[float] = []
    waiter = threading.Thread(
        target=lambda: (store.db.wait_for_work(token, 30.0, threading.Event()), woke.append(time.monotonic()))
    )
    time.sleep(0.5)  # the listener is connected and listening
    waiter.start()
    sent = time.monotonic()
    enqueue(intake, 1)
    waiter.join(timeout=30)
    assert woke and woke[0] - sent < 2.0  # the NOTIFY of the commit, well before the 30 s timeout
    assert store.leases.claim("w", WORK_KINDS, LEASE) is not None
    store.close()
    intake.close()


def test_insert_new_inserts_the_rows_whose_key_is_new_and_says_which(store):
    columns = ("id", "checked_at")
    with store.transaction() as conn:
        assert store.db.insert_new(conn, "health", columns, [(1, 1.0), (2, 2.0)]) == {1, 2}
    with store.transaction() as conn:
        assert store.db.insert_new(conn, "health", columns, [(2, 9.0), (3, 3.0)]) == {3}  # 2 was there: left as it was
    with store.reading() as conn:
        rows = conn.execute("SELECT id, checked_at FROM health ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [(1, 1.0), (2, 2.0), (3, 3.0)]
