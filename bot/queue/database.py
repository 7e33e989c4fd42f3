"""The job store's database: its URL (AIFIX_DATABASE_URL), its tables (`schema.sql`) and their upgrades."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

from bot.errors import ConfigError

DELIVERY_COLUMNS = {"work": "TEXT", "processed": "INTEGER NOT NULL DEFAULT 1"}
"""Added to `deliveries` since its first version: a database from before gets them (its rows were processed when stored)."""
PENDING_INDEX = "CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (received_at) WHERE processed = 0"


def migrate(conn: sqlite3.Connection) -> None:
    """Create the tables, and bring a database made by an earlier version up to date."""
    conn.executescript(resources.files("bot.queue").joinpath("schema.sql").read_text())
    present = {row[1] for row in conn.execute("PRAGMA table_info(deliveries)")}
    for column, declaration in DELIVERY_COLUMNS.items():
        if column not in present:
            conn.execute(f"ALTER TABLE deliveries ADD COLUMN {column} {declaration}")
    conn.execute(PENDING_INDEX)


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
