"""What the store needs of a database, whichever it is: connections, transactions, locks, wake-ups.

`bot.queue.sqlite_db` (one file, the embedded default) and `bot.queue.postgres_db` (a server shared by
many intakes and workers) implement it; `bot.queue.store` holds the SQL, written once for both: `?`
placeholders, ON CONFLICT, RETURNING, savepoints.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import psycopg

from bot.errors import StoreUnavailable


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection inside a transaction; rows read both by position and by column name."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...


class Database(ABC):
    """One database the store's SQL runs on; every database error leaves it as StoreUnavailable."""

    dialect: str
    """`sqlite` or `postgresql`: which folder of `migrations/` applies."""
    for_update = ""
    """Appended to a SELECT whose rows the transaction updates next: locks them where other writers run at once."""
    skip_locked = ""
    """Appended to a SELECT of rows to take: rows another transaction is taking are passed over, not waited for."""
    needs_wal_sync = False
    """Commits reach the disk only once the intake writer fsyncs the WAL itself (SQLite, synchronous=full)."""
    one_writer = False
    """One transaction writes at a time, whoever's it is (SQLite's file lock): a process's own writers take
    turns on a lock of their own rather than in SQLite's busy handler, which sleeps."""
    wal_file: Path | None = None

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Conn]:
        """BEGIN … COMMIT (rolled back on any error)."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[Conn]:
        """A connection for reads outside a transaction."""

    @abstractmethod
    def run_script(self, conn: Conn, sql: str) -> None:
        """Run the statements of a migration inside the caller's transaction."""

    @abstractmethod
    def close(self) -> None: ...

    def lock(self, conn: Conn, *keys: str) -> None:  # noqa: B027 - a hook: what one database needs, the other does without
        """Serialise transactions that name the same keys, until this one ends (SQLite: all writers are already)."""

    def notify_work(self, conn: Conn) -> None:  # noqa: B027 - a hook: what one database needs, the other does without
        """Tell idle workers, once this transaction commits, that a job can be claimed."""

    def work_token(self) -> int:
        """Taken before looking for work: `wait_for_work` returns at once if work was announced since."""
        return 0

    def wait_for_work(self, token: int, timeout: float, stop: threading.Event) -> None:
        """Sleep up to `timeout` s, less when work is announced or `stop` is set."""
        stop.wait(timeout)

    def before_migrations(self, conn: Conn) -> None:  # noqa: B027 - a hook: what one database needs, the other does without
        """Bring a database made before migrations were versioned to their first version."""

    def insert_new(
        self, conn: Conn, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
    ) -> set[object]:
        """Insert, with one INSERT in the caller's transaction, the rows whose key (their first column) is not in
        `table` yet; returns the keys inserted. `rows` must not repeat a key.

        Here the keys present are read first (exact where the transaction holds the write lock from its start, as
        on SQLite), rather than RETURNed: SQLite hands RETURNING rows back one step at a time, and each step
        gives the interpreter lock away and waits for the busy event loop to give it back (up to 5 ms each).
        """
        keys = [row[0] for row in rows]
        sql = f"SELECT {columns[0]} FROM {table} WHERE {columns[0]} IN ({marks(keys)})"
        present = {row[0] for row in conn.execute(sql, keys).fetchall()}
        new = [row for row in rows if row[0] not in present]
        if new:
            conn.execute(insert_sql(table, columns, len(new)), [value for row in new for value in row])
        return {row[0] for row in new}

    def insert_ids(self, conn: Conn, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[int]:
        """Insert the rows with one INSERT in the caller's transaction; their new ids (`id`), in order.

        SQLite numbers a statement's new rows one after another from the table's largest rowid (no other writer
        runs inside the transaction), so the last one tells them all: one step, not one per row (see `insert_new`).
        """
        conn.execute(values_sql(table, columns, len(rows)), [value for row in rows for value in row])
        last = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
        return list(range(last - len(rows) + 1, last + 1))

    def prepare_writer(self) -> None:  # noqa: B027 - a hook: what one database needs, the other does without
        """Configure the intake writer's connection on this thread."""

    def leave_checkpoints_to_intake(self) -> None:  # noqa: B027 - a hook: what one database needs, the other does without
        """This thread's connection leaves copying the write-ahead log to the intake's checkpoint thread (SQLite)."""

    def checkpoint(self) -> None:  # noqa: B027 - a hook: what one database needs, the other does without
        """Copy the write-ahead log into the database when the intake is quiet (SQLite)."""


def is_outage(exc: BaseException) -> bool:
    """Whether an error inside a transaction is the database's (disk, locks, connection, schema) rather than the data's.

    The data's (a value the driver cannot bind, a constraint, a stored record that no longer reads) count
    against the one delivery that carried it; an outage fails the whole transaction, to be retried.
    """
    if isinstance(exc, psycopg.Error):  # on PostgreSQL only bad values and broken constraints are the data's
        return not isinstance(exc, psycopg.DataError | psycopg.IntegrityError)
    return isinstance(exc, StoreUnavailable | sqlite3.OperationalError)


def marks(values: Sequence[object]) -> str:
    """The placeholders of an IN (…) list of `values`."""
    return ",".join("?" for _ in values)


def values_sql(table: str, columns: Sequence[str], count: int) -> str:
    """INSERT of `count` rows of `columns`."""
    row = f"({', '.join('?' for _ in columns)})"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * count)}"


def insert_sql(table: str, columns: Sequence[str], count: int) -> str:
    """INSERT of `count` rows of `columns`, a row whose key (the first column) is taken skipped."""
    return f"{values_sql(table, columns, count)} ON CONFLICT ({columns[0]}) DO NOTHING"


def is_database_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error | psycopg.Error)


@contextmanager
def savepoint(conn: Conn, name: str = "item") -> Iterator[None]:
    """A nested transaction: an error inside rolls back only what was done inside (SQL both databases share)."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        conn.execute(f"RELEASE SAVEPOINT {name}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {name}")
