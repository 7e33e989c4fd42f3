"""Small real git repositories for tests, made with git as a user runs it (not through ai-fix's workspace)."""

from __future__ import annotations

import os
import subprocess
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bot.contract.models import Budget, Scope
from bot.workspace.gate import PatchGate

_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}  # fmt: skip


T = TypeVar("T")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=_ENV).stdout


def write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit(repo: Path, files: dict[str, str], message: str = "change") -> None:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def make_repo(root: Path, files: dict[str, str], branch: str = "main") -> Path:
    """A repository whose `branch` has one commit holding `files`."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    commit(root, files, "initial")
    return root


def git_as_user(*args: str, cwd: Path | str) -> str:
    """Run git as a user would (own identity, no ai-fix safety config) and return stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="Dev",
        GIT_AUTHOR_EMAIL="dev@example.com",
        GIT_COMMITTER_NAME="Dev",
        GIT_COMMITTER_EMAIL="dev@example.com",
    )
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def huge_file(path: Path, head: str, size: int = 256 << 20) -> Path:
    """A sparse file of `size` bytes that starts with `head`: far larger than anything ai-fix should read whole,
    without taking the disk (the rest is a hole, read as NUL bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.write(head.encode())
        fh.truncate(size)
    return path


def peak_bytes(work: Callable[[], T]) -> tuple[T, int]:
    """What `work()` returns and the most memory Python held for it at once (tracemalloc's peak)."""
    tracemalloc.start()
    try:
        return work(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class FolderTree:
    """A plain folder as the editor's workspace (no git needed for its commands)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.gate = PatchGate(path, Scope(), Budget())
