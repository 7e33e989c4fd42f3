"""Reading files a sandboxed command left in its artifact directory, without trusting them."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def read_artifact(directory: Path, name: str, limit: int) -> bytes | None:
    """The regular file `name` directly in `directory`; None if missing, a link, not regular or over `limit`."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"artifact name must be a plain file name, got {name!r}")
    try:
        fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return fh.read(limit + 1)[:limit]


def empty(directory: Path) -> None:
    """Remove everything in `directory` (links themselves, never what they point at), keeping the directory."""
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            Path(entry.path).unlink(missing_ok=True)
