"""Making a job's workspace: a clone on a new branch, a clone continuing ai-fix's branch, a local
worktree; or reopening one after a crash."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from bot.workspace.branch import free_name, validate_branch_name
from bot.workspace.git import Workspace
from bot.workspace.gitcmd import NETWORK_TIMEOUT, WorkspaceError, auth_env, check_remote_url
from bot.workspace.jobdir import WorkspaceState, load_state, make_hooks, new_job_dir, removed_on_failure, save_state
from bot.workspace.jobgit import JobGit
from bot.workspace.overlay import ATTEMPTS, FETCHED_ATTEMPTS


def clone(url: str, dest: Path | str, *, branch: str, token: str | None = None, ref: str | None = None) -> Workspace:
    """Clone `url` into `dest` and start the new branch `branch` at `ref` (default: the remote's default branch).

    A branch of that name already on the remote (a closed PR's, say) is never reused or
    overwritten: the new branch is the first free `branch-2`, `branch-3`, ... (see `ws.branch`).
    """
    validate_branch_name(branch)
    root = new_job_dir(dest)
    with removed_on_failure(root):
        git, state = _cloned(url, root, token, kind="clone", branch=branch)
        remote = git.git("for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin/").stdout.decode()
        state.branch = free_name(branch, set(remote.split()))
        _start_branch(git, state, git.resolve(ref or "HEAD"))
    return Workspace(root, state)


def checkout_existing(
    url: str, dest: Path | str, *, branch: str, token: str | None = None, evidence_base: str = ""
) -> Workspace:
    """Clone `url` and continue ai-fix's existing branch `branch`: new commits go on top, never a force-push.

    The base commit is the branch's tip as found, so diff and stats show this round's change;
    `evidence_base` (the pull request's original base) is what the evidence is taken against.
    """
    validate_branch_name(branch)
    root = new_job_dir(dest)
    with removed_on_failure(root):
        git, state = _cloned(url, root, token, kind="existing", branch=branch)
        try:
            start = git.resolve(f"refs/remotes/origin/{branch}")
        except WorkspaceError:
            raise WorkspaceError(
                f"branch {branch!r} does not exist on {url}: start a new one with bot.workspace.opening.clone"
            ) from None
        if evidence_base:
            # A commit, or a ref whose fork point with the branch is the pull request's base.
            state.evidence_base = git.git("merge-base", git.resolve(evidence_base), start).stdout.decode().strip()
        _start_branch(git, state, start)
    return Workspace(root, state)


def local(repo: Path | str, dest: Path | str, *, branch: str, ref: str | None = None) -> Workspace:
    """A `git worktree` of the local repository `repo` on the new branch `branch`, started at `ref` (default HEAD).

    Only committed work is the starting point; the branch stays in `repo` when the job ends.
    """
    validate_branch_name(branch)
    repo_path = Path(os.path.realpath(repo))
    if not repo_path.is_dir():
        raise WorkspaceError(f"{repo}: no such directory; pass the path of a local git repository")
    root = new_job_dir(dest)
    hooks = make_hooks(root)
    tree = root / "tree"
    state = WorkspaceState(
        kind="local", tree=str(tree), git_dir="", hooks=str(hooks), branch=branch, base_sha="", repo=str(repo_path)
    )
    git = JobGit(root, state.hooks, state.git_dir, state.tree)  # the git directory is not known yet: `run` only
    user_repo = ["-C", str(repo_path)]
    with removed_on_failure(root):
        if git.run([*user_repo, "rev-parse", "--git-dir"], check=False).returncode != 0:
            raise WorkspaceError(
                f"{repo_path} is not a git repository: pass the root of a git checkout (git init; git commit)"
            )
        start = git.resolve(ref or "HEAD", prefix=user_repo)
        taken = git.run([*user_repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], check=False)
        if taken.returncode == 0:
            raise WorkspaceError(
                f"branch {branch!r} already exists in {repo_path}: delete it (git branch -D {branch}) "
                "or keep it and give the task a different title"
            )
        git.run([*user_repo, "worktree", "add", "-q", "-b", branch, str(tree), start])
        # Read once, right after creation, before any sandboxed code could rewrite the tree's .git file.
        state.git_dir = git.run(["-C", str(tree), "rev-parse", "--absolute-git-dir"]).stdout.decode().strip()
        state.base_sha = start
        save_state(root, state)
    return Workspace(root, state)


def resume(dest: Path | str) -> Workspace:
    """Reopen the job directory `dest` after a crash, back at its last checkpoint (later edits are dropped)."""
    root = Path(dest)
    state = load_state(root)
    if not Path(state.git_dir).is_dir():
        raise WorkspaceError(f"{root}: its git directory {state.git_dir} is gone; remove {root} and start a new job")
    ws = Workspace(root, state)
    ws.rollback()
    return ws


def _cloned(
    url: str, root: Path, token: str | None, *, kind: Literal["clone", "existing"], branch: str
) -> tuple[JobGit, WorkspaceState]:
    check_remote_url(url)
    hooks = make_hooks(root)
    tree, git_dir = root / "tree", root / "git"
    state = WorkspaceState(
        kind=kind, branch=branch, base_sha="", remote_url=url, tree=str(tree), git_dir=str(git_dir), hooks=str(hooks)
    )
    git = JobGit(root, state.hooks, state.git_dir, state.tree)
    options = ["--no-checkout", f"--separate-git-dir={git_dir}", "--config", f"core.hooksPath={hooks}"]
    # The remote's attempts refs too: a later round's attempts go on top of them, and a push is never forced.
    options += ["--config", f"remote.origin.fetch=+{ATTEMPTS}/*:{FETCHED_ATTEMPTS}/*"]
    git.run(
        ["clone", "-q", *options, "--", url, str(tree)],
        env=auth_env(token, url) if token else None,
        secrets=[token] if token else [],
        timeout=NETWORK_TIMEOUT,
    )
    return git, state


def _start_branch(git: JobGit, state: WorkspaceState, start: str) -> None:
    git.git("checkout", "-q", "--no-track", "-b", state.branch, start)
    state.base_sha = start
    save_state(git.root, state)
