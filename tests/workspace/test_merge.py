"""Merging the base branch into a pull request's branch with real git: a merge commit, conflicts cut into hunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.workspace import opening
from bot.workspace.conflicts import ConflictError, parse_conflicts, resolve
from bot.workspace.git import Workspace
from bot.workspace.merge import commit_merge, read_conflicted, start_merge, write_resolved
from tests.support.repos import git_as_user as git


def move_main(seed_repo: Path, remote: Path, path: str, text: str) -> str:
    """A commit on the remote's `main` (someone merged another PR)."""
    git("pull", "-q", str(remote), "main", cwd=seed_repo)
    (seed_repo / path).write_text(text)
    git("commit", "-qam", f"main edits {path}", cwd=seed_repo)
    git("push", "-q", str(remote), "main", cwd=seed_repo)
    return git("rev-parse", "HEAD", cwd=seed_repo)


@pytest.fixture
def pushed(tmp_path: Path, remote_url: str, branch: str) -> Workspace:
    """The PR's branch on the remote (it changed `add`), checked out again as a rebase job does."""
    ws = opening.clone(remote_url, tmp_path / "round1", branch=branch)
    (ws.path / "src" / "app.py").write_text("def add(a, b):\n    return b + a\n\n\ndef sub(a, b):\n    return a - b\n")
    ws.checkpoint("round 1")
    ws.push()
    return opening.checkout_existing(remote_url, tmp_path / "rebase", branch=branch)


def test_a_clean_merge_is_committed_with_two_parents(pushed: Workspace, seed_repo: Path, remote: Path) -> None:
    before = pushed.head_sha
    base = move_main(seed_repo, remote, "src/util.py", "X = 2\n")
    pushed.git("fetch", "-q", "origin")
    merge = start_merge(pushed, "refs/remotes/origin/main")
    assert merge.state == "clean" and merge.base_sha == base and merge.conflicted == []
    head = commit_merge(pushed, "Merge main", [])
    assert git("rev-list", "--parents", "-n1", head, cwd=pushed.path).split() == [head, before, base]
    assert (pushed.path / "src" / "util.py").read_text() == "X = 2\n"
    assert start_merge(pushed, "refs/remotes/origin/main").state == "up_to_date"


def test_a_conflict_is_cut_into_hunks_resolved_and_committed(pushed: Workspace, seed_repo: Path, remote: Path) -> None:
    before = pushed.head_sha
    base = move_main(
        seed_repo, remote, "src/app.py", "def add(a, b):\n    return a + b + 0\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    pushed.git("fetch", "-q", "origin")
    merge = start_merge(pushed, "refs/remotes/origin/main")
    assert merge.state == "conflicts" and merge.conflicted == ["src/app.py"]
    text = read_conflicted(pushed, "src/app.py")
    assert text is not None
    conflicted = parse_conflicts("src/app.py", text)
    [hunk] = conflicted.hunks
    assert (hunk.ours, hunk.base, hunk.theirs) == (["    return b + a"], ["    return a + b"], ["    return a + b + 0"])
    assert hunk.before == ["def add(a, b):"] and hunk.after[:2] == ["", ""]
    with pytest.raises(ConflictError, match="not resolved"):
        resolve(conflicted, {})
    with pytest.raises(ConflictError, match="still holds conflict markers"):
        resolve(conflicted, {1: "<<<<<<< HEAD\n    return b + a"})
    write_resolved(pushed, "src/app.py", resolve(conflicted, {1: "    return b + a + 0\n"}))
    head = commit_merge(pushed, "Merge main\n\nResolved conflicts in: src/app.py\n", merge.conflicted)
    assert git("rev-list", "--parents", "-n1", head, cwd=pushed.path).split() == [head, before, base]
    assert git("show", f"{head}:src/app.py", cwd=pushed.path).startswith("def add(a, b):\n    return b + a + 0\n")
    pushed.push()
    assert git("rev-parse", f"refs/heads/{pushed.branch}", cwd=remote) == head, "pushed without force"


def test_markers_out_of_order_are_refused() -> None:
    with pytest.raises(ConflictError, match="out of order"):
        parse_conflicts("a.py", "<<<<<<< ours\nx\n<<<<<<< again\n")
    with pytest.raises(ConflictError, match="never ends"):
        parse_conflicts("a.py", "<<<<<<< ours\nx\n=======\ny\n")
