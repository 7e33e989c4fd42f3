"""The durable store: deliveries, jobs, their triggers and history, installations; SQLite or PostgreSQL.

The SQL is written once for both databases (`bot.queue.database`): what differs (locking, wake-ups,
placeholders, the tables' types) is the database's. On SQLite every transaction holds the one write
lock; on PostgreSQL rows are locked where they are updated, jobs are taken with SKIP LOCKED, and an
issue's enqueueing is serialised by an advisory lock, so the promises hold with many processes at once.

`Store` is the database with the store's parts, each along one responsibility: `history` (a job's
events), `jobs` (reading jobs back), `work` (enqueueing and cancelling), `leases` (a worker's side),
`waiting` (jobs parked for a person's answer).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from bot.errors import ConfigError, StoreUnavailable
from bot.queue.database import Conn, Database, is_database_error
from bot.queue.enqueue import WorkQueue
from bot.queue.history import History
from bot.queue.leases import Leases
from bot.queue.lookup import JobLookup
from bot.queue.migrate import migrate, unknown_versions
from bot.queue.postgres_db import PostgresDatabase
from bot.queue.sqlite_db import SqliteDatabase
from bot.queue.waiting import WaitingJobs


def open_database(url: str, *, busy_timeout: float = 5.0, pool_size: int = 10) -> Database:
    """The database AIFIX_DATABASE_URL names: sqlite:///file.db or postgresql://user@host:port/db."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresDatabase(url, pool_size=pool_size)
    return SqliteDatabase.from_url(url, busy_timeout=busy_timeout)


class Store:
    """The job store: its database, its schema, and its parts (see the module's doc)."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock
        self.history = History(db, clock)
        self.jobs = JobLookup(db)
        self.waiting = WaitingJobs(db, self.history, clock)
        self.work = WorkQueue(db, self.history, self.waiting, clock)
        self.leases = Leases(db, self.history, self.waiting, self.jobs, clock)
        self._identity = ""

    @classmethod
    def from_url(cls, url: str, *, clock: Callable[[], float] = time.time, **options: Any) -> Store:
        return cls(open_database(url, **options), clock=clock)

    def transaction(self) -> AbstractContextManager[Conn]:
        """BEGIN … COMMIT; any database error inside becomes StoreUnavailable after a rollback."""
        return self.db.transaction()

    def reading(self) -> AbstractContextManager[Conn]:
        """A connection for reads; database errors become StoreUnavailable."""
        return self.db.reading()

    def init_schema(self) -> list[str]:
        """Apply the migrations this database lacks (names of those applied); refuse one a newer ai-fix migrated."""
        try:
            done = migrate(self.db, self.clock())
            newer = unknown_versions(self.db)
        except StoreUnavailable:
            raise
        except Exception as exc:
            if not is_database_error(exc):
                raise
            raise StoreUnavailable(f"cannot create or upgrade the job store's tables: {exc}") from exc
        if newer:
            raise ConfigError(
                f"the job store has schema versions {newer} this ai-fix does not know (a newer version migrated it); "
                "run that version, or restore a backup from before"
            )
        return [f"{m.version:04d}_{m.name}" for m in done]

    def identity(self) -> str:
        """This database's own random id, made with its schema (read once): signed run-viewer links name it."""
        if not self._identity:
            with self.db.reading() as conn:
                self._identity = str(conn.execute("SELECT value FROM store_identity WHERE id = 1").fetchone()[0])
        return self._identity

    def checkpoint(self) -> None:
        self.db.checkpoint()

    def close(self) -> None:
        self.db.close()
