"""What an `ai-fix run` killed midway leaves in the user's repository, found and cleared by the next run.

Each local run works in a directory of its own (`<work_dir>/local/run-*`) that names its process
(`claim`: pid and start time, so a reused pid is not mistaken for it). A run killed midway leaves that
directory, its worktree registered in the repository and its branch. The next run on the repository
removes the worktrees of runs whose process is gone; a dead run's branch that has the name the new run
needs is deleted when it holds no checkpoint, or renamed (`<branch>-interrupted`) so its work stays.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from bot.workspace.gitcmd import run_git
from bot.workspace.jobdir import STATE_FILE, WorkspaceState, make_hooks

OWNER_FILE = "owner.json"


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot, field 22 of /proc/<pid>/stat); None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def claim(run_dir: Path) -> None:
    """Mark `run_dir` as this process's, so a later run can tell when its owner is gone."""
    (run_dir / OWNER_FILE).write_text(json.dumps({"pid": os.getpid(), "started": _started(os.getpid())}))


def owner_gone(run_dir: Path) -> bool:
    """Whether the process that claimed `run_dir` is gone (False for a directory no run claimed)."""
    try:
        owner = json.loads((run_dir / OWNER_FILE).read_text())
        started: object = owner["started"]
        return _started(int(owner["pid"])) != started
    except (OSError, ValueError, KeyError, TypeError):
        return False


def clear_dead_runs(repo: Path, runs: Path, branch: str) -> list[str]:
    """Clear what runs on `repo` whose process is gone left under `runs`, freeing `branch`; what was done."""
    notes: list[str] = []
    repo = Path(os.path.realpath(repo))
    for run_dir in sorted(runs.glob("run-*")) if runs.is_dir() else []:
        if not owner_gone(run_dir):
            continue
        try:
            state = WorkspaceState.model_validate_json((run_dir / "job" / STATE_FILE).read_text())
        except (OSError, ValueError):
            state = None  # killed before its worktree was made: only the directory is left
        if state is not None and state.repo != str(repo):
            continue  # another repository's: its own next run clears it
        if state is not None:
            notes += _clear_worktree(state, make_hooks(run_dir), branch)
        shutil.rmtree(run_dir, ignore_errors=True)
    return notes


def _clear_worktree(state: WorkspaceState, hooks: Path, branch: str) -> list[str]:
    def git(*args: str) -> str:
        done = run_git(["-C", state.repo, *args], hooks=str(hooks), cwd=state.repo, check=False)
        return done.stdout.decode().strip() if done.returncode == 0 else ""

    git("worktree", "remove", "--force", state.tree)
    git("worktree", "prune")
    notes = [f"a killed run's worktree {state.tree} (its process is gone) was removed"]
    head = git("rev-parse", "--verify", "--quiet", f"refs/heads/{state.branch}")
    if state.branch != branch or not head:
        return notes
    if head == state.base_sha:
        git("branch", "-D", state.branch)
        return [*notes, f"its branch {state.branch} held no checkpoint and was deleted"]
    kept, n = f"{state.branch}-interrupted", 1
    while git("rev-parse", "--verify", "--quiet", f"refs/heads/{kept}"):
        n += 1
        kept = f"{state.branch}-interrupted-{n}"
    git("branch", "-m", state.branch, kept)
    return [*notes, f"its checkpoints are kept on branch {kept}"]
