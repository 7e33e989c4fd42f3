"""Merging the base branch into a pull request's branch in the workspace: a merge commit, never a rebase
or a force-push, so the pushed branch only ever moves forward.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bot.markdown import unlinked
from bot.workspace.git import Workspace
from bot.workspace.gitcmd import WorkspaceError


class MergeStart(BaseModel):
    state: Literal["up_to_date", "clean", "conflicts"]
    base_sha: str
    """The tip of the base branch being merged in."""
    conflicted: list[str] = Field(default_factory=list)
    """Files git could not merge, as it left them (with diff3 markers for text conflicts)."""


def start_merge(ws: Workspace, ref: str) -> MergeStart:
    """Merge `ref` into the branch without committing; the tree holds the result, conflicts marked."""
    base = ws.git("rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}").stdout.decode().strip()
    if ws.git("merge-base", "--is-ancestor", base, "HEAD", check=False).returncode == 0:
        return MergeStart(state="up_to_date", base_sha=base)
    done = ws.git(
        "-c", "merge.conflictStyle=diff3", "-c", "merge.renames=true",
        "merge", "--no-ff", "--no-commit", "--no-edit", "--no-verify", base,
        check=False,
    )  # fmt: skip
    conflicted = ws.git("diff", "--name-only", "--diff-filter=U", "-z").stdout.decode("utf-8", "surrogateescape")
    files = [f for f in conflicted.split("\0") if f]
    if done.returncode != 0 and not files:
        raise WorkspaceError(f"git merge of {ref} failed: {done.stderr.decode('utf-8', 'replace').strip()[:500]}")
    return MergeStart(state="conflicts" if files else "clean", base_sha=base, conflicted=files)


def read_conflicted(ws: Workspace, path: str) -> str | None:
    """A conflicted file's text with its markers; None when it is not a text conflict (deleted, binary)."""
    file = Path(ws.path, path)
    if file.is_symlink() or not file.is_file():
        return None
    data = file.read_bytes()
    if b"\0" in data:
        return None
    text = data.decode("utf-8", "replace")
    return text if "<<<<<<<" in text else None


def write_resolved(ws: Workspace, path: str, text: str) -> None:
    file = Path(ws.path, path)
    if file.is_symlink():
        raise WorkspaceError(f"{path} is a symbolic link: ai-fix does not write through links")
    file.write_text(text)


def commit_merge(ws: Workspace, message: str, resolved: list[str]) -> str:
    """Commit the merge in progress (two parents: the branch and the base) with the `resolved` files as they are
    now; anything else in the tree (files the checks wrote) stays out. Returns the new head."""
    if not Path(ws.state.git_dir, "MERGE_HEAD").is_file():
        raise WorkspaceError("no merge is in progress: start one with start_merge")
    if resolved:
        ws.git("add", "--", *resolved)
    ws.git("commit", "-q", "--no-verify", "--file=-", input=unlinked(message).encode())
    return ws.head_sha
