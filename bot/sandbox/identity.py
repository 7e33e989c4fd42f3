"""Who commands run as inside a sandbox, and how that user gets write access to the workspace.

When ai-fix runs as root, commands run as a dedicated unprivileged uid (never root, so process
limits bite and root-only host files stay unreadable). The workspace stays owned by root — git on
the host refuses repositories owned by someone else — and is shared through a group instead: every
directory outside `.git` gets the sandbox's group, group write and the setgid bit, so files the
sandbox creates are owned by the sandbox uid and the shared group, and root on the host can remove them.
When ai-fix runs as an ordinary user, commands run as that same user and nothing needs granting.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

SANDBOX_UID = 10_001
SANDBOX_GID = 10_001
"""Unused on typical hosts; the uid and group commands run as when ai-fix itself runs as root."""


class Identity(NamedTuple):
    uid: int
    gid: int

    @property
    def spec(self) -> str:
        return f"{self.uid}:{self.gid}"


def sandbox_identity() -> Identity:
    if os.geteuid() == 0:
        return Identity(SANDBOX_UID, SANDBOX_GID)
    return Identity(os.geteuid(), os.getegid())


def grant_workspace(workspace: Path, who: Identity) -> None:
    """Let `who` create and change files in the workspace (not in `.git`); a no-op when it owns it."""
    if os.geteuid() != 0 or workspace.stat().st_uid == who.uid:
        return
    for root, dirs, files in os.walk(workspace):
        if Path(root) == workspace and ".git" in dirs:
            dirs.remove(".git")
        _share(Path(root), who.gid, directory=True)
        for name in files:
            _share(Path(root) / name, who.gid, directory=False)


def _share(path: Path, gid: int, *, directory: bool) -> None:
    # Through a descriptor opened without following links: a path swapped for a symlink by an
    # earlier sandbox over this workspace must not hand a host file to the sandbox group.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            return
        os.fchown(fd, -1, gid)
        extra = stat.S_IRWXG | stat.S_ISGID if directory else stat.S_IRGRP | stat.S_IWGRP
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | extra)
    finally:
        os.close(fd)


def private_dir(path: Path, who: Identity) -> Path:
    """A directory only the host and `who` can use (the sandbox's artifact and control files)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(path, who.uid, who.gid)
    return path
