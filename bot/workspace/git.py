"""A job's git workspace on the host: clone or worktree, a fresh branch, checkpoints, diff, push.

Layout of a job directory `dest` (the sandbox mounts only `dest/tree`):

    dest/tree/            the working tree the model edits and the checks run in
    dest/git/             the git directory (clones); local mode uses the user's repo's worktree dir
    dest/hooks/           empty: `core.hooksPath` points here, so no repository hook ever runs
    dest/workspace.json   what `Workspace.resume` needs after a crash

The git directory is kept outside the tree because code running in the sandbox can write anything in
the tree: a `.git/config` it wrote (`core.fsmonitor`, filter drivers, hooks) would run on the host
the next time ai-fix ran git. Every git command is given `--git-dir` and `--work-tree` explicitly
and never reads the tree's `.git` file.

How git itself is run (safety config, environment, the token) is `bot.workspace.gitcmd`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal

from bot.errors import PolicyViolation
from bot.workspace.branch import validate_branch_name
from bot.workspace.gate import PatchGate
from bot.workspace.gitcmd import (
    LOCAL_TIMEOUT,
    NETWORK_TIMEOUT,
    WorkspaceError,
    auth_env,
    check_remote_url,
    parse_stats,
    run_git,
)
from bot.workspace.jobdir import STATE_FILE, WorkspaceState, make_hooks, new_job_dir, removed_on_failure
from bot.workspace.models import DiffStats
from bot.workspace.overlay import has_commit, keep_attempt, laid_over


class Workspace:
    """One job's checkout: edit in `path`, `checkpoint` accepted steps, `rollback` the rest, `push` the branch."""

    def __init__(self, root: Path, state: WorkspaceState) -> None:
        self.root = root
        self.state = state

    # ---- creating and reopening -------------------------------------------------------------

    @classmethod
    def clone(
        cls, url: str, dest: Path | str, *, branch: str, token: str | None = None, ref: str | None = None
    ) -> Workspace:
        """Clone `url` into `dest` and start the new branch `branch` at `ref` (default: the remote's default branch).

        A branch of that name already on the remote (a closed PR's, say) is never reused or
        overwritten: the new branch is the first free `branch-2`, `branch-3`, ... (see `ws.branch`).
        """
        validate_branch_name(branch)
        root = new_job_dir(dest)
        with removed_on_failure(root):
            ws = cls._cloned(url, root, token, kind="clone", branch=branch)
            ws.state.branch = ws._free_branch_name(branch)
            ws._start_branch(ws._resolve(ref or "HEAD"))
        return ws

    @classmethod
    def checkout_existing(
        cls, url: str, dest: Path | str, *, branch: str, token: str | None = None, evidence_base: str = ""
    ) -> Workspace:
        """Clone `url` and continue ai-fix's existing branch `branch`: new commits go on top, never a force-push.

        The base commit is the branch's tip as found, so diff and stats show this round's change;
        `evidence_base` (the pull request's original base) is what the evidence is taken against.
        """
        validate_branch_name(branch)
        root = new_job_dir(dest)
        with removed_on_failure(root):
            ws = cls._cloned(url, root, token, kind="existing", branch=branch)
            try:
                start = ws._resolve(f"refs/remotes/origin/{branch}")
            except WorkspaceError:
                raise WorkspaceError(
                    f"branch {branch!r} does not exist on {url}: start a new one with Workspace.clone"
                ) from None
            if evidence_base:
                # A commit, or a ref whose fork point with the branch is the pull request's base.
                ws.state.evidence_base = ws.git("merge-base", ws._resolve(evidence_base), start).stdout.decode().strip()
            ws._start_branch(start)
        return ws

    @classmethod
    def local(cls, repo: Path | str, dest: Path | str, *, branch: str, ref: str | None = None) -> Workspace:
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
        ws = cls(root, state)
        user_repo = ["-C", str(repo_path)]
        with removed_on_failure(root):
            if ws._run([*user_repo, "rev-parse", "--git-dir"], check=False).returncode != 0:
                raise WorkspaceError(
                    f"{repo_path} is not a git repository: pass the root of a git checkout (git init; git commit)"
                )
            start = ws._resolve(ref or "HEAD", prefix=user_repo)
            taken = ws._run([*user_repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], check=False)
            if taken.returncode == 0:
                raise WorkspaceError(
                    f"branch {branch!r} already exists in {repo_path}: delete it (git branch -D {branch}) "
                    "or keep it and give the task a different title"
                )
            ws._run([*user_repo, "worktree", "add", "-q", "-b", branch, str(tree), start])
            # Read once, right after creation, before any sandboxed code could rewrite the tree's .git file.
            state.git_dir = ws._run(["-C", str(tree), "rev-parse", "--absolute-git-dir"]).stdout.decode().strip()
            state.base_sha = start
            ws._save()
        return ws

    @classmethod
    def resume(cls, dest: Path | str) -> Workspace:
        """Reopen the job directory `dest` after a crash, back at its last checkpoint (later edits are dropped)."""
        root = Path(dest)
        try:
            state = WorkspaceState.model_validate_json((root / STATE_FILE).read_text())
        except FileNotFoundError:
            raise WorkspaceError(
                f"{root} has no {STATE_FILE}: it is not an ai-fix job directory; start a new job"
            ) from None
        ws = cls(root, state)
        if not Path(state.git_dir).is_dir():
            raise WorkspaceError(
                f"{root}: its git directory {state.git_dir} is gone; remove {root} and start a new job"
            )
        ws.rollback()
        return ws

    @classmethod
    def _cloned(
        cls, url: str, root: Path, token: str | None, *, kind: Literal["clone", "existing"], branch: str
    ) -> Workspace:
        check_remote_url(url)
        hooks = make_hooks(root)
        tree, git_dir = root / "tree", root / "git"
        paths = {"tree": str(tree), "git_dir": str(git_dir), "hooks": str(hooks)}
        ws = cls(root, WorkspaceState(kind=kind, branch=branch, base_sha="", remote_url=url, **paths))
        options = ["--no-checkout", f"--separate-git-dir={git_dir}", "--config", f"core.hooksPath={hooks}"]
        ws._run(
            ["clone", "-q", *options, "--", url, str(tree)],
            env=auth_env(token, url) if token else None,
            secrets=[token] if token else [],
            timeout=NETWORK_TIMEOUT,
        )
        return ws

    # ---- what the loop reads --------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The working tree: what the model edits and the sandbox mounts."""
        return Path(self.state.tree)

    @property
    def branch(self) -> str:
        return self.state.branch

    @property
    def base_sha(self) -> str:
        return self.state.base_sha

    @property
    def head_sha(self) -> str:
        """The last checkpoint (or the base commit before the first one)."""
        return self._resolve("HEAD")

    def diff(self, against: str | None = None) -> str:
        """The whole change against the base commit (or `against`), untracked files included, as a unified diff."""
        with self.scratch_index() as env:
            options = ["--cached", "--no-renames", "--no-ext-diff", "--no-textconv"]
            done = self.git("diff", *options, against or self.base_sha, env=env)
        return done.stdout.decode("utf-8", "replace")

    def commit_diff(self, sha: str) -> str:
        """What one checkpoint changed against its parent, as a unified diff."""
        done = self.git("show", "--format=", "--no-renames", "--no-ext-diff", "--no-textconv", sha)
        return done.stdout.decode("utf-8", "replace")

    def stats(self, against: str | None = None) -> DiffStats:
        """Files and line counts of the change against the base commit (or `against`), untracked files included."""
        with self.scratch_index() as env:
            return self._staged_stats(env, against)

    def read_base(self, path: str) -> bytes | None:
        """A file's bytes at the base commit, None when it did not exist there (the gate's base reader)."""
        done = self.git("cat-file", "blob", f"{self.base_sha}:{path}", check=False)
        return done.stdout if done.returncode == 0 else None

    # ---- changing it ----------------------------------------------------------------------

    def checkpoint(self, message: str, *, gate: PatchGate | None = None) -> str | None:
        """Commit everything in the tree as one accepted step; None when nothing changed since the last one.

        With a gate, the whole change against the base is checked first (files the checks wrote,
        symlinks, executable bits, limits); on a violation nothing is committed and PolicyViolation
        says why, so the caller can `rollback()`.
        """
        self._restore_gitfile()
        self.git("add", "-A")
        if self.git("diff", "--cached", "--quiet", check=False).returncode == 0:
            return None
        if gate is not None:
            refused = gate.violations(self._staged_stats())
            if refused:
                self.git("reset", "-q")
                raise PolicyViolation("not kept: " + "; ".join(d.reason for d in refused))
        self.git("commit", "-q", "--no-verify", "--file=-", input=message.encode())
        return self.head_sha

    def save_work(self, message: str, *, gate: PatchGate) -> str:
        """Commit whatever is left so the branch holds it; a change the gate refuses is kept on the attempts
        branch and rolled back instead.

        Returns "" when the work was kept on the branch (or nothing was left), else where it went and why.
        """
        try:
            self.checkpoint(message, gate=gate)
            return ""
        except PolicyViolation as exc:
            kept = self.keep_attempt(f"{message}\n\nNot kept on the branch: {exc}\n")
            self.rollback()
            where = f"kept on branch {self.attempts_branch}" if kept else "dropped"
            return f"changes outside the policy were {where} ({exc})"

    def laid_over(self, base: str, keep: Sequence[str] = ()) -> AbstractContextManager[None]:
        """Inside, the tree holds `base`'s files with the change's own `keep` paths on top; after, the change again."""
        return laid_over(self, base, keep)

    def keep_attempt(self, message: str) -> str | None:
        """Commit what the tree holds beyond the last checkpoint onto the attempts branch (HEAD stays); its sha."""
        remote = f"refs/remotes/origin/{self.attempts_branch}"
        return keep_attempt(self, f"refs/heads/{self.attempts_branch}", message, remote=remote)

    @property
    def has_attempts(self) -> bool:
        """Whether this workspace kept a rolled-back attempt (a local attempts branch exists)."""
        return has_commit(self, f"refs/heads/{self.attempts_branch}")

    @property
    def attempts_branch(self) -> str:
        """Where rolled-back attempts are kept, for a person to fetch: `<branch>-attempts`."""
        return f"{self.branch}-attempts"

    @property
    def evidence_base(self) -> str:
        """The commit the evidence is taken against: the pull request's original base in later rounds."""
        return self.state.evidence_base or self.base_sha

    def rollback(self) -> str:
        """Back to the last checkpoint: tracked files restored, untracked files removed (ignored ones kept)."""
        self.git("reset", "-q", "--hard", "HEAD")
        self.git("clean", "-q", "-ffd")
        self._restore_gitfile()
        return self.head_sha

    def push(self, token: str | None = None, remote_url: str | None = None, *, attempts: bool = False) -> None:
        """Push the branch (up to the last checkpoint), or with `attempts` the attempts branch; never forced."""
        url = remote_url or self.state.remote_url
        if not url:
            raise WorkspaceError(
                f"nothing to push: this local workspace's work is on branch {self.branch} in {self.state.repo}; "
                "pass remote_url= to push it somewhere else"
            )
        check_remote_url(url)
        ref = f"refs/heads/{self.attempts_branch}:refs/heads/{self.attempts_branch}" if attempts else None
        env, secrets = (auth_env(token, url), [token]) if token else (None, [])
        refspec = ref or f"HEAD:refs/heads/{self.branch}"
        self.git("push", "-q", "--no-verify", "--", url, refspec, env=env, secrets=secrets, timeout=NETWORK_TIMEOUT)

    def remove(self, *, keep_branch: bool = True) -> None:
        """Delete the job directory; in local mode the worktree is unregistered and the branch kept in the user's repo
        (deleted there too when not `keep_branch`: a planning run's, which made no commit)."""
        if self.state.kind == "local":
            self._run(["-C", self.state.repo, "worktree", "remove", "--force", self.state.tree], check=False)
            if not keep_branch:
                self._run(["-C", self.state.repo, "branch", "-D", self.state.branch], check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- plumbing --------------------------------------------------------------------------

    def _free_branch_name(self, wanted: str) -> str:
        taken = set(
            self.git("for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin/").stdout.decode().split()
        )
        name, n = wanted, 1
        while name in taken:
            n += 1
            name = f"{wanted}-{n}"
        return name

    def _start_branch(self, start: str) -> None:
        self.git("checkout", "-q", "--no-track", "-b", self.branch, start)
        self.state.base_sha = start
        self._save()

    def _save(self) -> None:
        tmp = self.root / f"{STATE_FILE}.tmp"
        tmp.write_text(self.state.model_dump_json(indent=2))
        tmp.replace(self.root / STATE_FILE)

    def _restore_gitfile(self) -> None:
        """The tree's `.git` file as git wrote it, in case sandboxed code replaced it (a user may run git there later)."""
        gitfile = self.path / ".git"
        if gitfile.is_symlink() or gitfile.is_file():
            gitfile.unlink()
        elif gitfile.is_dir():
            shutil.rmtree(gitfile)
        gitfile.write_text(f"gitdir: {self.state.git_dir}\n")

    def _resolve(self, rev: str, *, prefix: list[str] | None = None) -> str:
        """The commit sha `rev` names; `prefix` (`-C repo`) resolves in another repository instead."""
        if rev.startswith("-"):
            raise WorkspaceError(f"refusing revision {rev!r}: it looks like an option")
        args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
        done = self._run([*prefix, *args], check=False) if prefix else self.git(*args, check=False)
        if done.returncode != 0:
            raise WorkspaceError(f"no commit {rev!r} in the repository: check the branch or commit name")
        return done.stdout.decode().strip()

    @contextmanager
    def scratch_index(self) -> Iterator[dict[str, str]]:
        """An environment whose index is a copy of the real one with the whole tree added; the real index is left alone."""
        fd, scratch = tempfile.mkstemp(prefix="index.ai-fix-", dir=self.state.git_dir)
        os.close(fd)
        try:
            shutil.copyfile(Path(self.state.git_dir) / "index", scratch)
            env = {"GIT_INDEX_FILE": scratch}
            self.git("add", "-A", env=env)
            yield env
        finally:
            Path(scratch).unlink(missing_ok=True)

    def _staged_stats(self, env: dict[str, str] | None = None, against: str | None = None) -> DiffStats:
        """What the index (or the scratch index in `env`) holds against the base commit (or `against`)."""
        base = ["diff", "--cached", "--no-renames", "-z"]
        raw = self.git(*base, "--raw", against or self.base_sha, env=env).stdout
        numstat = self.git(*base, "--numstat", against or self.base_sha, env=env).stdout
        return parse_stats(raw, numstat)

    def git(
        self,
        *args: str,
        check: bool = True,
        env: dict[str, str] | None = None,
        secrets: list[str] | None = None,
        input: bytes | None = None,
        timeout: int = LOCAL_TIMEOUT,
    ) -> subprocess.CompletedProcess[bytes]:
        located = [f"--git-dir={self.state.git_dir}", f"--work-tree={self.state.tree}", *args]
        return self._run(
            located, check=check, env=env, secrets=secrets, input=input, timeout=timeout, cwd=self.state.tree
        )

    def _run(
        self,
        args: list[str],
        *,
        check: bool = True,
        env: dict[str, str] | None = None,
        secrets: list[str] | None = None,
        input: bytes | None = None,
        timeout: int = LOCAL_TIMEOUT,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        return run_git(
            args,
            hooks=self.state.hooks,
            cwd=cwd or self.root,
            check=check,
            env=env,
            secrets=secrets,
            input=input,
            timeout=timeout,
        )
