"""The embedded store: one SQLite file in WAL mode, one connection per thread, BEGIN IMMEDIATE transactions."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.errors import ConfigError, StoreUnavailable
from bot.queue.database import Conn, Database

SYNC_MODES = ("full", "normal")
UNVERSIONED_DELIVERY_COLUMNS = {
    "work": "TEXT",
    "processed": "INTEGER NOT NULL DEFAULT 1",
    "failures": "INTEGER NOT NULL DEFAULT 0",
    "error": "TEXT NOT NULL DEFAULT ''",
}
"""Added to `deliveries` before migrations were versioned: a database from then gets them (its rows were processed)."""


def parse_sqlite_url(url: str) -> tuple[Path, str]:
    """The file and synchronous mode of `sqlite:///relative.db`, `sqlite:////absolute.db[?synchronous=normal]`.

    `full` (default): each commit is fsynced before anything in it is acknowledged. `normal`: committed to
    the WAL (survives a crash of the process, not of the machine), several times faster on slow disks.
    """
    prefix = "sqlite:///"
    path, _, query = url.partition("?")
    options = dict(part.partition("=")[::2] for part in query.split("&") if part)
    sync = options.pop("synchronous", "full").lower()
    if not path.startswith(prefix) or len(path) == len(prefix) or options or sync not in SYNC_MODES:
        raise ConfigError(
            f"AIFIX_DATABASE_URL {url!r} is not supported: use sqlite:///ai-fix.db (relative) or "
            "sqlite:////var/lib/ai-fix.db, optionally with ?synchronous=normal, or postgresql://user@host:5432/db"
        )
    return Path(path[len(prefix) :]), sync


def connect(path: Path, synchronous: str, busy_timeout: float, *, create: bool) -> sqlite3.Connection:
    """A connection in WAL mode (autocommit: transactions are explicit); StoreUnavailable if it cannot be opened.

    Unless `create`, the file must exist: a store whose file was moved away must not leave an empty one behind.
    """
    target = str(path) if create else f"{path.absolute().as_uri()}?mode=rw"
    try:
        conn = sqlite3.connect(
            target, timeout=busy_timeout, isolation_level=None, check_same_thread=False, uri=not create
        )
        _wal(conn, busy_timeout)
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        # After a checkpoint lets the WAL restart, truncate it back to this size.
        conn.execute("PRAGMA journal_size_limit=67108864")
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot open the job store {path}: {exc}; check AIFIX_DATABASE_URL") from exc
    conn.row_factory = sqlite3.Row
    return conn


def _wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """WAL mode. Switching a new file to it takes an exclusive lock that SQLite does not wait for (the busy
    timeout does not apply), so processes opening one file together retry within that timeout."""
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path` now; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class SqliteDatabase(Database):
    """Thread-safe access to one file: a connection per thread; BEGIN IMMEDIATE takes the write lock up front,
    so read-then-write cannot race, across threads and processes alike."""

    dialect = "sqlite"
    one_writer = True

    def __init__(self, path: Path, *, synchronous: str = "full", busy_timeout: float = 5.0) -> None:
        self.path = path
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.needs_wal_sync = synchronous == "full"
        self.wal_file = Path(f"{path}-wal")
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._identity: tuple[int, int] | None = None
        """(device, inode) of the database file when the first connection opened it."""
        self._pragmas: set[tuple[int, str]] = set()
        """(connection id, pragma) already set by `_once` (cleared with the connections on close)."""

    @classmethod
    def from_url(cls, url: str, *, busy_timeout: float = 5.0) -> SqliteDatabase:
        path, synchronous = parse_sqlite_url(url)
        return cls(path, synchronous=synchronous, busy_timeout=busy_timeout)

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self.check_file()
            conn = connect(self.path, self.synchronous, self.busy_timeout, create=self._identity is None)
            with self._lock:
                self._identity = self._identity or file_identity(self.path)
                self._all.append(conn)
            self._local.conn = conn
        return conn

    def check_file(self) -> None:
        """StoreUnavailable unless the path still names the file this store opened first (not moved or replaced).

        Connections opened before a move keep writing into the moved file; ones opened after would open
        whatever is at the path now: either way work would go where nobody reads it.
        """
        if self._identity is not None and file_identity(self.path) != self._identity:
            raise StoreUnavailable(
                f"the job store {self.path} is not the file this process opened (it was moved, deleted or "
                "replaced); restore it and restart the service"
            )

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        conn = self.connection()
        self.check_file()
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreUnavailable(f"job store is unavailable ({exc}); retry later") from exc
            raise

    @contextmanager
    def reading(self) -> Iterator[Conn]:
        try:
            yield self.connection()
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"job store does not answer: {exc}") from exc

    def run_script(self, conn: Conn, sql: str) -> None:
        statement = ""
        for line in sql.splitlines(keepends=True):
            statement += line
            if sqlite3.complete_statement(statement):
                conn.execute(statement)
                statement = ""

    def before_migrations(self, conn: Conn) -> None:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'deliveries'").fetchone() is None:
            return
        present = {row[1] for row in conn.execute("PRAGMA table_info(deliveries)")}
        for column, declaration in UNVERSIONED_DELIVERY_COLUMNS.items():
            if column not in present:
                conn.execute(f"ALTER TABLE deliveries ADD COLUMN {column} {declaration}")

    def prepare_writer(self) -> None:
        """The intake's committer connection never checkpoints by itself, and, where commits must be durable,
        leaves the fsync to the committer (`WalFile`)."""
        self.leave_checkpoints_to_intake()
        if self.synchronous == "full":
            self._once("synchronous=NORMAL")

    def leave_checkpoints_to_intake(self) -> None:
        """No automatic checkpoint on this thread's connection: the checkpoint thread copies the WAL when the intake
        is quiet. A commit that crosses SQLite's threshold copies the whole WAL before it returns: on the
        processing thread, which holds the intake's write lock, that stalled the answers mid-burst for 50-100 ms."""
        self._once("wal_autocheckpoint=0")

    def _once(self, pragma: str) -> None:
        """`PRAGMA pragma` on this thread's connection, unless already set there (these calls are on hot paths)."""
        conn = self.connection()
        if (id(conn), pragma) not in self._pragmas:
            conn.execute(f"PRAGMA {pragma}")
            self._pragmas.add((id(conn), pragma))

    def checkpoint(self) -> None:
        """Copy the WAL into the database without blocking writers (the intake writer never checkpoints itself)."""
        with self.reading() as conn:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._pragmas.clear()  # a new connection may reuse a closed one's id
        self._local = threading.local()
