"""Group commit (`bot.intake.batching`) on a real SQLite file and a real PostgreSQL server: deliveries arriving
together share one commit and one fsync and are answered once it returns; the event loop never waits on the
store; a batch that cannot be stored answers each delivery as a lone one is answered; and a process killed
under load has stored every delivery it acknowledged, once."""

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from bot.errors import StoreUnavailable
from bot.intake.activity import Activity
from bot.intake.apply import Ack, Incoming, apply_batch
from bot.intake.batching import GroupCommit
from bot.intake.events import Event
from bot.intake.processing import DeferredProcessing
from bot.intake.triggers import decide
from bot.intake.wal_file import WalFile
from bot.intake.writer import IntakeWriter
from bot.queue.store import Store
from tests.support.service import wait_until
from tests.support.webhooks import incoming, unlabeled

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    store = Store.from_url(database_url)
    store.init_schema()
    yield store
    store.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """For what only SQLite has: the WAL the committer fsyncs itself, and the one-writer lock."""
    store = Store.from_url(f"sqlite:///{tmp_path / 'q.db'}")
    store.init_schema()
    yield store
    store.close()


def count(store: Store, sql: str) -> int:
    with store.reading() as conn:
        return int(conn.execute(sql).fetchone()[0])


class CountedSync:
    """The WAL's fsync, counted, held until `release` is set (a slow disk)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.release.wait(10)
        os.fdatasync(fd)


def write_lock(store: Store) -> AbstractContextManager[object]:
    return threading.Lock() if store.db.one_writer else contextlib.nullcontext()


@contextlib.contextmanager
def group_commit(
    store: Store,
    sync: Callable[[int], None] = os.fdatasync,
    lock: AbstractContextManager[object] | None = None,
) -> Iterator[GroupCommit]:
    wal = WalFile(store.db, sync)
    batches = GroupCommit(store, lock or write_lock(store), Activity(), wal=wal, max_batch=256)
    batches.start()
    try:
        yield batches
    finally:
        batches.stop()
        wal.close()


def test_deliveries_arriving_together_share_one_commit_and_fsync_and_are_answered_once_it_returns(sqlite_store):
    store, sync = sqlite_store, CountedSync()
    items = [incoming(n, f"delivery-{n}") for n in range(1, 31)]
    items.append(incoming(5, "delivery-5"))  # GitHub's redelivery, in the same batch as the first copy

    async def submit_while_the_disk_is_slow(batches: GroupCommit) -> list[Ack]:
        tasks = [asyncio.create_task(batches.submit(item)) for item in items]
        await asyncio.to_thread(wait_until, lambda: count(store, "SELECT COUNT(*) FROM deliveries") == 30)
        await asyncio.sleep(0.2)
        assert not any(task.done() for task in tasks)  # committed, but nobody is answered before it is on disk
        sync.release.set()
        return await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)

    with group_commit(store, sync) as batches:
        acks = asyncio.run(submit_while_the_disk_is_slow(batches))
    # Stored with their jobs in that one commit: each answer names its job, and nothing is left for after the burst.
    assert [a.outcome for a in acks] == ["queued"] * 30 + ["duplicate"]
    assert len({a.job_id for a in acks[:30]}) == 30 and acks[4].job_id is not None
    assert sync.calls == 1
    assert count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0") == 0
    assert count(store, "SELECT COUNT(*) FROM jobs") == count(store, "SELECT COUNT(*) FROM triggers") == 30


def test_the_loop_never_waits_on_the_stores_lock(sqlite_store):
    """The processing thread holds the write lock for a whole batch: the loop reads and answers meanwhile."""
    store, lock = sqlite_store, threading.Lock()
    released = threading.Event()

    async def submit_while_the_lock_is_held(batches: GroupCommit) -> tuple[float, list[Ack]]:
        lock.acquire()
        threading.Timer(1.0, lambda: (released.set(), lock.release())).start()
        tasks = [asyncio.create_task(batches.submit(incoming(n, f"delivery-{n}"))) for n in (1, 2, 3)]
        started = time.monotonic()
        await asyncio.sleep(0.01)  # other work on the loop: a request being read, a /healthz answered
        waited = time.monotonic() - started
        acks = await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
        assert released.is_set()  # answered only once they could be committed
        return waited, acks

    with group_commit(store, lock=lock) as batches:
        waited, acks = asyncio.run(submit_while_the_lock_is_held(batches))
    assert waited < 0.5, f"the loop was held {waited:.2f} s"
    assert [a.outcome for a in acks] == ["queued"] * 3


def test_a_batch_is_committed_while_the_one_before_is_fsynced_and_answered_after_an_fsync_begun_after_it(sqlite_store):
    """The committer does not wait for the disk: the next batch is stored while the WAL is fsynced for the one
    before, and each is answered only once an fsync that began after its commit has returned."""
    store, sync = sqlite_store, CountedSync()
    stored_when_synced: list[int] = []
    counted = sync.__call__

    def sync_after_counting(fd: int) -> None:
        stored_when_synced.append(count(store, "SELECT COUNT(*) FROM deliveries"))
        counted(fd)

    async def two_waves(batches: GroupCommit) -> tuple[list[Ack], list[Ack]]:
        first = [asyncio.create_task(batches.submit(incoming(n, f"first-{n}"))) for n in range(1, 11)]
        await asyncio.to_thread(wait_until, lambda: sync.calls == 1)
        second = [asyncio.create_task(batches.submit(incoming(n, f"second-{n}"))) for n in range(11, 21)]
        # Committed while the first batch's fsync has not returned.
        await asyncio.to_thread(wait_until, lambda: count(store, "SELECT COUNT(*) FROM deliveries") == 20)
        await asyncio.sleep(0.2)
        assert not any(task.done() for task in first + second)  # nobody is answered before the disk has it
        sync.release.set()
        return await asyncio.gather(*first), await asyncio.gather(*second)

    with group_commit(store, sync_after_counting) as batches:
        first, second = asyncio.run(asyncio.wait_for(two_waves(batches), timeout=10))
    assert [a.outcome for a in first + second] == ["queued"] * 20
    assert stored_when_synced == [10, 20]  # the second wave's answers waited for an fsync begun after its commit


def test_a_batch_that_cannot_be_stored_answers_each_delivery_as_a_lone_one_is_answered(store):
    with store.transaction() as conn:
        conn.execute("ALTER TABLE deliveries RENAME TO deliveries_gone")

    async def lone_then_batch(batches: GroupCommit) -> tuple[BaseException, list[BaseException]]:
        with pytest.raises(StoreUnavailable) as lone:
            await batches.submit(incoming(1, "lone"))
        batch = [batches.submit(incoming(n, f"delivery-{n}")) for n in range(2, 7)]
        return lone.value, await asyncio.gather(*batch, return_exceptions=True)

    with group_commit(store) as batches:
        lone, batch = asyncio.run(asyncio.wait_for(lone_then_batch(batches), timeout=20))
    missing = {"sqlite": "no such table: deliveries", "postgresql": 'relation "deliveries" does not exist'}
    for refused in [lone, *batch]:  # StoreUnavailable is what the webhook answers 503 (GitHub redelivers)
        assert isinstance(refused, StoreUnavailable) and missing[store.db.dialect] in str(refused), refused
    assert len(batch) == 5


def test_deferred_deliveries_wait_for_a_quiet_moment_but_not_for_ever(store):
    apply_batch(store, [incoming(n, f"delivery-{n}") for n in range(1, 11)], defer=True)
    activity = Activity()
    activity.committed(10, deferred=True)
    activity.arrived()  # one delivery in flight all along: a load that never lets up
    processing = DeferredProcessing(store, write_lock(store), activity)
    processing.PROCESS_BATCH = 4
    processing.start()
    try:
        time.sleep(0.3)
        assert count(store, "SELECT COUNT(*) FROM jobs") == 0  # not while deliveries are in flight
        wait_until(lambda: count(store, "SELECT COUNT(*) FROM jobs") >= 4, timeout=5)  # one batch a second all the same
        activity.answered()
        wait_until(lambda: count(store, "SELECT COUNT(*) FROM jobs") == 10)  # quiet: the rest at once
    finally:
        processing.stop()


def test_processing_mid_burst_leaves_copying_the_wal_to_the_checkpoint_thread(sqlite_store):
    """A commit that crossed SQLite's autocheckpoint threshold copied the whole WAL into the database while the
    processing thread held the intake's write lock: every answer waited (p99 112 ms against 50 ms at c=200)."""
    store = sqlite_store
    store.db.leave_checkpoints_to_intake()  # this thread stands for the committer, which never checkpoints
    apply_batch(store, [incoming(n, f"delivery-{n}") for n in range(1, 1501)], defer=True)
    database, wal = store.db.path, store.db.wal_file
    assert wal.stat().st_size > 1000 * 4096  # past SQLite's threshold: the next commit on a default connection copies
    size_before = database.stat().st_size
    activity = Activity()
    activity.committed(1500, deferred=True)
    activity.arrived()  # mid-burst: a delivery in flight
    processing = DeferredProcessing(store, write_lock(store), activity)
    processing.MAX_DEFERRAL = 0.0
    processing.start()
    try:
        wait_until(lambda: count(store, "SELECT COUNT(*) FROM jobs") >= processing.PROCESS_BATCH, timeout=5)
        assert database.stat().st_size == size_before
    finally:
        activity.answered()
        processing.stop()


UNDER_LOAD = """
import asyncio, sys
from tests.support.webhooks import incoming, unlabeled
from bot.intake.writer import IntakeWriter
from bot.queue.store import Store

writer = IntakeWriter(Store.from_url(sys.argv[1]))
writer.start()
numbers = iter(range(1, 1_000_000))

async def connection() -> None:
    while True:
        n = next(numbers)
        for delivery in [f"delivery-{n}"] + ([f"delivery-{n - 5}"] if n % 7 == 0 else []):  # some redeliveries
            ack = await writer.submit(incoming(n, delivery))
            print(delivery, ack.outcome, flush=True)  # printed once it is acknowledged

async def main() -> None:
    await asyncio.gather(*(connection() for _ in range(16)))

asyncio.run(main())
"""


def test_a_process_killed_under_load_has_stored_every_delivery_it_acknowledged_once(store, database_url):
    proc = subprocess.Popen(
        [sys.executable, "-c", UNDER_LOAD, database_url], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    acknowledged: set[str] = set()
    try:
        assert proc.stdout is not None
        while len(acknowledged) < 400:
            line = proc.stdout.readline()
            assert line, "the process under load stopped answering"
            delivery, outcome = line.split()
            assert outcome in ("stored", "queued", "duplicate")
            acknowledged.add(delivery)
    finally:
        proc.send_signal(signal.SIGKILL)  # no shutdown: whatever was in flight is lost, never what was answered
        proc.wait(timeout=30)
        proc.stdout.close()
    with store.reading() as conn:
        stored = {row[0] for row in conn.execute("SELECT id FROM deliveries")}
    assert acknowledged <= stored
    restarted = IntakeWriter(Store.from_url(database_url))
    restarted.start()  # processes what the killed one stored and did not process
    restarted.stop()
    assert count(store, "SELECT COUNT(*) FROM jobs") == len(stored)  # one job per stored delivery, none twice
    assert count(store, "SELECT COUNT(DISTINCT delivery_id) FROM triggers") == len(stored)


def test_a_burst_of_triggers_is_stored_with_its_jobs_in_a_handful_of_statements(sqlite_store):
    """Each statement the committer runs gives the interpreter lock to the busy event loop and waits to get it back,
    so a burst's jobs, triggers and history are one INSERT each, not a few statements per delivery."""
    store, statements = sqlite_store, []
    store.db.connection().set_trace_callback(statements.append)
    acks = apply_batch(store, [incoming(n, f"delivery-{n}") for n in range(1, 101)])
    assert [a.outcome for a in acks] == ["queued"] * 100
    assert len(statements) <= 12, statements
    assert count(store, "SELECT COUNT(*) FROM jobs") == count(store, "SELECT COUNT(*) FROM triggers") == 100
    assert count(store, "SELECT COUNT(*) FROM events WHERE event = 'queued'") == 100


def test_a_burst_merges_into_an_issue_s_active_job_and_queues_the_others_in_order(store):
    [first] = apply_batch(store, [incoming(1, "first")])
    acks = apply_batch(
        store, [incoming(2, "two"), incoming(1, "one-again"), incoming(3, "three"), incoming(2, "two-b")]
    )
    assert [a.outcome for a in acks] == ["queued", "merged", "queued", "merged"]
    assert acks[1].job_id == first.job_id and acks[3].job_id == acks[0].job_id
    triggers = {job.number: sorted(t.delivery_id for t in job.triggers) for job in store.jobs.newest(None, 10)}
    assert triggers == {1: ["first", "one-again"], 2: ["two", "two-b"], 3: ["three"]}
    queued = {e.data["delivery"] for job in store.jobs.newest(None, 10) for e in job.events if e.event == "queued"}
    assert queued == {"first", "two", "three"}


def test_a_label_removed_in_the_same_burst_is_applied_after_the_trigger_before_it_and_not_before(store):
    def removed(number: int, delivery: str) -> Incoming:
        payload = unlabeled(number)
        event = Event("issues", delivery, payload)
        return Incoming(event, json.dumps(payload).encode(), decide(event, trigger_label="ai-fix", bot_login="b"), 1.0)

    acks = apply_batch(
        store, [incoming(5, "label-5"), removed(5, "unlabel-5"), removed(6, "unlabel-6"), incoming(6, "label-6")]
    )
    assert [a.outcome for a in acks] == ["queued", "label_removed", "label_removed", "queued"]
    status = {job.number: job.status for job in store.jobs.newest(None, 10)}
    assert status == {5: "cancelled", 6: "queued"}


def test_a_burst_looks_its_targets_up_by_the_target_index_not_through_every_queued_job(sqlite_store):
    """Every job a burst makes stays queued until a worker takes it: looking targets up through the status index would
    walk all of them for every batch, and the intake would slow down as its queue grew."""
    store, statements = sqlite_store, []
    apply_batch(store, [incoming(n, f"earlier-{n}") for n in range(1, 201)])
    store.db.connection().set_trace_callback(statements.append)
    apply_batch(store, [incoming(n, f"delivery-{n}") for n in range(1001, 1051)])
    store.db.connection().set_trace_callback(None)
    [lookup] = [s for s in statements if s.startswith("SELECT repo, number FROM jobs")]
    plan = " ".join(str(row[3]) for row in store.db.connection().execute(f"EXPLAIN QUERY PLAN {lookup}"))
    assert "jobs_by_target" in plan and "jobs_by_status" not in plan, plan
