"""The index's files by id: path, blob, stat, grammar, definitions and import texts (no I/O)."""

from __future__ import annotations

import marshal
from typing import Any

from bot.context.tags import Definition, FileTags

StatKey = tuple[int, int]
"""(mtime_ns, size): while unchanged, the blob id is unchanged."""


class FileTable:
    def __init__(self, state: tuple[Any, ...] | None = None) -> None:
        """Empty, or as `to_state` left it."""
        paths, blobs, stats, grammars, definitions, imports = state or ([], [], [], [], [], [])
        self.paths: list[str | None] = paths
        """By file id; None where a file was deleted."""
        self.ids: dict[str, int] = {path: fid for fid, path in enumerate(paths) if path is not None}
        """Path -> id, kept after deletion so a file that comes back gets its old id."""
        self.live_count = len(self.ids)
        self.blobs: list[str] = blobs
        self.stats: list[StatKey] = stats
        self.grammars: list[str | None] = grammars
        self.definitions: list[bytes] = definitions
        """Marshalled definition tuples by file id, unpacked on demand."""
        self.imports: list[tuple[str, ...]] = imports
        """The import texts of each file, as written."""

    def live(self) -> list[int]:
        return [fid for fid, path in enumerate(self.paths) if path is not None]

    def file_id(self, path: str) -> int | None:
        fid = self.ids.get(path)
        return fid if fid is not None and self.paths[fid] is not None else None

    def file_definitions(self, fid: int) -> list[Definition]:
        return [Definition(*d) for d in marshal.loads(self.definitions[fid])]

    def add(self, path: str, blob: str, stat: StatKey, grammar: str | None, tags: FileTags) -> int:
        """Record a new version of `path` (its old id when it had one); its id."""
        fid = self.ids.get(path)
        if fid is None:
            fid = len(self.paths)
            self.paths.append(path)
            self.blobs.append(blob)
            self.stats.append(stat)
            self.grammars.append(grammar)
            self.definitions.append(b"")
            self.imports.append(())
            self.ids[path] = fid
        self.live_count += 1
        self.paths[fid], self.blobs[fid], self.stats[fid], self.grammars[fid] = path, blob, stat, grammar
        self.definitions[fid] = marshal.dumps(
            tuple((d.name, d.kind, d.start_line, d.end_line) for d in tags.definitions)
        )
        self.imports[fid] = tags.imports
        return fid

    def remove(self, path: str) -> int:
        """Mark `path` deleted (its id stays reserved for it); its id."""
        fid = self.ids[path]
        self.definitions[fid] = b""
        self.imports[fid] = ()
        self.paths[fid] = None
        self.live_count -= 1
        return fid

    def update_stat(self, fid: int, stat: StatKey) -> None:
        self.stats[fid] = stat

    def to_state(self) -> tuple[Any, ...]:
        return self.paths, self.blobs, self.stats, self.grammars, self.definitions, self.imports
