"""The intake writer on a real SQLite file and a real PostgreSQL server: deliveries gathered in one event-loop pass,
deferred processing, shutdown; the WAL's fsync on SQLite."""

import asyncio
import dataclasses
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

from bot.errors import StoreUnavailable
from bot.intake.apply import Ack, Incoming, apply_batch, process_pending
from bot.intake.triggers import Triggered
from bot.intake.writer import IntakeWriter
from bot.queue.health import quarantined_deliveries
from bot.queue.store import Store
from tests.support.service import wait_until
from tests.support.webhooks import incoming

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(database_url: str) -> Store:
    store = Store.from_url(database_url)
    store.init_schema()
    yield store
    store.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    """For what only SQLite has: the WAL the writer fsyncs itself."""
    store = Store.from_url(f"sqlite:///{tmp_path / 'q.db'}")
    store.init_schema()
    yield store
    store.close()


def count(store: Store, sql: str) -> int:
    with store.reading() as conn:
        return int(conn.execute(sql).fetchone()[0])


def test_deliveries_submitted_together_are_stored_acknowledged_then_processed_once(store):
    items = [incoming(n, f"delivery-{n}") for n in range(1, 21)]
    items.append(incoming(7, "delivery-7"))  # a redelivery arriving in the same pass as the original

    async def submit_all(writer: IntakeWriter) -> list[Ack]:
        return await asyncio.wait_for(asyncio.gather(*(writer.submit(item) for item in items)), timeout=10)

    writer = IntakeWriter(store)
    writer.start()
    try:
        acks = asyncio.run(submit_all(writer))
        # A batch of several is acknowledged once its deliveries are committed with their jobs: the answers name them.
        assert [a.outcome for a in acks] == ["queued"] * 20 + ["duplicate"]
        assert count(store, "SELECT COUNT(*) FROM deliveries") == 20
        assert count(store, "SELECT COUNT(*) FROM jobs") == 20
        assert {a.job_id for a in acks[:20]} == {job.id for job in store.jobs.newest(None, 100)}
        assert count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0") == 0
        # A lone delivery when nothing waits is applied in its own transaction: the answer names its job.
        lone = asyncio.run(asyncio.wait_for(writer.submit(incoming(21, "delivery-21")), timeout=10))
        assert lone.outcome == "queued" and lone.job_id is not None
    finally:
        writer.stop()
    assert count(store, "SELECT COUNT(*) FROM jobs") == 21
    assert (
        count(store, "SELECT COUNT(DISTINCT delivery_id) FROM triggers")
        == count(store, "SELECT COUNT(*) FROM triggers")
        == 21
    )


CRASH_AFTER_ACK = """
import os, sys, time
from tests.support.webhooks import incoming
from bot.intake.apply import apply_batch
from bot.queue.store import Store
acks = apply_batch(Store.from_url(sys.argv[1]), [incoming(n, f"delivery-{n}") for n in range(1, 6)], defer=True)
assert [a.outcome for a in acks] == ["stored"] * 5, acks
os._exit(9)  # killed after the acknowledgement's commit, before any processing
"""


def test_a_crash_between_ack_and_processing_loses_nothing_and_the_next_start_processes_once(store, database_url):
    crashed = subprocess.run(
        [sys.executable, "-c", CRASH_AFTER_ACK, database_url], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert crashed.returncode == 9, crashed.stderr
    assert count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0") == 5
    assert count(store, "SELECT COUNT(*) FROM jobs") == 0
    for _ in range(2):  # two restarts: the second finds nothing left to do
        writer = IntakeWriter(Store.from_url(database_url))
        writer.start()
        assert count(store, "SELECT COUNT(*) FROM jobs") == 5  # done before the writer takes deliveries
        writer.stop()
    assert count(store, "SELECT COUNT(*) FROM triggers") == 5
    assert count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0") == 0


PROCESSOR = """
import sys, time
from pathlib import Path
from bot.intake.apply import process_pending
from bot.queue.store import Store
store = Store.from_url(sys.argv[1])
go = Path(sys.argv[2])
(go.parent / f"ready-{sys.argv[3]}").touch()
while not go.exists():
    time.sleep(0.001)
found = 0
while (batch := process_pending(store, 3)):
    found += batch
    time.sleep(0.002)  # let the other process take the write lock between batches, as a busy server would
print(found)
"""


def test_two_processes_never_both_process_one_delivery(store, database_url, tmp_path):
    apply_batch(store, [incoming(n, f"delivery-{n}") for n in range(1, 121)], defer=True)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESSOR, database_url, str(go), str(i)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    wait_until(lambda: (tmp_path / "ready-0").exists() and (tmp_path / "ready-1").exists(), timeout=30)
    go.touch()
    found = [int(p.communicate(timeout=60)[0]) for p in procs]
    assert sum(found) == 120, found  # each delivery found (and marked) by exactly one of them
    assert count(store, "SELECT COUNT(*) FROM jobs") == 120
    assert (
        count(store, "SELECT COUNT(DISTINCT delivery_id) FROM triggers")
        == count(store, "SELECT COUNT(*) FROM triggers")
        == 120
    )


def test_deliveries_gathered_when_the_writer_stops_are_refused_not_left_waiting(store):
    async def submit_then_stop(writer: IntakeWriter) -> list[object]:
        tasks = [asyncio.create_task(writer.submit(incoming(n, f"delivery-{n}"))) for n in (1, 2, 3)]
        await asyncio.sleep(0)  # the submits run and gather; their hand-over to the writer is the next pass
        writer.stop()
        return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=10)

    writer = IntakeWriter(store)
    writer.start()
    results = asyncio.run(submit_then_stop(writer))
    assert all(isinstance(r, StoreUnavailable) for r in results), results
    with store.reading() as conn:
        assert conn.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0] == 0


class HeldSync:
    """An fsync that waits until released (a slow or hung disk) or fails, recording the file it was given."""

    def __init__(self, fails: bool = False) -> None:
        self.release = threading.Event()
        self.fails = fails
        self.files: list[int] = []

    def __call__(self, fd: int) -> None:
        self.files.append(os.fstat(fd).st_ino)
        self.release.wait(10)
        if self.fails:
            raise OSError(5, "Input/output error")


def test_an_answer_waits_for_the_fsync_of_the_wal_that_holds_its_commit(sqlite_store):
    store = sqlite_store
    sync = HeldSync()

    async def submit_while_the_disk_is_slow(writer: IntakeWriter) -> Ack:
        task = asyncio.create_task(writer.submit(incoming(1, "delivery-1")))
        await asyncio.to_thread(wait_until, lambda: count(store, "SELECT COUNT(*) FROM deliveries") == 1)
        await asyncio.sleep(0.2)
        assert not task.done()  # committed, but not acknowledged before it is on disk
        sync.release.set()
        return await asyncio.wait_for(task, timeout=10)

    writer = IntakeWriter(store, sync=sync)
    writer.start()
    try:
        ack = asyncio.run(submit_while_the_disk_is_slow(writer))
    finally:
        sync.release.set()
        writer.stop()
    assert ack.outcome == "queued"
    assert sync.files == [os.stat(f"{store.db.path}-wal").st_ino]


@pytest.mark.parametrize("fails", [True, False], ids=["fsync fails", "fsync hangs"])
def test_a_delivery_whose_fsync_fails_or_hangs_is_refused(sqlite_store, fails):
    store = sqlite_store
    sync = HeldSync(fails=fails)
    if fails:
        sync.release.set()
    writer = IntakeWriter(store, sync=sync, sync_timeout=0.3)
    writer.start()
    try:
        with pytest.raises(StoreUnavailable, match="flush to disk"):
            asyncio.run(asyncio.wait_for(writer.submit(incoming(1, "delivery-1")), timeout=10))
    finally:
        sync.release.set()
        writer.stop()
    # It was committed: GitHub's redelivery is recognised, not stored twice.
    assert count(store, "SELECT COUNT(*) FROM deliveries") == 1


def unstorable(delivery_id: str) -> Incoming:
    """A trigger the database cannot take (its issue number is 2**63), as a rule that missed the bound would make."""
    item = incoming(7, delivery_id)
    bad = item.decision.trigger.model_copy(update={"number": 2**63})
    return dataclasses.replace(item, decision=Triggered(bad))


def test_a_delivery_whose_meaning_fails_alone_is_stored_retried_then_quarantined(store):
    [ack] = apply_batch(store, [unstorable("bad")])  # alone: applied at once, and that fails
    assert ack.outcome == "stored"  # stored all the same, for the processor to try again
    failures = "SELECT failures, processed, error FROM deliveries WHERE id = 'bad'"
    refused = {
        "sqlite": "OverflowError: Python int too large to convert to SQLite INTEGER",
        "postgresql": "NumericValueOutOfRange: bigint out of range",
    }
    with store.reading() as conn:
        assert tuple(conn.execute(failures).fetchone()) == (1, 0, refused[store.db.dialect])
    apply_batch(store, [incoming(n, f"good-{n}") for n in (1, 2, 3)], defer=True)
    assert process_pending(store, 64) == 4  # the bad one fails again; the three after it are processed
    assert count(store, "SELECT COUNT(*) FROM jobs") == 3
    assert process_pending(store, 64) == 1
    assert process_pending(store, 64) == 0  # quarantined at its third failure: no longer pending
    with store.reading() as conn:
        failed, processed, error = conn.execute(failures).fetchone()
    assert (failed, processed) == (3, 1)
    assert error.startswith("ValidationError: 1 validation error for Trigger number")  # as stored, it no longer reads
    assert count(store, "SELECT COUNT(*) FROM jobs") == 3 and quarantined_deliveries(store) == 1


def test_a_store_failure_counts_against_no_delivery(store):
    apply_batch(store, [incoming(n, f"d-{n}") for n in (1, 2)], defer=True)
    with store.transaction() as conn:
        conn.execute("ALTER TABLE triggers RENAME TO triggers_gone")
    missing = {"sqlite": "no such table: triggers", "postgresql": 'relation "triggers" does not exist'}
    for _ in range(4):
        with pytest.raises(StoreUnavailable, match=missing[store.db.dialect]):
            process_pending(store, 64)
    assert count(store, "SELECT COUNT(*) FROM deliveries WHERE failures = 0 AND processed = 0") == 2
    with store.transaction() as conn:
        conn.execute("ALTER TABLE triggers_gone RENAME TO triggers")
    assert process_pending(store, 64) == 2 and count(store, "SELECT COUNT(*) FROM jobs") == 2


def test_an_answered_batch_is_not_kept_alive_until_its_timeout(store):
    """Under load, answers kept for the 10 s of the fsync timeout were what the collector kept walking."""

    async def answered_then_released(writer: IntakeWriter) -> int:
        acks = await asyncio.gather(*(writer.submit(incoming(n, f"delivery-{n}")) for n in range(1, 21)))
        refs = [weakref.ref(ack) for ack in acks]
        del acks
        await asyncio.sleep(0.1)
        return sum(ref() is not None for ref in refs)

    writer = IntakeWriter(store)
    writer.start()
    try:
        assert asyncio.run(answered_then_released(writer)) == 0
    finally:
        writer.stop()
