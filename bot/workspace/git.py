"""A job's git workspace on the host: a fresh branch, checkpoints, diff, push.

Layout of a job directory `dest` (the sandbox mounts only `dest/tree`):

    dest/tree/            the working tree the model edits and the checks run in
    dest/git/             the git directory (clones); local mode uses the user's repo's worktree dir
    dest/hooks/           empty: `core.hooksPath` points here, so no repository hook ever runs
    dest/workspace.json   what `bot.workspace.opening.resume` needs after a crash

A workspace is made by `bot.workspace.opening`; git is run on it by `bot.workspace.jobgit` (the git
directory kept outside the tree, and why), and how git itself is run (safety config, environment,
the token) is `bot.workspace.gitcmd`.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from bot.workspace.checkpoint import checkpoint, put_back_unwritten, rollback, save_work
from bot.workspace.gate import PatchGate
from bot.workspace.gitcmd import LOCAL_TIMEOUT, NETWORK_TIMEOUT, WorkspaceError, auth_env, check_remote_url
from bot.workspace.jobdir import WorkspaceState
from bot.workspace.jobgit import JobGit
from bot.workspace.models import DiffStats
from bot.workspace.overlay import attempts_ref, has_commit, keep_attempt, laid_over
from bot.workspace.unwritten import SETUP_OUTPUTS, add_excludes, untracked


class Workspace:
    """One job's checkout: edit in `path`, `checkpoint` accepted steps, `rollback` the rest, `push` the branch."""

    def __init__(self, root: Path, state: WorkspaceState) -> None:
        self.root = root
        self.state = state
        self._git = JobGit(root, state.hooks, state.git_dir, state.tree)

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
        return self._git.head_sha

    def diff(self, against: str | None = None) -> str:
        """The whole change against the base commit (or `against`), untracked files included, as a unified diff."""
        with self._git.scratch_index() as env:
            options = ["--cached", "--no-renames", "--no-ext-diff", "--no-textconv"]
            done = self.git("diff", *options, against or self.base_sha, env=env)
        return done.stdout.decode("utf-8", "replace")

    def commit_diff(self, sha: str) -> str:
        """What one checkpoint changed against its parent, as a unified diff."""
        done = self.git("show", "--format=", "--no-renames", "--no-ext-diff", "--no-textconv", sha)
        return done.stdout.decode("utf-8", "replace")

    def stats(self, against: str | None = None) -> DiffStats:
        """Files and line counts of the change against the base commit (or `against`), untracked files included."""
        with self._git.scratch_index() as env:
            return self._git.staged_stats(against or self.base_sha, env)

    def describe(self) -> str:
        """`git describe --tags --long --always` of the evidence base (what a VCS version plugin reads), "" on error."""
        done = self.git(
            "describe", "--tags", "--long", "--always", "--match", "*[0-9]*", self.evidence_base, check=False
        )
        return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""

    def read_base(self, path: str) -> bytes | None:
        """A file's bytes at the base commit, None when it did not exist there (the gate's base reader)."""
        done = self.git("cat-file", "blob", f"{self.base_sha}:{path}", check=False)
        return done.stdout if done.returncode == 0 else None

    # ---- changing it (`bot.workspace.checkpoint`) ------------------------------------------

    def checkpoint(self, message: str, *, gate: PatchGate | None = None) -> str | None:
        """Commit the tree as one accepted step; None when nothing changed since the last one.

        With a gate, only what was written through it and only within the policy; PolicyViolation otherwise.
        """
        return checkpoint(self._git, self.base_sha, message, gate)

    def put_back_unwritten(self, gate: PatchGate) -> None:
        """Put back every change not written through `gate` (what the checks wrote); the paths join `gate.discarded`."""
        put_back_unwritten(self._git, gate)

    def untracked(self) -> set[str]:
        """Untracked paths git does not ignore (a new folder as one `dir/` entry)."""
        return untracked(self._git)

    def keep_out(self, paths: Iterable[str]) -> list[str]:
        """Ignore `paths` in this workspace from now on (what setup wrote): never put back, committed or cleaned."""
        return add_excludes(self.root / SETUP_OUTPUTS, paths)

    def save_work(self, message: str, *, gate: PatchGate) -> str:
        """Commit whatever is left so the branch holds it, or keep a refused change on the attempts ref;
        "" when it is on the branch, else where it went and why."""
        return save_work(self._git, self.base_sha, self.branch, message, gate)

    def laid_over(self, base: str, keep: Sequence[str] = ()) -> AbstractContextManager[None]:
        """Inside, the tree holds `base`'s files with the change's own `keep` paths on top; after, the change again."""
        return laid_over(self._git, base, keep)

    def keep_attempt(self, message: str) -> str | None:
        """Commit what the tree holds beyond the last checkpoint onto the attempts ref (HEAD stays); its sha."""
        return keep_attempt(self._git, self.branch, message)

    @property
    def has_attempts(self) -> bool:
        """Whether this workspace kept a rolled-back attempt (its attempts ref exists)."""
        return has_commit(self._git, self.attempts_ref)

    @property
    def attempts_ref(self) -> str:
        """Where rolled-back attempts are kept, for a person to fetch: `refs/ai-fix/attempts/<branch>`
        (`bot.workspace.overlay.ATTEMPTS`: no workflow runs on it)."""
        return attempts_ref(self.branch)

    @property
    def evidence_base(self) -> str:
        """The commit the evidence is taken against: the pull request's original base in later rounds."""
        return self.state.evidence_base or self.base_sha

    def rollback(self) -> str:
        """Back to the last checkpoint: tracked files restored, untracked files removed (ignored ones kept)."""
        return rollback(self._git)

    def push(self, token: str | None = None, remote_url: str | None = None, *, attempts: bool = False) -> None:
        """Push the branch (up to the last checkpoint), or with `attempts` the attempts ref; never forced."""
        url = remote_url or self.state.remote_url
        if not url:
            raise WorkspaceError(
                f"nothing to push: this local workspace's work is on branch {self.branch} in {self.state.repo}; "
                "pass remote_url= to push it somewhere else"
            )
        check_remote_url(url)
        ref = f"{self.attempts_ref}:{self.attempts_ref}" if attempts else None
        env, secrets = (auth_env(token, url), [token]) if token else (None, [])
        refspec = ref or f"HEAD:refs/heads/{self.branch}"
        self.git("push", "-q", "--no-verify", "--", url, refspec, env=env, secrets=secrets, timeout=NETWORK_TIMEOUT)

    def remove(self, *, keep_branch: bool = True) -> None:
        """Delete the job directory; in local mode the worktree is unregistered and the branch kept in the user's repo
        (deleted there too when not `keep_branch`: a planning run's, which made no commit)."""
        if self.state.kind == "local":
            self._git.run(["-C", self.state.repo, "worktree", "remove", "--force", self.state.tree], check=False)
            if not keep_branch:
                self._git.run(["-C", self.state.repo, "branch", "-D", self.state.branch], check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def git(
        self,
        *args: str,
        check: bool = True,
        env: dict[str, str] | None = None,
        secrets: list[str] | None = None,
        input: bytes | None = None,
        timeout: int = LOCAL_TIMEOUT,
    ) -> subprocess.CompletedProcess[bytes]:
        """git on the job's git directory and tree (`bot.workspace.jobgit`)."""
        return self._git.git(*args, check=check, env=env, secrets=secrets, input=input, timeout=timeout)
