"""File-system and git access for the index: listing, blob ids, commit dates (the I/O edge)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", "target"}
"""Walked past when the folder is not a git repository (git itself honours .gitignore)."""
MAX_READ = 1 << 20
"""Bytes of one file read at most (the index skips files over its own, smaller limit before reading them)."""


def blob_id(data: bytes) -> str:
    """The id `git hash-object` gives these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class RepoFiles:
    """Lists and reads a working tree; uses git when the folder is a repository."""

    def __init__(self, root: Path, listing_state: tuple[list[str], dict[str, int]] | None = None) -> None:
        self.root = root
        self._prefix = f"{root}{os.sep}"
        self.is_git = (root / ".git").exists()
        self._dates: dict[tuple[str, str], str] = {}
        self._listing: list[str] | None = listing_state[0] if listing_state else None
        self._watched: dict[str, int] = listing_state[1] if listing_state else {}

    def _git(self, *args: str) -> str:
        done = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else ""

    def paths(self) -> list[str]:
        """Tracked and untracked-but-not-ignored files, relative, with forward slashes.

        Listing untracked files walks the whole tree (~100 ms on a large repository), so the last
        listing is reused while no directory holding a listed file and no ignore file has changed
        its mtime: adding, deleting or renaming a file changes its directory's mtime.
        """
        if self._listing is not None and all(self._mtime(p) == m for p, m in self._watched.items()):
            return self._listing
        listing = self._list_git() if self.is_git else self._walk()
        watched: set[str] = {""}
        for directory in {p.rpartition("/")[0] for p in listing}:
            while directory not in watched:
                watched.add(directory)
                directory = directory.rpartition("/")[0]
        watched.update(p for p in listing if p.rpartition("/")[2] == ".gitignore")
        if self.is_git:
            watched.add(".git/info/exclude")
        self._watched = {p: self._mtime(p) for p in watched}
        self._listing = listing
        return listing

    def listing_state(self) -> tuple[list[str], dict[str, int]] | None:
        """The last listing and the mtimes that vouch for it, for a later process to start from."""
        return None if self._listing is None else (self._listing, self._watched)

    def _mtime(self, path: str) -> int:
        try:
            return os.stat(self._prefix + path if path else self.root).st_mtime_ns
        except OSError:
            return -1

    def _list_git(self) -> list[str]:
        out = self._git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        return sorted({p for p in out.split("\0") if p})

    def _walk(self) -> list[str]:
        paths: list[str] = []
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            rel = os.path.relpath(directory, self.root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            paths.extend(prefix + name for name in files)
        return sorted(paths)

    def stat(self, path: str) -> tuple[int, int] | None:
        """(mtime_ns, size) of a regular file, or None when it is gone or not a regular file."""
        try:
            st = os.stat(self._prefix + path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else None

    def read(self, path: str) -> bytes:
        """The file's bytes, at most MAX_READ of them: a file that grew huge after it was indexed is read in part."""
        with open(self._prefix + path, "rb") as file:
            return file.read(MAX_READ)

    def last_commit_dates(self, paths: list[str]) -> dict[str, str]:
        """ISO date of the last commit touching each path; empty when never committed."""
        if not self.is_git:
            return {path: "" for path in paths}
        head = self._git("rev-parse", "HEAD").strip()
        for path in paths:
            if (head, path) not in self._dates:
                self._dates[head, path] = self._git("log", "-1", "--format=%cI", "--", path).strip()
        return {path: self._dates[head, path] for path in paths}
