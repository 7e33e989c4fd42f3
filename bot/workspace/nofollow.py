"""Reading and writing a workspace file without ever following a symlink on its path.

Each directory on the path is opened from the one before with O_NOFOLLOW, so a symlink planted by
code in the sandbox (or appearing after the gate's check) cannot redirect a write outside the tree.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


class NotRegularFile(Exception):
    """The path names something other than a regular file now (a directory, a fifo, a device)."""


def _open_parent(root: Path, parts: list[str], *, create: bool) -> int:
    """A descriptor of the file's directory, reached from root one part at a time without following symlinks."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_nofollow(root: Path, rel: str) -> bytes | None:
    parts = rel.split("/")
    try:
        dir_fd = _open_parent(root, parts, create=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def write_nofollow(root: Path, rel: str, data: bytes) -> None:
    """Atomic replace (temp file + rename in the same directory); keeps an existing file's mode."""
    parts = rel.split("/")
    dir_fd = _open_parent(root, parts, create=True)
    try:
        name = parts[-1]
        mode = 0o644
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFile(f"{rel} is no longer a regular file; nothing was written")
            mode = stat.S_IMODE(st.st_mode)
        tmp = f".ai-fix-{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(tmp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)
