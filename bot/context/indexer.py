"""Bringing the index up to date with the working tree: what changed, what to parse, in parallel."""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from bot.context.extract import extract_tags
from bot.context.filetable import StatKey
from bot.context.index import Index
from bot.context.languages import grammar_for
from bot.context.repo import RepoFiles, blob_id
from bot.context.store import TagStore
from bot.context.tags import FileTags
from bot.redact import is_secret_file

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 512_000
MAX_AVERAGE_LINE = 250
"""Longer average lines mean minified or generated code: noise for search, costly to parse."""
PARALLEL_FROM = 200
"""Parsing fewer files than this is faster than starting worker processes."""
VENDORED = {"vendor", "vendors", "third_party", "third-party", "node_modules", "dist", "bower_components"}
"""Directories of copied-in code: another project's, so noise when searching this one."""
STORE_BATCH = 256
BULK_FROM = 100
"""From this many changed files on, relinking the whole graph is cheaper than patching it."""

Pending = tuple[str, str, StatKey, str, int]
"""A file to index: (path, blob, stat, grammar, size)."""


class Sources(Protocol):
    """(source, grammar) pairs to parse, counted beforehand: a list, or files read as the parser takes them."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[tuple[bytes, str]]: ...


ParseMany = Callable[[Sources], Iterator[FileTags]]


@dataclass
class SyncReport:
    parsed: int = 0
    """Files parsed now (their blob was in no cache)."""
    reused: int = 0
    """Changed or new files whose blob was already in the tag cache."""
    removed: int = 0
    unchanged: int = 0


@lru_cache(maxsize=1 << 16)
def indexable(path: str) -> str | None:
    """The grammar that indexes path, or None for files never indexed (secrets, unknown languages)."""
    grammar = grammar_for(path)
    if grammar is None or is_secret_file(path) or path.endswith((".min.js", ".bundle.js")):
        return None
    return None if VENDORED & set(path.split("/")[:-1]) else grammar


def _looks_generated(data: bytes) -> bool:
    return len(data) > MAX_FILE_BYTES or len(data) > MAX_AVERAGE_LINE * (data.count(b"\n") + 1)


def _parse(item: tuple[bytes, str]) -> tuple[Any, ...]:
    return extract_tags(*item).to_tuple()


def parse_many(items: Sources) -> Iterator[FileTags]:
    """Tags for each (source, grammar), in order; on several cores for a large batch."""
    workers = min(os.cpu_count() or 1, 8)
    # Forked workers start in milliseconds, but forking a process that runs threads (a server) can
    # deadlock, and spawned ones re-import the caller's main script: parse in-process there.
    forkable = os.name == "posix" and threading.active_count() == 1
    if len(items) < PARALLEL_FROM or workers < 2 or not forkable:
        yield from (extract_tags(*item) for item in items)
        return
    # Frozen, the objects a worker inherits are never scanned by its garbage collector, so their pages stay
    # shared with this process instead of being copied into every worker.
    with multiprocessing.get_context("fork").Pool(workers, initializer=gc.freeze) as pool:
        for data in pool.imap(_parse, items, chunksize=16):
            yield FileTags.from_tuple(data)


def sync(index: Index, files: RepoFiles, store: TagStore, parse: ParseMany = parse_many) -> tuple[Index, SyncReport]:
    """Re-index what changed since the index was last synced: the index (a new one if the old could
    not be updated) and what was done."""
    report = SyncReport()
    kept: set[str] = set()
    changed: list[tuple[str, int]] = []
    pending: list[Pending] = []
    for path in files.paths():
        grammar = indexable(path)
        stat = files.stat(path) if grammar else None
        if grammar is None or stat is None:
            continue
        fid = index.files.file_id(path)
        if fid is not None and index.files.stats[fid] == stat:
            kept.add(path)
            report.unchanged += 1
            continue
        if stat[1] > MAX_FILE_BYTES:  # generated or data: never read, so a huge file costs no memory
            continue
        try:
            data = files.read(path)
        except OSError:
            continue
        blob = blob_id(data)
        if fid is not None and index.files.blobs[fid] == blob:
            index.files.update_stat(fid, stat)
            kept.add(path)
            report.unchanged += 1
            continue
        if fid is not None:
            changed.append((path, fid))
        if not _looks_generated(data):
            kept.add(path)
            pending.append((path, blob, stat, grammar, len(data)))
    changed = [(path, fid) for path, fid in changed if path in kept]
    gone = [(path, fid) for fid, path in enumerate(index.files.paths) if path is not None and path not in kept]
    outgoing = [*changed, *gone]
    old = store.get_many(index.files.blobs[fid] for _, fid in outgoing)
    if any(index.files.blobs[fid] not in old for _, fid in outgoing):
        log.info("tag cache lacks files the index holds; rebuilding the index")
        return sync(Index(), files, store, parse)
    cached = store.get_many(blob for _, blob, *_ in pending)
    report.removed = len(gone)
    report.reused = sum(1 for _, blob, *_ in pending if blob in cached)
    report.parsed = len(pending) - report.reused
    index.apply(
        removed=[(path, old[index.files.blobs[fid]]) for path, fid in outgoing],
        added=_with_tags(pending, cached, store, _Sources(files, [e for e in pending if e[1] not in cached]), parse),
        bulk=len(pending) + len(gone) >= BULK_FROM,
    )
    return index, report


class _Sources:
    """(source, grammar) of the files to parse, each read only when the parser takes it. Forked workers keep
    the pages of whatever the indexing process holds when they start, even once it has let go of it: read
    ahead, Django's 17 MB of sources stayed resident for the whole parse. A file edited since it was
    listed is indexed as read here (its blob id with it); one deleted since is left out."""

    def __init__(self, files: RepoFiles, entries: list[Pending]) -> None:
        self._files = files
        # Largest first: a big file parsed last would leave the other workers idle at the end.
        self.entries = sorted(entries, key=lambda entry: -entry[4])
        self.blobs: dict[int, str | None] = {}
        """Entries whose file changed since it was listed: its blob now, None if it is gone."""

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[tuple[bytes, str]]:
        for i, (path, blob, _, grammar, _) in enumerate(self.entries):
            try:
                data = self._files.read(path)
            except OSError:
                self.blobs[i] = None
                yield b"", grammar
                continue
            now = blob_id(data)
            if now != blob:
                self.blobs[i] = now
            yield data, grammar


def _with_tags(
    pending: list[Pending],
    cached: dict[str, FileTags],
    store: TagStore,
    to_parse: _Sources,
    parse: ParseMany,
) -> Iterator[tuple[str, str, StatKey, str, FileTags]]:
    """Yield entries with their tags as parsing goes, saving new tags in batches (progress survives a crash)."""
    if to_parse:
        log.info("parsing %d files", len(to_parse))
    for path, blob, stat, grammar, _ in pending:
        if blob in cached:
            yield path, blob, stat, grammar, cached[blob]
    batch: list[tuple[str, FileTags]] = []
    for i, tags in enumerate(parse(to_parse)):
        path, blob, stat, grammar, _ = to_parse.entries[i]
        now = to_parse.blobs.get(i, blob)
        if now is None:
            continue
        batch.append((now, tags))
        if len(batch) >= STORE_BATCH:
            store.put_many(batch)
            batch.clear()
        yield path, now, stat, grammar, tags
    store.put_many(batch)
