"""Jobs awaiting approval at the store level, on a real SQLite file: parked without a lease, woken by an answer or
by their deadline, stopped, merged into, cancelled with their installation."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from bot.intake.apply import Incoming, apply_batch
from bot.intake.events import Event
from bot.intake.triggers import decide
from bot.queue.models import PlanAnswer
from bot.queue.store import Store
from bot.vocabulary import WORK_KINDS
from tests.support.webhooks import REPO, labeled

LEASE = 30.0
DAY = 86_400.0


@pytest.fixture
def now() -> list[float]:
    """The store's clock: tests move it by changing `now[0]`."""
    return [time.time()]


@pytest.fixture
def store(database_url: str, now: list[float]) -> Iterator[Store]:
    store = Store.from_url(database_url, clock=lambda: now[0])
    store.init_schema()
    yield store
    store.close()


def label(store: Store, number: int) -> int | None:
    payload = labeled(number)
    event = Event("issues", f"d-{number}-{time.monotonic_ns()}", payload)
    decision = decide(event, trigger_label="ai-fix", bot_login="ai-fix[bot]")
    [ack] = apply_batch(store, [Incoming(event, json.dumps(payload).encode(), decision, store.clock())])
    return ack.job_id


def parked(store: Store, now: list[float], number: int = 1, *, days: float = 7.0) -> int:
    """A job claimed, its state saved, then left waiting `days`."""
    job_id = label(store, number)
    assert job_id is not None
    assert store.leases.claim("w", WORK_KINDS, LEASE).id == job_id
    store.leases.save_state(job_id, {"planning": {"rounds": 1}})
    assert store.waiting.park(job_id, "w", now[0] + days * DAY, "plan 1 posted")
    return job_id


def events(store: Store, job_id: int) -> list[str]:
    return [e.event for e in store.jobs.get(job_id).events]


def test_a_parked_job_holds_no_lease_and_no_worker_can_take_it(store, now):
    job_id = parked(store, now)
    job = store.jobs.get(job_id)
    assert (job.status, job.reason, job.attempts) == ("awaiting_approval", "plan 1 posted", 0)
    with store.reading() as conn:
        row = conn.execute("SELECT lease_owner, lease_expires FROM jobs WHERE id = ?", (job_id,)).fetchone()
    assert tuple(row) == (None, None)
    now[0] += DAY
    assert store.leases.claim("w2", WORK_KINDS, LEASE) is None
    assert store.leases.renew("w", LEASE, [job_id]) == 0


def test_an_answer_queues_it_again_with_the_answer_in_its_state(store, now):
    job_id = parked(store, now)
    woken = store.waiting.answer_plan(REPO, 1, PlanAnswer(action="approve", approach=2, by="Codertocat"))
    assert woken == job_id
    job = store.leases.claim("w2", WORK_KINDS, LEASE)
    assert job.id == job_id and job.attempts == 1, "a new start, not a retry"
    assert job.state["planning"] == {"rounds": 1}
    assert {k: job.state["answer"][k] for k in ("action", "approach", "by")} == {
        "action": "approve",
        "approach": 2,
        "by": "Codertocat",
    }
    assert job.state["answer"]["at"] == now[0]
    assert events(store, job_id)[-3:] == ["awaiting_approval", "answered", "claimed"]
    assert store.waiting.answer_plan(REPO, 1, PlanAnswer(action="approve", by="x")) is None, "it no longer waits"


def test_the_deadline_wakes_it_with_expired(store, now):
    job_id = parked(store, now, days=0.5)
    now[0] += 0.5 * DAY - 1
    assert store.leases.claim("w2", WORK_KINDS, LEASE) is None
    now[0] += 2
    job = store.leases.claim("w2", WORK_KINDS, LEASE)
    assert job.id == job_id and job.state["answer"]["action"] == "expired"
    assert "approval_expired" in events(store, job_id)


def test_stop_wakes_the_waiting_job_and_cancels_the_queued_follow_up(store, now):
    first = label(store, 1)
    assert store.leases.claim("w", WORK_KINDS, LEASE).id == first
    follow_up = label(store, 1)  # arrived while the first ran
    assert follow_up != first
    assert store.waiting.park(first, "w", now[0] + DAY, "plan 1 posted")
    assert store.leases.claim("w2", WORK_KINDS, LEASE) is None, "the follow-up waits behind the job awaiting approval"
    assert store.work.cancel_target(REPO, 1, "stopped by @Codertocat (/agent stop)", by="Codertocat") == [
        follow_up,
        first,
    ]
    assert store.jobs.get(follow_up).status == "cancelled"
    job = store.leases.claim("w2", WORK_KINDS, LEASE)
    assert job.id == first and job.state["answer"]["action"] == "stop" and job.state["answer"]["by"] == "Codertocat"


def test_a_new_trigger_joins_the_waiting_job(store, now):
    job_id = parked(store, now)
    assert label(store, 1) == job_id
    job = store.jobs.get(job_id)
    assert job.status == "awaiting_approval" and len(job.triggers) == 2 and events(store, job_id)[-1] == "merged"


def test_removing_the_installation_cancels_a_waiting_job_at_once(store, now):
    job_id = parked(store, now)
    with store.transaction() as conn:
        store.work.cancel_where(conn, "installation_id = ?", (1,), "the App installation was deleted")
    job = store.jobs.get(job_id)
    assert (job.status, job.reason) == ("cancelled", "the App installation was deleted")
    assert store.waiting.answer_plan(REPO, 1, PlanAnswer(action="approve", by="x")) is None


def test_park_needs_the_lease(store, now):
    job_id = label(store, 1)
    assert store.leases.claim("w", WORK_KINDS, LEASE).id == job_id
    assert not store.waiting.park(job_id, "someone-else", now[0] + DAY, "plan 1 posted")
    assert store.jobs.get(job_id).status == "running"
