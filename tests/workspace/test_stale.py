"""What a killed `ai-fix run` leaves (its worktree, its branch) is cleared by the next run on the repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bot.workspace import opening
from bot.workspace.git import Workspace
from bot.workspace.stale import OWNER_FILE, claim, clear_dead_runs, owner_gone
from tests.support.repos import git, make_repo

BRANCH = "ai-fix/local-fix-the-adder"


def dead_run(runs: Path, repo: Path, name: str, *, checkpoint: bool) -> Workspace:
    """A run directory whose process is gone (a real pid that has exited), with its worktree in `repo`."""
    run_dir = runs / name
    ws = opening.local(repo, run_dir / "job", branch=BRANCH)
    if checkpoint:
        (ws.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        ws.checkpoint("ai-fix step 1: add() adds")
    exited = subprocess.Popen(["true"])
    exited.wait()
    (run_dir / OWNER_FILE).write_text(json.dumps({"pid": exited.pid, "started": "0"}))
    return ws


def test_a_dead_runs_checkpoints_are_kept_on_a_renamed_branch_and_a_live_run_is_left_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    runs = tmp_path / "runs"
    dead = dead_run(runs, repo, "run-dead", checkpoint=True)
    work = dead.head_sha
    live = runs / "run-live"
    live.mkdir()
    claim(live)
    assert owner_gone(runs / "run-dead") and not owner_gone(live)
    notes = clear_dead_runs(repo, runs, BRANCH)
    assert notes == [
        f"a killed run's worktree {dead.path} (its process is gone) was removed",
        f"its checkpoints are kept on branch {BRANCH}-interrupted",
    ]
    assert git(repo, "rev-parse", f"{BRANCH}-interrupted").strip() == work
    assert git(repo, "branch", "--list", BRANCH) == "" and not (runs / "run-dead").exists() and live.is_dir()
    assert str(dead.path) not in git(repo, "worktree", "list")
    again = dead_run(runs, repo, "run-dead-2", checkpoint=True).head_sha
    assert clear_dead_runs(repo, runs, BRANCH)[1] == f"its checkpoints are kept on branch {BRANCH}-interrupted-2"
    assert git(repo, "rev-parse", f"{BRANCH}-interrupted-2").strip() == again


def test_a_dead_run_of_another_repository_or_branch_keeps_its_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    other = make_repo(tmp_path / "other", {"calc.py": "x = 1\n"})
    runs = tmp_path / "runs"
    dead_run(runs, other, "run-other", checkpoint=False)
    assert clear_dead_runs(repo, runs, BRANCH) == [] and (runs / "run-other").is_dir()
    assert clear_dead_runs(other, runs, "ai-fix/local-something-else")[1:] == []
    assert git(other, "branch", "--list", BRANCH).strip() == BRANCH and not (runs / "run-other").exists()
