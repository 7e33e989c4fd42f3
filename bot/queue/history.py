"""A job's history: the events rows `GET /tasks/<id>` and the run viewer read, one per thing that happened to it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bot.queue.database import Conn, Database, values_sql


class History:
    """Appends to the `events` table, inside the caller's transaction or in one of its own."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self.db = db
        self.clock = clock

    def add(self, conn: Conn, job_id: int, event: str, data: dict[str, Any]) -> None:
        conn.execute(
            "INSERT INTO events (job_id, at, event, data) VALUES (?, ?, ?, ?)",
            (job_id, self.clock(), event, json.dumps(data, default=str)),
        )

    def add_many(self, conn: Conn, events: Sequence[tuple[int, str, dict[str, Any]]]) -> None:
        """`add` for each (job id, event, data), with one INSERT."""
        now = self.clock()
        rows = [(job_id, now, event, json.dumps(data, default=str)) for job_id, event, data in events]
        conn.execute(
            values_sql("events", ("job_id", "at", "event", "data"), len(rows)), [v for row in rows for v in row]
        )

    def record(self, job_id: int, event: str, data: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            self.add(conn, job_id, event, data)
