"""A job directory on the host: what it records for a resume, and how one is made and cleaned up."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from bot.workspace.gitcmd import WorkspaceError

STATE_FILE = "workspace.json"


class WorkspaceState(BaseModel):
    """What a job directory records so the work can be resumed after a crash."""

    kind: Literal["clone", "local", "existing"]
    tree: str
    git_dir: str
    hooks: str
    branch: str
    base_sha: str
    remote_url: str = ""
    """Where `push` goes by default; empty in local mode (the branch is already in the user's repo)."""
    repo: str = ""
    """Local mode: the user's repository the worktree belongs to."""
    evidence_base: str = ""
    """Later rounds: the pull request's original base commit, which the evidence is taken against."""


def new_job_dir(dest: Path | str) -> Path:
    root = Path(dest).absolute()
    if root.exists() and any(root.iterdir()):
        raise WorkspaceError(
            f"{root} is not empty: continue that job with bot.workspace.opening.resume, or remove the directory"
        )
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def removed_on_failure(root: Path) -> Iterator[None]:
    """A job directory that could not be set up is removed, so the next attempt starts clean."""
    try:
        yield
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def restore_gitfile(tree: Path, git_dir: str) -> None:
    """The tree's `.git` file as git wrote it, in case sandboxed code replaced it (a user may run git there later)."""
    gitfile = tree / ".git"
    if gitfile.is_symlink() or gitfile.is_file():
        gitfile.unlink()
    elif gitfile.is_dir():
        shutil.rmtree(gitfile)
    gitfile.write_text(f"gitdir: {git_dir}\n")


def make_hooks(root: Path) -> Path:
    hooks = root / "hooks"
    hooks.mkdir(exist_ok=True)
    return hooks


def save_state(root: Path, state: WorkspaceState) -> None:
    """Write `workspace.json` whole or not at all."""
    tmp = root / f"{STATE_FILE}.tmp"
    tmp.write_text(state.model_dump_json(indent=2))
    tmp.replace(root / STATE_FILE)


def load_state(root: Path) -> WorkspaceState:
    try:
        return WorkspaceState.model_validate_json((root / STATE_FILE).read_text())
    except FileNotFoundError:
        raise WorkspaceError(
            f"{root} has no {STATE_FILE}: it is not an ai-fix job directory; start a new job"
        ) from None
