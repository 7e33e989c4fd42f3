"""Files linked by imports: each file's import texts resolved to the files they name (no I/O)."""

from __future__ import annotations

from typing import Any

from bot.context.imports import ModuleKeys, module_keys, resolve
from bot.context.packed import PackedMap


class ImportGraph:
    def __init__(self, state: tuple[Any, ...] | None = None) -> None:
        """Empty, or as `to_state` left it."""
        (out,) = state or (None,)
        self.out: PackedMap[int] = PackedMap("f", out)
        """importer -> {imported file: 1}"""
        self._keys: ModuleKeys | None = None
        self._inverse: tuple[int, dict[int, dict[int, float]]] | None = None
        """(the index version it was made at, imported file -> {importer: weight})"""

    def keys(self, paths: list[str | None], grammars: list[str | None]) -> ModuleKeys:
        """What each module name can mean, made once for a set of files (see `reset`)."""
        if self._keys is None:
            self._keys = module_keys(paths, grammars)
        return self._keys

    def reset(self) -> None:
        """The set of files changed: a new module can change what any import means, so all are resolved again."""
        self._keys = None
        self.out = PackedMap("f")

    def resolve(self, fid: int, path: str, grammar: str | None, texts: tuple[str, ...], keys: ModuleKeys) -> None:
        """The file's edges, from its import `texts` as written."""
        row = self.out.edit(fid)
        row.clear()
        for text in texts:
            for target in resolve(text, path, grammar, keys):
                if target != fid:
                    row[target] = 1.0

    def forget(self, fid: int) -> None:
        self.out.edit(fid).clear()

    def imported_by(self, version: int) -> dict[int, dict[int, float]]:
        """Imported file -> its importers, made once per index `version`."""
        if self._inverse is None or self._inverse[0] != version:
            inverse: dict[int, dict[int, float]] = {}
            for fid in self.out.live_keys():
                for target, weight in self.out.get(fid).items():
                    inverse.setdefault(target, {})[fid] = weight
            self._inverse = (version, inverse)
        return self._inverse[1]

    def to_state(self) -> tuple[Any, ...]:
        return (self.out.flat(),)
