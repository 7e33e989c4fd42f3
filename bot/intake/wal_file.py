"""The fsync that makes a commit durable where the commit itself did not wait for the disk (SQLite's WAL)."""

from __future__ import annotations

import os
from collections.abc import Callable

from bot.queue.database import Database


class WalFile:
    """SQLite's WAL, fsynced after commits written with synchronous=NORMAL: the same durability as
    synchronous=FULL, which does exactly this (an fsync of the WAL after the commit's frames are written). One
    `fdatasync` covers every frame (and a WAL header rewritten after a checkpoint) written before it."""

    def __init__(self, db: Database, sync: Callable[[int], None] = os.fdatasync) -> None:
        self.db = db
        self.sync = sync
        self._open: tuple[int, int] | None = None
        """The WAL's file descriptor and inode, reopened if SQLite ever replaces the file."""

    def flush(self) -> None:
        """Fsync the WAL (OSError if that fails)."""
        self.sync(self._fd())

    def close(self) -> None:
        if self._open is not None:
            os.close(self._open[0])
            self._open = None

    def _fd(self) -> int:
        path = self.db.wal_file
        assert path is not None  # only databases with a WAL of their own need this fsync
        inode = os.stat(path).st_ino
        if self._open is None or self._open[1] != inode:
            self.close()
            self._open = (os.open(path, os.O_RDONLY), inode)
        return self._open[0]
