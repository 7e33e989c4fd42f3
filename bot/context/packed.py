"""A mapping of key -> {int id: number} stored as three flat arrays until a value is needed.

The index holds hundreds of thousands of these small maps (term postings, referencers, graph
edges). Flat, a snapshot loads in a few milliseconds; a value is unpacked the first time it is
read or changed (kept in an overlay) and everything is flattened again when the snapshot is saved.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable, Iterator
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
Flat = tuple[list[Any], bytes, bytes, bytes]
"""(keys, offsets, ids, values): key i owns ids[offsets[i]:offsets[i+1]]."""


class PackedMap(Generic[K]):
    def __init__(self, typecode: str, flat: Flat | None = None) -> None:
        self._typecode = typecode
        """'I' for counts, 'f' for weights."""
        self._keys: list[K] = []
        self._offsets, self._ids, self._values = array("I", [0]), array("I"), array(typecode)
        if flat is not None:
            self._keys = flat[0]
            self._offsets, self._ids, self._values = array("I"), array("I"), array(typecode)
            self._offsets.frombytes(flat[1])
            self._ids.frombytes(flat[2])
            self._values.frombytes(flat[3])
        self._position = {key: i for i, key in enumerate(self._keys)}
        self._overlay: dict[K, dict[int, float]] = {}

    def get(self, key: K) -> dict[int, float]:
        """The live map for key: changes to it are kept. Empty when key is absent."""
        value = self._overlay.get(key)
        if value is None:
            i = self._position.get(key)
            if i is None:
                return {}
            start, end = self._offsets[i], self._offsets[i + 1]
            value = dict(zip(self._ids[start:end], self._values[start:end]))
            self._overlay[key] = value
        return value

    def edit(self, key: K) -> dict[int, float]:
        """Like get, but an absent key is created."""
        value = self._overlay.get(key)
        if value is None:
            value = self.get(key)
            self._overlay[key] = value
        return value

    def set_column(self, fid: int, items: Iterable[tuple[K, float]]) -> None:
        """`edit(key)[fid] = value` for each item, with one lookup per key (building an index does millions)."""
        overlay = self._overlay
        for key, value in items:
            row = overlay.get(key)
            if row is None:
                row = self.edit(key)
            row[fid] = value

    def live_keys(self) -> Iterator[K]:
        """Keys with a non-empty map."""
        yield from (k for k in self._keys if k not in self._overlay)
        yield from (k for k, v in self._overlay.items() if v)

    def flat(self) -> Flat:
        keys: list[K] = []
        offsets, ids, values = array("I", [0]), array("I"), array(self._typecode)
        for i, key in enumerate(self._keys):
            if key in self._overlay:
                continue
            keys.append(key)
            ids.extend(self._ids[self._offsets[i] : self._offsets[i + 1]])
            values.extend(self._values[self._offsets[i] : self._offsets[i + 1]])
            offsets.append(len(ids))
        for key, value in self._overlay.items():
            if value:
                keys.append(key)
                ids.extend(value.keys())
                values.extend(value.values())  # type: ignore[arg-type]  # ints for "I", floats for "f"
                offsets.append(len(ids))
        return keys, offsets.tobytes(), ids.tobytes(), values.tobytes()
