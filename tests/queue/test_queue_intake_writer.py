"""The intake writer on a real SQLite file: deliveries gathered in one event-loop pass, and shutdown."""

import asyncio
import json
import time
from pathlib import Path

import pytest

from bot.errors import StoreUnavailable
from bot.intake.events import Event
from bot.intake.triggers import decide
from bot.queue.intake import Ack, Incoming, IntakeWriter
from bot.queue.store import Store
from tests.support.webhooks import labeled


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "q.db")
    store.init_schema()
    yield store
    store.close()


def incoming(number: int, delivery_id: str) -> Incoming:
    payload = labeled(number)
    event = Event("issues", delivery_id, payload)
    return Incoming(event, json.dumps(payload).encode(), decide(event, trigger_label="ai-fix", app_id=1), time.time())


def test_deliveries_submitted_together_are_each_stored_once(store):
    items = [incoming(n, f"delivery-{n}") for n in range(1, 21)]
    items.append(incoming(7, "delivery-7"))  # a redelivery arriving in the same pass as the original

    async def submit_all(writer: IntakeWriter) -> list[Ack]:
        return await asyncio.wait_for(asyncio.gather(*(writer.submit(item) for item in items)), timeout=10)

    writer = IntakeWriter(store)
    writer.start()
    try:
        acks = asyncio.run(submit_all(writer))
    finally:
        writer.stop()
    assert [a.outcome for a in acks] == ["queued"] * 20 + ["duplicate"]
    assert len({a.job_id for a in acks[:20]}) == 20
    with store.reading() as conn:
        assert conn.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0] == 20
        assert conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 20


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
