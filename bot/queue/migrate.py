"""Versioned schema migrations: numbered SQL files per database, and a table recording which were applied.

`migrations/<dialect>/NNNN_name.sql` are applied in order, each once, in one transaction that holds the
store's migration lock (SQLite's write lock; an advisory lock on PostgreSQL), so intakes and workers
starting together apply them once. Plain numbered files rather than alembic: the schema is six tables
written in SQL both databases read, the store needs no ORM, and a deployment can read (and a DBA
review) exactly what `ai-fix migrate` will run.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from bot.queue.database import Conn, Database

TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations(dialect: str) -> list[Migration]:
    """This database's migrations, in version order."""
    folder = resources.files("bot.queue").joinpath("migrations", dialect)
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append(Migration(int(number), name, entry.read_text()))
    return sorted(found, key=lambda m: m.version)


def applied(conn: Conn) -> set[int]:
    return {int(row[0]) for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(db: Database, now: float) -> list[Migration]:
    """Apply the migrations this database lacks; returns those applied (none when it is up to date)."""
    with db.transaction() as conn:
        db.lock(conn, "ai-fix migrations")
        db.before_migrations(conn)
        conn.execute(TABLE)
        done = applied(conn)
        pending = [m for m in migrations(db.dialect) if m.version not in done]
        for migration in pending:
            db.run_script(conn, migration.sql)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, now),
            )
    return pending


SCHEMA_TABLE_EXISTS = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
    "postgresql": "SELECT 1 WHERE to_regclass('schema_migrations') IS NOT NULL",
}


def pending(db: Database) -> list[Migration]:
    """The migrations this database lacks, read without changing it (all of them on an empty database)."""
    with db.reading() as conn:
        done = applied(conn) if conn.execute(SCHEMA_TABLE_EXISTS[db.dialect]).fetchone() else set()
    return [m for m in migrations(db.dialect) if m.version not in done]


def unknown_versions(db: Database) -> list[int]:
    """Versions recorded in the database that this ai-fix does not know: a newer ai-fix migrated it."""
    known = {m.version for m in migrations(db.dialect)}
    with db.reading() as conn:
        return sorted(applied(conn) - known)
