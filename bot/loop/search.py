"""`search_code`: matching lines as `path:line: text`, capped, never from secret files or git internals."""

from __future__ import annotations

import os
from pathlib import Path

from bot.contract.globs import glob_match
from bot.envdir import DEPENDENCY_DIRS
from bot.redact import is_secret_file

MAX_HITS = 40
MAX_LINE = 200
MAX_SEARCH_FILE = 4 << 20
"""Bytes of a file searched at most: a larger one (data, a dump a check wrote) is skipped and named."""
SKIP_DIRS = DEPENDENCY_DIRS | {".git", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache"}


def text_files(root: Path) -> list[str]:
    """Repository-relative paths of the files search and views may read, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if not is_secret_file(rel) and not os.path.islink(os.path.join(dirpath, name)):
                out.append(rel)
    return sorted(out)


def search_code(root: Path, query: str, path_glob: str | None = None, *, max_hits: int = MAX_HITS) -> str:
    """Case-insensitive substring search over the workspace's text files."""
    needle = query.casefold()
    hits: list[str] = []
    more = 0
    too_big: list[str] = []
    for rel in text_files(root):
        if path_glob and not glob_match(rel, path_glob):
            continue
        try:
            if (root / rel).stat().st_size > MAX_SEARCH_FILE:
                too_big.append(rel)
                continue
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:4096]:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if needle in line.casefold():
                if len(hits) < max_hits:
                    hits.append(f"{rel}:{number}: {line.strip()[:MAX_LINE]}")
                else:
                    more += 1
    skipped = (
        f"\n(not searched, over {MAX_SEARCH_FILE >> 20} MiB: {', '.join(too_big[:10])}; view a part with view_range)"
        if too_big
        else ""
    )
    if not hits:
        where = f" in files matching {path_glob!r}" if path_glob else ""
        return f"no match for {query!r}{where}{skipped}"
    if more:
        hits.append(f"... {more} more matches not shown; narrow the query or use path_glob")
    return "\n".join(hits) + skipped
