"""The in-memory index: files, their terms, definitions and the reference graph (no I/O).

Structures are updated per file, so an edit during the loop costs the work of that one file;
a large batch (the first index of a repository) is linked in one pass instead.
"""

from __future__ import annotations

import marshal
import math
from collections.abc import Iterable
from typing import Any

from bot.context.bm25 import bm25_scores
from bot.context.imports import ModuleKeys, module_keys, resolve
from bot.context.packed import PackedMap
from bot.context.tags import Definition, FileTags
from bot.context.terms import path_terms

PATH_WEIGHT = 4
"""A word in a file's path is worth this many occurrences in its body."""
MAX_DEFINERS = 5
"""A name defined in more files than this (`get`, `save`) links nothing."""
MIN_NAME = 3
IMPORT_WEIGHT = 2.0
BACKWARD = 0.5
"""Being used by a file is weaker evidence than using it."""

StatKey = tuple[int, int]
"""(mtime_ns, size): while unchanged, the blob id is unchanged."""
Added = tuple[str, str, StatKey, str | None, FileTags]
"""(path, blob, stat, grammar, tags)."""
Defined = dict[str, list[tuple[int, bool]]]
"""name -> (file, defines now) changes, in the order they happened."""


def _linkable(name: str) -> bool:
    return len(name) >= MIN_NAME


def _name_edges(source: int, count: float, definers: Iterable[int]) -> list[tuple[int, float]]:
    targets = list(definers)
    if not targets or len(targets) > MAX_DEFINERS:
        return []
    weight = math.sqrt(count) / len(targets)
    return [(target, weight) for target in targets if target != source]


class Index:
    def __init__(self) -> None:
        self.paths: list[str | None] = []
        """By file id; None where a file was deleted."""
        self.ids: dict[str, int] = {}
        """Path -> id, kept after deletion so a file that comes back gets its old id."""
        self.live_count = 0
        self.blobs: list[str] = []
        self.stats: list[StatKey] = []
        self.grammars: list[str | None] = []
        self.definitions: list[bytes] = []
        """Marshalled definition tuples by file id, unpacked on demand."""
        self.imports: list[tuple[str, ...]] = []
        self.doc_len: list[int] = []
        self.total_len = 0
        self.postings: PackedMap[str] = PackedMap("I")
        """term -> {file: frequency}"""
        self.referencers: PackedMap[str] = PackedMap("I")
        """name -> {file: uses}"""
        self.definers: PackedMap[str] = PackedMap("I")
        """name -> {file: 1}"""
        self.ref_out: PackedMap[int] = PackedMap("f")
        self.ref_in: PackedMap[int] = PackedMap("f")
        self.import_out: PackedMap[int] = PackedMap("f")
        self.version = 0
        """Bumped on every change; derived caches key on it."""
        self._keys: ModuleKeys | None = None
        self._import_in: tuple[int, dict[int, dict[int, float]]] | None = None
        self._basenames: tuple[int, dict[str, list[int]]] | None = None
        self._stems: tuple[int, dict[str, list[int]]] | None = None

    # ---- reading -------------------------------------------------------------------------

    def live(self) -> list[int]:
        return [fid for fid, path in enumerate(self.paths) if path is not None]

    def file_id(self, path: str) -> int | None:
        fid = self.ids.get(path)
        return fid if fid is not None and self.paths[fid] is not None else None

    def file_definitions(self, fid: int) -> list[Definition]:
        return [Definition(*d) for d in marshal.loads(self.definitions[fid])]

    def bm25(self, query: dict[str, int]) -> dict[int, float]:
        return bm25_scores(query, self.postings.get, self.doc_len, self.live_count, self.total_len)

    def neighbours(self, fid: int) -> dict[int, float]:
        """Weighted links of a file in both directions: references and imports."""
        out: dict[int, float] = dict(self.ref_out.get(fid))
        for other, weight in self.ref_in.get(fid).items():
            out[other] = out.get(other, 0.0) + BACKWARD * weight
        for other, weight in self.import_out.get(fid).items():
            out[other] = out.get(other, 0.0) + IMPORT_WEIGHT * weight
        for other, weight in self._imported_by().get(fid, {}).items():
            out[other] = out.get(other, 0.0) + IMPORT_WEIGHT * BACKWARD * weight
        return {other: weight for other, weight in out.items() if weight > 1e-6 and self.paths[other] is not None}

    def by_basename(self) -> dict[str, list[int]]:
        if self._basenames is None or self._basenames[0] != self.version:
            names: dict[str, list[int]] = {}
            for fid in self.live():
                names.setdefault(str(self.paths[fid]).rsplit("/", 1)[-1], []).append(fid)
            self._basenames = (self.version, names)
        return self._basenames[1]

    def by_stem(self) -> dict[str, list[int]]:
        """File name without extension -> files (`deletion` -> django/db/models/deletion.py)."""
        if self._stems is None or self._stems[0] != self.version:
            stems: dict[str, list[int]] = {}
            for name, fids in self.by_basename().items():
                stems.setdefault(name.rsplit(".", 1)[0], []).extend(fids)
            self._stems = (self.version, stems)
        return self._stems[1]

    def module_keys(self) -> ModuleKeys:
        if self._keys is None:
            self._keys = module_keys(self.paths, self.grammars)
        return self._keys

    def _imported_by(self) -> dict[int, dict[int, float]]:
        if self._import_in is None or self._import_in[0] != self.version:
            inverse: dict[int, dict[int, float]] = {}
            for fid in self.import_out.live_keys():
                for target, weight in self.import_out.get(fid).items():
                    inverse.setdefault(target, {})[fid] = weight
            self._import_in = (self.version, inverse)
        return self._import_in[1]

    # ---- updating ------------------------------------------------------------------------

    def apply(self, removed: Iterable[tuple[str, FileTags]], added: Iterable[Added], bulk: bool = False) -> None:
        """Remove old versions (path, the tags it was added with), then add new ones.

        An edited file appears in both. Graph edges follow one rule: a file's edges for a name are
        those of the name's definers at the time. So removed files drop the edges they had, names
        whose definers changed are relinked for the files that stay, and added files link last.
        With `bulk`, the whole graph is rebuilt in one pass instead (cheaper for many files).
        Imports are re-resolved for every file when the set of files changed (a new module can
        change what any import means), else only for the edited ones.
        """
        link = not bulk
        before = set(self.live())
        defined: Defined = {}
        touched = [self._remove(path, tags, defined, link) for path, tags in removed]
        new = [(self._add(*entry, defined), entry[4]) for entry in added]
        if not touched and not new:
            return
        self.version += 1
        self._set_definers(defined, {fid for fid, _ in new}, link)
        if link:
            for fid, tags in new:
                for name, count in tags.references.items():
                    for target, weight in _name_edges(fid, count, self.definers.get(name)):
                        self._adjust(fid, target, weight)
        else:
            self._link_all()
        touched += [fid for fid, _ in new]
        after = set(self.live())
        if before != after:
            self._keys = None
            self.import_out = PackedMap("f")
            touched = list(after)
        for fid in set(touched):
            if self.paths[fid] is not None:
                self._resolve_imports(fid)

    def update_stat(self, fid: int, stat: StatKey) -> None:
        self.stats[fid] = stat

    def _add(self, path: str, blob: str, stat: StatKey, grammar: str | None, tags: FileTags, defined: Defined) -> int:
        fid = self.ids.get(path)
        if fid is None:
            fid = len(self.paths)
            self.paths.append(path)
            self.blobs.append(blob)
            self.stats.append(stat)
            self.grammars.append(grammar)
            self.definitions.append(b"")
            self.imports.append(())
            self.doc_len.append(0)
            self.ids[path] = fid
        self.live_count += 1
        self.paths[fid], self.blobs[fid], self.stats[fid], self.grammars[fid] = path, blob, stat, grammar
        self.definitions[fid] = marshal.dumps(
            tuple((d.name, d.kind, d.start_line, d.end_line) for d in tags.definitions)
        )
        self.imports[fid] = tags.imports
        terms = self._file_terms(path, tags)
        self.postings.set_column(fid, terms.items())
        self.doc_len[fid] = sum(terms.values())
        self.total_len += self.doc_len[fid]
        self.referencers.set_column(fid, ((name, n) for name, n in tags.references.items() if len(name) >= MIN_NAME))
        for name in {d.name for d in tags.definitions if _linkable(d.name)}:
            defined.setdefault(name, []).append((fid, True))
        return fid

    def _remove(self, path: str, tags: FileTags, defined: Defined, link: bool) -> int:
        fid = self.ids[path]
        for name in {d.name for d in tags.definitions if _linkable(d.name)}:
            defined.setdefault(name, []).append((fid, False))
        for name, count in tags.references.items():
            if not _linkable(name):
                continue
            if link:
                for target, weight in _name_edges(fid, count, self.definers.get(name)):
                    self._adjust(fid, target, -weight)
            self.referencers.edit(name).pop(fid, None)
        for term in self._file_terms(path, tags):
            self.postings.edit(term).pop(fid, None)
        self.total_len -= self.doc_len[fid]
        self.doc_len[fid] = 0
        self.definitions[fid] = b""
        self.imports[fid] = ()
        self.import_out.edit(fid).clear()
        self.paths[fid] = None
        self.live_count -= 1
        return fid

    def _file_terms(self, path: str, tags: FileTags) -> dict[str, int]:
        terms = dict(tags.terms)
        for term in path_terms(path):
            terms[term] = terms.get(term, 0) + PATH_WEIGHT
        return terms

    def _set_definers(self, defined: Defined, added: set[int], link: bool) -> None:
        """Apply definition changes in order; relink the files that stay where a definer set changed."""
        for name, changes in defined.items():
            definers = self.definers.edit(name)
            old = list(definers)
            for fid, defines in changes:
                if defines:
                    definers[fid] = 1
                else:
                    definers.pop(fid, None)
            if not link or set(old) == set(definers):
                continue
            for source, count in self.referencers.get(name).items():
                if source in added:
                    continue
                for target, weight in _name_edges(source, count, old):
                    self._adjust(source, target, -weight)
                for target, weight in _name_edges(source, count, definers):
                    self._adjust(source, target, weight)

    def _adjust(self, source: int, target: int, delta: float) -> None:
        for edges, key, other in ((self.ref_out, source, target), (self.ref_in, target, source)):
            row = edges.edit(key)
            weight = row.get(other, 0.0) + delta
            if abs(weight) < 1e-5:
                row.pop(other, None)
            else:
                row[other] = weight

    def _link_all(self) -> None:
        # The same edges as _name_edges, in one pass over all names (the hot loop of a first index).
        out: dict[int, dict[int, float]] = {}
        incoming: dict[int, dict[int, float]] = {}
        for name in list(self.definers.live_keys()):
            definers = list(self.definers.get(name))
            if len(definers) > MAX_DEFINERS:
                continue
            share = 1 / len(definers)
            for source, count in self.referencers.get(name).items():
                weight = math.sqrt(count) * share
                row = out.setdefault(source, {})
                for target in definers:
                    if target != source:
                        row[target] = row.get(target, 0.0) + weight
                        back = incoming.setdefault(target, {})
                        back[source] = back.get(source, 0.0) + weight
        self.ref_out, self.ref_in = PackedMap("f"), PackedMap("f")
        for edges, rows in ((self.ref_out, out), (self.ref_in, incoming)):
            for key, row in rows.items():
                edges.edit(key).update(row)

    def _resolve_imports(self, fid: int) -> None:
        keys = self.module_keys()
        path, grammar = self.paths[fid], self.grammars[fid]
        assert path is not None
        row = self.import_out.edit(fid)
        row.clear()
        for text in self.imports[fid]:
            for target in resolve(text, path, grammar, keys):
                if target != fid:
                    row[target] = 1.0

    # ---- persistence (plain values for marshal) ------------------------------------------

    def to_state(self) -> tuple[Any, ...]:
        return (
            self.paths,
            self.blobs,
            self.stats,
            self.grammars,
            self.definitions,
            self.imports,
            self.doc_len,
            self.total_len,
            *(m.flat() for m in self._maps()),
        )

    def _maps(self) -> tuple[PackedMap[Any], ...]:
        return (self.postings, self.referencers, self.definers, self.ref_out, self.ref_in, self.import_out)

    @classmethod
    def from_state(cls, state: tuple[Any, ...]) -> Index:
        index = cls()
        (
            index.paths,
            index.blobs,
            index.stats,
            index.grammars,
            index.definitions,
            index.imports,
            index.doc_len,
            index.total_len,
        ) = state[:8]
        index.postings, index.referencers, index.definers = (PackedMap("I", flat) for flat in state[8:11])
        index.ref_out, index.ref_in, index.import_out = (PackedMap("f", flat) for flat in state[11:14])
        index.ids = {path: fid for fid, path in enumerate(index.paths) if path is not None}
        index.live_count = len(index.ids)
        return index
