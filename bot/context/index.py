"""The in-memory index: files, their terms, definitions and the reference graph (no I/O).

Structures are updated per file, so an edit during the loop costs the work of that one file;
a large batch (the first index of a repository) is linked in one pass instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.context.filetable import FileTable, StatKey
from bot.context.importgraph import ImportGraph
from bot.context.imports import ModuleKeys
from bot.context.namegraph import BACKWARD, Defined, NameGraph
from bot.context.postings import TermPostings
from bot.context.tags import FileTags

IMPORT_WEIGHT = 2.0

Added = tuple[str, str, StatKey, str | None, FileTags]
"""(path, blob, stat, grammar, tags)."""


class Index:
    def __init__(
        self,
        files: FileTable | None = None,
        terms: TermPostings | None = None,
        names: NameGraph | None = None,
        imports: ImportGraph | None = None,
    ) -> None:
        self.files = files or FileTable()
        self.terms = terms or TermPostings()
        self.names = names or NameGraph()
        self.imports = imports or ImportGraph()
        self.version = 0
        """Bumped on every change; derived caches key on it."""
        self._basenames: tuple[int, dict[str, list[int]]] | None = None
        self._stems: tuple[int, dict[str, list[int]]] | None = None

    # ---- reading -------------------------------------------------------------------------

    def bm25(self, query: dict[str, int]) -> dict[int, float]:
        return self.terms.bm25(query, self.files.live_count)

    def neighbours(self, fid: int) -> dict[int, float]:
        """Weighted links of a file in both directions: references and imports."""
        out = self.names.links(fid)
        for other, weight in self.imports.out.get(fid).items():
            out[other] = out.get(other, 0.0) + IMPORT_WEIGHT * weight
        for other, weight in self.imports.imported_by(self.version).get(fid, {}).items():
            out[other] = out.get(other, 0.0) + IMPORT_WEIGHT * BACKWARD * weight
        paths = self.files.paths
        return {other: weight for other, weight in out.items() if weight > 1e-6 and paths[other] is not None}

    def by_basename(self) -> dict[str, list[int]]:
        if self._basenames is None or self._basenames[0] != self.version:
            names: dict[str, list[int]] = {}
            for fid in self.files.live():
                names.setdefault(str(self.files.paths[fid]).rsplit("/", 1)[-1], []).append(fid)
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
        return self.imports.keys(self.files.paths, self.files.grammars)

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
        before = set(self.files.live())
        defined: Defined = {}
        touched = [self._remove(path, tags, defined, link) for path, tags in removed]
        # Only linking file by file reads the tags again: in bulk, each file's are let go once added (a first
        # index of a large repository would otherwise hold every file's references and terms twice).
        new = [(self._add(*entry, defined), entry[4] if link else None) for entry in added]
        if not touched and not new:
            return
        self.version += 1
        self.names.set_definers(defined, {fid for fid, _ in new}, link)
        if link:
            for fid, tags in new:
                assert tags is not None
                self.names.link(fid, tags)
        else:
            self.names.link_all()
        touched += [fid for fid, _ in new]
        after = set(self.files.live())
        if before != after:
            self.imports.reset()
            touched = list(after)
        files = self.files
        for fid in set(touched):
            path = files.paths[fid]
            if path is not None:
                self.imports.resolve(fid, path, files.grammars[fid], files.imports[fid], self.module_keys())

    def _add(self, path: str, blob: str, stat: StatKey, grammar: str | None, tags: FileTags, defined: Defined) -> int:
        fid = self.files.add(path, blob, stat, grammar, tags)
        self.terms.add(fid, path, tags)
        self.names.add(fid, tags, defined)
        return fid

    def _remove(self, path: str, tags: FileTags, defined: Defined, link: bool) -> int:
        fid = self.files.remove(path)
        self.names.remove(fid, tags, defined, link)
        self.terms.remove(fid, path, tags)
        self.imports.forget(fid)
        return fid

    # ---- persistence (plain values for marshal) ------------------------------------------

    def to_state(self) -> tuple[Any, ...]:
        parts = (self.files, self.terms, self.names, self.imports)
        return tuple(value for part in parts for value in part.to_state())

    @classmethod
    def from_state(cls, state: tuple[Any, ...]) -> Index:
        return cls(FileTable(state[:6]), TermPostings(state[6:9]), NameGraph(state[9:13]), ImportGraph(state[13:14]))
