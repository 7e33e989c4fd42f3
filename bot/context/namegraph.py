"""Files linked by names: a file that uses a name links to the files that define it (no I/O).

A file's edges for a name are those of the name's definers at the time, so removed files drop the
edges they had, names whose definers changed are relinked for the files that stay, and added files
link last; or the whole graph is linked in one pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from bot.context.packed import PackedMap
from bot.context.tags import FileTags

MAX_DEFINERS = 5
"""A name defined in more files than this (`get`, `save`) links nothing."""
MIN_NAME = 3
BACKWARD = 0.5
"""Being used by a file is weaker evidence than using it."""

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


class NameGraph:
    def __init__(self, state: tuple[Any, ...] | None = None) -> None:
        """Empty, or as `to_state` left it."""
        referencers, definers, ref_out, ref_in = state or (None, None, None, None)
        self.referencers: PackedMap[str] = PackedMap("I", referencers)
        """name -> {file: uses}"""
        self.definers: PackedMap[str] = PackedMap("I", definers)
        """name -> {file: 1}"""
        self.ref_out: PackedMap[int] = PackedMap("f", ref_out)
        self.ref_in: PackedMap[int] = PackedMap("f", ref_in)

    def links(self, fid: int) -> dict[int, float]:
        """A file's links by name in both directions (being used weighs BACKWARD)."""
        out: dict[int, float] = dict(self.ref_out.get(fid))
        for other, weight in self.ref_in.get(fid).items():
            out[other] = out.get(other, 0.0) + BACKWARD * weight
        return out

    def add(self, fid: int, tags: FileTags, defined: Defined) -> None:
        """Record what the file uses; what it defines joins `defined`, for set_definers."""
        self.referencers.set_column(fid, ((name, n) for name, n in tags.references.items() if len(name) >= MIN_NAME))
        for name in {d.name for d in tags.definitions if _linkable(d.name)}:
            defined.setdefault(name, []).append((fid, True))

    def remove(self, fid: int, tags: FileTags, defined: Defined, link: bool) -> None:
        """Forget the file added with `tags`, dropping its edges when `link`; what it defined joins `defined`."""
        for name in {d.name for d in tags.definitions if _linkable(d.name)}:
            defined.setdefault(name, []).append((fid, False))
        for name, count in tags.references.items():
            if not _linkable(name):
                continue
            if link:
                for target, weight in _name_edges(fid, count, self.definers.get(name)):
                    self._adjust(fid, target, -weight)
            self.referencers.edit(name).pop(fid, None)

    def set_definers(self, defined: Defined, added: set[int], link: bool) -> None:
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

    def link(self, fid: int, tags: FileTags) -> None:
        """Edges from an added file to the definers of the names it uses."""
        for name, count in tags.references.items():
            for target, weight in _name_edges(fid, count, self.definers.get(name)):
                self._adjust(fid, target, weight)

    def _adjust(self, source: int, target: int, delta: float) -> None:
        for edges, key, other in ((self.ref_out, source, target), (self.ref_in, target, source)):
            row = edges.edit(key)
            weight = row.get(other, 0.0) + delta
            if abs(weight) < 1e-5:
                row.pop(other, None)
            else:
                row[other] = weight

    def link_all(self) -> None:
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

    def to_state(self) -> tuple[Any, ...]:
        return tuple(m.flat() for m in (self.referencers, self.definers, self.ref_out, self.ref_in))
