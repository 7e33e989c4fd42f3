"""On-disk caches: parsed tags by blob id (SQLite) and the index snapshot (one marshal file)."""

from __future__ import annotations

import hashlib
import marshal
import os
import sqlite3
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from bot.context.index import Index
from bot.context.tags import FileTags
from bot.errors import AiFixError

FORMAT = 4
"""Bump when the shape of cached data, how a reader finds tags (`python_tags`) or how terms are made
changes; query edits invalidate the cache by themselves."""


def cache_version() -> str:
    """Changes whenever a tag query or the cache format changes, so stale tags are never reused."""
    digest = hashlib.sha1(str(FORMAT).encode())
    queries = resources.files("bot.context").joinpath("queries")
    for entry in sorted(queries.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".scm"):
            digest.update(entry.name.encode() + entry.read_bytes())
    digest.update(resources.files("bot.context").joinpath("stopwords.txt").read_bytes())
    return digest.hexdigest()[:16]


BUSY_TIMEOUT_S = 120.0
"""How long a writer waits for another process's write to end; jobs on one repository share a store."""


class TagStore:
    """Tags of every blob ever parsed, so an unchanged file is never parsed twice.

    Several processes may use one store at once: WAL lets readers run beside the one writer, and a
    writer waits for the other's transaction to end (rows are content-addressed, so whoever writes a
    blob last writes the same tags).
    """

    def __init__(self, path: Path, version: str) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._open(path)
        except sqlite3.OperationalError as exc:
            # Locked or unreadable: another process's cache, not ours to delete.
            raise AiFixError(f"cannot open the tag cache {path} ({exc}); pass another cache folder") from exc
        except sqlite3.DatabaseError:
            # A damaged cache is only lost work: start it again.
            for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                stale.unlink(missing_ok=True)
            self._db = self._open(path)
        except OSError as exc:
            raise AiFixError(
                f"cannot use the context cache at {path.parent} ({exc.strerror}); pass a writable cache folder"
            ) from exc
        self._version = version

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS tags (blob TEXT PRIMARY KEY, version TEXT, data BLOB)")
        return db

    def get_many(self, blobs: Iterable[str]) -> dict[str, FileTags]:
        wanted = list(dict.fromkeys(blobs))
        found: dict[str, FileTags] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._db.execute(
                f"SELECT blob, data FROM tags WHERE version = ? AND blob IN ({','.join('?' * len(chunk))})",
                [self._version, *chunk],
            )
            found.update((blob, FileTags.from_tuple(marshal.loads(data))) for blob, data in rows)
        return found

    def put_many(self, items: Iterable[tuple[str, FileTags]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO tags VALUES (?, ?, ?)",
                ((blob, self._version, marshal.dumps(tags.to_tuple())) for blob, tags in items),
            )

    def close(self) -> None:
        self._db.close()


Listing = tuple[list[str], dict[str, int]]


def load_snapshot(path: Path, version: str) -> tuple[Index, Listing | None] | None:
    """The saved index and file listing, or None when there is none or another version wrote it."""
    try:
        saved_version, state, listing = marshal.loads(path.read_bytes())
        return (Index.from_state(state), listing) if saved_version == version else None
    except (OSError, EOFError, ValueError, TypeError):
        return None


def save_snapshot(path: Path, version: str, index: Index, listing: Listing | None) -> None:
    """Write atomically: a crash mid-write leaves the previous snapshot intact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(marshal.dumps((version, index.to_state(), listing)))
    os.replace(tmp, path)
