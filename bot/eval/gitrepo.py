"""git for the eval's own repositories, through the workspace's safe runner (no hook or helper ever runs)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from bot.workspace.gitcmd import run_git

NO_HOOKS = os.devnull
"""`core.hooksPath` pointing at no folder: a task's repository runs no hook of its own."""
_PATCHED = re.compile(r"^(?:\+\+\+ b/|--- a/)(.+?)\t?$", re.M)


def git(args: list[str], *, cwd: Path, env: dict[str, str] | None = None, input: bytes | None = None) -> str:
    """`git args` in `cwd`; stdout as text; WorkspaceError (saying what failed) on a non-zero exit."""
    return run_git(args, hooks=NO_HOOKS, cwd=cwd, env=env, input=input, timeout=600).stdout.decode("utf-8", "replace")


def patched_paths(patch: str) -> list[str]:
    """Every path a unified diff touches (old and new names), in order."""
    return list(dict.fromkeys(p for p in _PATCHED.findall(patch) if p != "/dev/null"))
