"""Resolving import statements to files of the repository by path suffix (pure)."""

from __future__ import annotations

import posixpath
from collections import defaultdict

# File names that stand for their directory as a module.
_PACKAGE_FILES = {"__init__", "index", "mod", "lib", "main"}
MAX_CANDIDATES = 3
"""An import that could mean more files than this is too vague to draw an edge."""

ModuleKeys = dict[tuple[str, ...], list[int]]


def module_path(path: str, grammar: str | None) -> tuple[str, ...]:
    """The segments that name a file as a module: `a/b/c.py` -> (a, b, c); Go names the directory."""
    directory, _, name = path.rpartition("/")
    stem = name.rsplit(".", 1)[0]
    dirs = tuple(directory.split("/")) if directory else ()
    if grammar == "go" or stem in _PACKAGE_FILES:
        return dirs
    return (*dirs, stem)


def module_keys(paths: list[str | None], grammars: list[str | None]) -> ModuleKeys:
    """Every trailing run of each file's module segments -> the files it can mean."""
    keys: ModuleKeys = defaultdict(list)
    for fid, path in enumerate(paths):
        if path is None:
            continue
        segments = module_path(path, grammars[fid])
        for start in range(len(segments)):
            keys[segments[start:]].append(fid)
    return dict(keys)


def _segments(text: str, importer: str, grammar: str | None) -> tuple[tuple[str, ...], bool]:
    """(segments, relative) for an import as written; relative segments start at the repo root."""
    here = importer.rpartition("/")[0]
    if grammar == "python" and text.startswith("."):
        rest = text.lstrip(".")
        base = here
        for _ in range(len(text) - len(rest) - 1):
            base = base.rpartition("/")[0]
        parts = [p for p in (base.split("/") if base else []) + rest.split(".") if p]
        return tuple(parts), True
    if grammar in ("javascript", "typescript", "tsx") and text.startswith("."):
        joined = posixpath.normpath(posixpath.join(here, text))
        return tuple(p for p in joined.split("/") if p and p != "."), True
    if grammar == "rust":
        text = text.split("{", 1)[0].replace(" ", "")
        parts = [p for p in text.split("::") if p and p not in ("crate", "self", "super", "*")]
        return tuple(parts), False
    if grammar in ("go", "javascript", "typescript", "tsx"):
        return tuple(p for p in text.split("/") if p and p != "@"), False
    return tuple(p for p in text.split(".") if p and p != "*"), False


def resolve(text: str, importer: str, grammar: str | None, keys: ModuleKeys) -> list[int]:
    """The files an import most specifically names, or none when it is outside the repository."""
    segments, relative = _segments(text, importer, grammar)
    if grammar == "go":
        # A Go import starts with the module's path (`example.com/app`), which is not a folder.
        candidates = [segments[start:] for start in range(len(segments))]
    else:
        # Trailing segments may name symbols inside the module (`from a.b import c`, `a::b::Item`).
        candidates = [segments[:end] for end in range(len(segments), 0, -1)]
    for key in candidates:
        found = keys.get(key)
        if not found:
            continue
        if relative and len(key) < len(segments) - 1:
            return []
        if len(found) <= MAX_CANDIDATES and (len(key) > 1 or len(found) == 1):
            return found
        return []
    return []
