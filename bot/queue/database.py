"""The job store's database: its URL (AIFIX_DATABASE_URL), its tables (`schema.sql`) and their upgrades."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from bot.errors import ConfigError, StoreUnavailable

DELIVERY_COLUMNS = {
    "work": "TEXT",
    "processed": "INTEGER NOT NULL DEFAULT 1",
    "failures": "INTEGER NOT NULL DEFAULT 0",
    "error": "TEXT NOT NULL DEFAULT ''",
}
"""Added to `deliveries` since its first version: a database from before gets them (its rows were processed when stored)."""
DELIVERY_INDEXES = (
    "CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (received_at) WHERE processed = 0",
    "CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (received_at) WHERE failures > 0",
)


def migrate(conn: sqlite3.Connection) -> None:
    """Create the tables, and bring a database made by an earlier version up to date."""
    conn.executescript(resources.files("bot.queue").joinpath("schema.sql").read_text())
    present = {row[1] for row in conn.execute("PRAGMA table_info(deliveries)")}
    for column, declaration in DELIVERY_COLUMNS.items():
        if column not in present:
            conn.execute(f"ALTER TABLE deliveries ADD COLUMN {column} {declaration}")
    for index in DELIVERY_INDEXES:
        conn.execute(index)


def connect(path: Path, synchronous: str, busy_timeout: float, *, create: bool) -> sqlite3.Connection:
    """A connection in WAL mode (autocommit: transactions are explicit); StoreUnavailable if it cannot be opened.

    Unless `create`, the file must exist: a store whose file was moved away must not leave an empty one behind.
    """
    target = str(path) if create else f"{path.absolute().as_uri()}?mode=rw"
    try:
        conn = sqlite3.connect(
            target, timeout=busy_timeout, isolation_level=None, check_same_thread=False, uri=not create
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        # After a checkpoint lets the WAL restart, truncate it back to this size.
        conn.execute("PRAGMA journal_size_limit=67108864")
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot open the job store {path}: {exc}; check AIFIX_DATABASE_URL") from exc
    conn.row_factory = sqlite3.Row
    return conn


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path` now; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def is_outage(exc: BaseException) -> bool:
    """Whether an error inside a transaction is the database's (disk, locks, schema) rather than the data's.

    The data's (a value the driver cannot bind, a constraint, a stored record that no longer reads) count
    against the one delivery that carried it; an outage fails the whole transaction, to be retried.
    """
    return isinstance(exc, StoreUnavailable | sqlite3.OperationalError)


@contextmanager
def savepoint(conn: sqlite3.Connection, name: str = "item") -> Iterator[None]:
    """A nested transaction: an error inside rolls back only what was done inside (SQL both databases share)."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        conn.execute(f"RELEASE SAVEPOINT {name}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {name}")


SYNC_MODES = ("full", "normal")


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
            "sqlite:////var/lib/ai-fix.db, optionally with ?synchronous=normal"
        )
    return Path(path[len(prefix) :]), sync
