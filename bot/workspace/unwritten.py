"""Before a checkpoint, only what the model wrote through the patch gate stays in the tree.

The project's checks run in the same tree and may create or change files (a test writing `.gitmodules`,
`conftest.py` or a report). Whatever differs from the last checkpoint without the model having written it
is put back as it was (a new file is removed), and a file the model wrote that the checks changed afterwards
gets the model's content back. Ignored files are left alone: git never commits them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from bot.workspace.nofollow import read_nofollow, write_nofollow

SETUP_OUTPUTS = "setup-outputs.gitignore"
"""In the job directory, beside the tree: what setup wrote that the repository's own ignore rules do not cover."""

MAX_ROUNDS = 3
"""Putting back a `.gitignore` can bring hidden files into view: the tree is looked at again, this often."""


class GitTree(Protocol):
    """What this needs of `bot.workspace.jobgit.JobGit`."""

    @property
    def path(self) -> Path: ...

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]: ...


def changed_paths(ws: GitTree) -> list[str]:
    """Paths that differ from HEAD in the tree, untracked ones included (each file, not its folder)."""
    done = ws.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=none")
    return [entry[3:].decode("utf-8", "surrogateescape") for entry in done.stdout.split(b"\0") if len(entry) > 3]


def untracked(ws: GitTree) -> set[str]:
    """Untracked paths git does not ignore; a new folder is one `dir/` entry."""
    done = ws.git("status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames")
    return {e[3:].decode("utf-8", "surrogateescape") for e in done.stdout.split(b"\0") if e.startswith(b"?? ")}


def exclude_pattern(rel: str) -> str | None:
    """An anchored gitignore pattern matching exactly `rel` (a `dir/` matches the folder); None if none can."""
    if "\n" in rel:
        return None
    body = re.sub(r"([\\*?\[])", r"\\\1", rel)
    stripped = body.rstrip(" ")
    return "/" + stripped + "\\ " * (len(body) - len(stripped))


def add_excludes(file: Path, paths: Iterable[str]) -> list[str]:
    """Append the paths (as exact patterns) to an excludes file; the paths that could be written."""
    patterns = {rel: exclude_pattern(rel) for rel in sorted(paths)}
    kept = [rel for rel, pattern in patterns.items() if pattern is not None]
    with file.open("a", encoding="utf-8", errors="surrogateescape") as out:
        out.writelines(f"{patterns[rel]}\n" for rel in kept)
    return kept


def _on_disk(root: Path, rel: str) -> bytes | None:
    try:
        return read_nofollow(root, rel)
    except OSError:  # a symlink or a folder where a file was: not what the model wrote
        return None


def _put_back(ws: GitTree, rel: str) -> None:
    if ws.git("cat-file", "-e", f"HEAD:{rel}", check=False).returncode == 0:
        ws.git("checkout", "-q", "HEAD", "--", rel)
        return
    ws.git("rm", "-q", "--cached", "--ignore-unmatch", "--", rel)
    target = ws.path / rel
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.unlink(target)


def discard_unwritten(ws: GitTree, written: Mapping[str, bytes]) -> list[str]:
    """Put back every change the model did not write (`written`: path → the content it wrote); the paths."""
    dropped: set[str] = set()
    for _ in range(MAX_ROUNDS):
        found = [rel for rel in changed_paths(ws) if rel not in written or _on_disk(ws.path, rel) != written[rel]]
        if not found:
            break
        for rel in found:
            if rel in written:
                write_nofollow(ws.path, rel, written[rel])
            else:
                _put_back(ws, rel.rstrip("/"))
            dropped.add(rel.rstrip("/"))
    return sorted(dropped)
