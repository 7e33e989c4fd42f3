"""git for the eval's own repositories, through the workspace's safe runner (no hook or helper ever runs)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bot.contract.globs import normalize_path
from bot.errors import ConfigError
from bot.workspace.gitcmd import WorkspaceError, run_git

NO_HOOKS = os.devnull
"""`core.hooksPath` pointing at no folder: a task's repository runs no hook of its own."""


def git(args: list[str], *, cwd: Path, env: dict[str, str] | None = None, input: bytes | None = None) -> str:
    """`git args` in `cwd`; stdout as text; WorkspaceError (saying what failed) on a non-zero exit."""
    return run_git(args, hooks=NO_HOOKS, cwd=cwd, env=env, input=input, timeout=600).stdout.decode("utf-8", "replace")


def patched_paths(patch: str) -> list[str]:
    """Every path a diff touches (old and new names), in order, as git itself reads them (`git apply --numstat -z`:
    a hunk line that looks like a header is no path); ValueError on a path that is absolute, climbs out with `..`
    or lies inside `.git`, and on a diff git cannot read."""
    if not patch.strip():
        return []
    paths: list[str] = []
    # Outside any repository (git apply in a subfolder of one would skip paths outside it); reversed for the old
    # names, which numstat shows only for a file the diff deletes.
    with tempfile.TemporaryDirectory(prefix="ai-fix-patch-") as neutral:
        for reverse in ([], ["-R"]):
            try:
                listed = run_git(
                    ["apply", "--numstat", "-z", *reverse], hooks=NO_HOOKS, cwd=neutral, input=patch.encode()
                )
            except WorkspaceError as exc:
                raise ValueError(f"git cannot read it as a diff ({exc})") from None
            paths += [r.split(b"\t", 2)[2].decode("utf-8", "surrogateescape") for r in listed.stdout.split(b"\0") if r]
    for path in paths:
        norm = normalize_path(path)
        if norm is None or ".git" in norm.casefold().split("/"):
            raise ValueError(f"it touches {path!r}, outside the repository's files: refusing the task")
    return list(dict.fromkeys(paths))


def inside(tree: Path, path: str) -> Path:
    """`tree / path`, or ConfigError when it resolves outside `tree` (through a symbolic link the diff made)."""
    target = tree / path
    if not target.resolve().is_relative_to(tree.resolve()):
        raise ConfigError(f"{path} leads outside the task's repository through a symbolic link: refusing the task")
    return target
