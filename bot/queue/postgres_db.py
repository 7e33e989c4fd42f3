"""The shared store: PostgreSQL through psycopg 3 and a connection pool, for many intakes and workers at once.

Writers of the same rows are kept apart by row locks (`FOR UPDATE`, `SKIP LOCKED` when taking jobs)
and by transaction-scoped advisory locks on what SQLite's single write lock used to cover (one issue's
jobs, a repository's running count). Idle workers sleep on `LISTEN aifix_jobs`; an enqueue NOTIFYs on commit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool
from psycopg import pq

from bot.errors import ConfigError, StoreUnavailable
from bot.queue.database import Conn, Cursor, Database, insert_sql, values_sql

log = logging.getLogger(__name__)

CHANNEL = "aifix_jobs"


class Row:
    """A row read by position or by column name, as sqlite3.Row reads (the store's SQL uses both)."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _rows(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(values, index)


class PgConn:
    """A pooled connection that takes the store's `?` placeholders."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        if params:
            return self.raw.execute(_placeholders(sql), params)
        return self.raw.execute(sql)


_translated: dict[str, str] = {}


def _placeholders(sql: str) -> str:
    found = _translated.get(sql)
    if found is None:
        found = _translated[sql] = sql.replace("%", "%%").replace("?", "%s")
    return found


def check_url(url: str) -> str:
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(
            f"AIFIX_DATABASE_URL is not a PostgreSQL URL psycopg can read ({exc}); use postgresql://user:password@host:5432/db"
        ) from exc
    return url


class PostgresDatabase(Database):
    dialect = "postgresql"
    for_update = " FOR UPDATE"
    skip_locked = " SKIP LOCKED"

    def __init__(self, url: str, *, pool_size: int = 10, timeout: float = 10.0) -> None:
        self.url = check_url(url)
        self.timeout = timeout
        where = psycopg.conninfo.conninfo_to_dict(url)
        self.where = f"{where.get('host', 'localhost')}:{where.get('port', 5432)}/{where.get('dbname', '')}"
        self.pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "row_factory": _rows},
            timeout=timeout,
            open=False,
            name="ai-fix",
        )
        self.pool.open(wait=False)
        self._announced = 0
        self._wake = threading.Condition()
        self._listener: threading.Thread | None = None
        self._closing = threading.Event()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self.pool.connection() as raw:
                yield raw
        except psycopg.Error as exc:
            raise StoreUnavailable(f"job store {self.where} is unavailable ({exc}); retry later") from exc

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        with self._connection() as raw:
            try:
                raw.execute("BEGIN")
                yield PgConn(raw)
                raw.execute("COMMIT")
            except BaseException:
                if raw.info.transaction_status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
                    raw.execute("ROLLBACK")
                raise

    @contextmanager
    def reading(self) -> Iterator[Conn]:
        with self._connection() as raw:
            yield PgConn(raw)

    def insert_new(
        self, conn: Conn, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
    ) -> set[object]:
        """One statement: exact even with other intakes inserting the same keys at once (ON CONFLICT waits for
        theirs)."""
        sql = f"{insert_sql(table, columns, len(rows))} RETURNING {columns[0]}"
        return {row[0] for row in conn.execute(sql, [value for row in rows for value in row]).fetchall()}

    def insert_ids(self, conn: Conn, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[int]:
        """One statement; the sequence numbers the rows of an INSERT … VALUES in their order, so sorted ids are
        theirs in order."""
        cursor = conn.execute(
            f"{values_sql(table, columns, len(rows))} RETURNING id", [value for row in rows for value in row]
        )
        return sorted(int(found[0]) for found in cursor.fetchall())

    def run_script(self, conn: Conn, sql: str) -> None:
        conn.execute(sql)  # no parameters: psycopg sends the statements as one simple query

    def lock(self, conn: Conn, *keys: str) -> None:
        """One round trip, the keys locked in the order given (callers keep one order, so no two deadlock)."""
        if keys:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest(?::text[]) AS k", (list(keys),)
            )

    def notify_work(self, conn: Conn) -> None:
        conn.execute(f"NOTIFY {CHANNEL}")

    def work_token(self) -> int:
        self._listen()
        with self._wake:
            return self._announced

    def wait_for_work(self, token: int, timeout: float, stop: threading.Event) -> None:
        self._listen()
        deadline = time.monotonic() + timeout
        with self._wake:
            while self._announced == token and not stop.is_set() and (left := deadline - time.monotonic()) > 0:
                self._wake.wait(min(left, 0.1))

    def _listen(self) -> None:
        if self._listener is None:
            with self._wake:
                if self._listener is None:
                    self._listener = threading.Thread(target=self._notifications, name="ai-fix-listen", daemon=True)
                    self._listener.start()

    def _notifications(self) -> None:
        """One connection LISTENs for the process; it reconnects after a failure (workers poll meanwhile)."""
        while not self._closing.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not self._closing.is_set():
                        for _ in conn.notifies(timeout=0.5):
                            with self._wake:
                                self._announced += 1
                                self._wake.notify_all()
            except psycopg.Error as exc:
                log.warning("cannot listen for new jobs on %s (workers poll meanwhile): %s", self.where, exc)
                self._closing.wait(1.0)

    def close(self) -> None:
        self._closing.set()
        if self._listener is not None:
            self._listener.join(timeout=2)
        self.pool.close()
