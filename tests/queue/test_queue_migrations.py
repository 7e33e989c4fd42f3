"""Versioned migrations on both databases: `ai-fix migrate`, databases from before versioning, racing starts."""

import sqlite3
import threading

import pytest

from bot.commands.main import main
from bot.errors import ConfigError
from bot.queue.migrate import migrations
from bot.queue.store import Store

TABLES = {"deliveries", "jobs", "triggers", "events", "installations", "health", "store_identity", "schema_migrations"}


def tables(store: Store) -> set[str]:
    sql = {
        "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
        "postgresql": "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
    }[store.db.dialect]
    with store.reading() as conn:
        return {row[0] for row in conn.execute(sql)}


def versions(store: Store) -> list[int]:
    with store.reading() as conn:
        return [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]


def test_ai_fix_migrate_applies_every_migration_once(database_url, monkeypatch, capsys):
    monkeypatch.setenv("AIFIX_DATABASE_URL", database_url)
    assert main(["migrate"]) == 0
    names = [f"{m.version:04d}_{m.name}" for m in migrations("sqlite")]
    assert capsys.readouterr().out.startswith(f"applied {', '.join(names)} to ")
    assert main(["migrate"]) == 0
    assert capsys.readouterr().out.endswith(" is up to date\n")
    store = Store.from_url(database_url)
    assert tables(store) == TABLES
    assert versions(store) == [m.version for m in migrations(store.db.dialect)]
    store.close()


def test_both_databases_have_the_same_migrations():
    assert [(m.version, m.name) for m in migrations("sqlite")] == [
        (m.version, m.name) for m in migrations("postgresql")
    ]


def test_processes_starting_together_migrate_once(database_url):
    stores = [Store.from_url(database_url) for _ in range(4)]
    applied: list[list[str]] = []
    barrier = threading.Barrier(len(stores))

    def start(store: Store) -> None:
        barrier.wait()
        applied.append(store.init_schema())

    threads = [threading.Thread(target=start, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(len(a) for a in applied) == [0, 0, 0, len(migrations("sqlite"))]
    assert versions(stores[0]) == [m.version for m in migrations(stores[0].db.dialect)]
    for store in stores:
        store.close()


def test_a_database_a_newer_ai_fix_migrated_is_refused(database_url):
    store = Store.from_url(database_url)
    store.init_schema()
    with store.transaction() as conn:
        conn.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)")
    with pytest.raises(ConfigError, match=r"schema versions \[999\] this ai-fix does not know"):
        store.init_schema()
    store.close()


def test_a_sqlite_file_from_before_versioned_migrations_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the first release's deliveries table, with one delivery in it
        conn.execute(
            "CREATE TABLE deliveries (id TEXT PRIMARY KEY, event TEXT NOT NULL, action TEXT NOT NULL DEFAULT '', "
            "outcome TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', payload TEXT NOT NULL, received_at REAL NOT NULL)"
        )
        conn.execute("INSERT INTO deliveries VALUES ('old-1', 'issues', 'labeled', 'trigger', '', '{}', 1.0)")
    store = Store.from_url(f"sqlite:///{path}")
    assert store.init_schema() == [f"{m.version:04d}_{m.name}" for m in migrations("sqlite")]
    with store.reading() as conn:
        row = conn.execute("SELECT id, processed, failures, error FROM deliveries").fetchone()
    assert tuple(row) == ("old-1", 1, 0, "")  # what was stored then was processed then
    assert tables(store) == TABLES
    store.close()


def test_postgresql_compresses_payloads_with_lz4(postgres_server):
    store = Store.from_url(postgres_server.new_database())
    store.init_schema()
    with store.reading() as conn:
        method = conn.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'deliveries'::regclass AND attname = 'payload'"
        ).fetchone()[0]
    store.close()
    assert method == "l"  # this server (Debian's) has lz4; one without it keeps pglz ('')
