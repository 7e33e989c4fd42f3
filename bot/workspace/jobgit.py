"""git on one job directory: the git directory and the tree always named, hooks off, setup's outputs ignored.

The git directory is kept outside the tree because code running in the sandbox can write anything in
the tree: a `.git/config` it wrote (`core.fsmonitor`, filter drivers, hooks) would run on the host
the next time ai-fix ran git. Every git command is given `--git-dir` and `--work-tree` explicitly
and never reads the tree's `.git` file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bot.workspace.gitcmd import LOCAL_TIMEOUT, WorkspaceError, parse_stats, run_git
from bot.workspace.models import DiffStats
from bot.workspace.unwritten import SETUP_OUTPUTS


@dataclass(frozen=True)
class JobGit:
    """The git commands of one job directory (see the module docstring)."""

    root: Path
    """The job directory: where git runs unless told otherwise, and where setup's excludes file is."""
    hooks: str
    """An empty directory (`core.hooksPath`), so no repository hook ever runs."""
    git_dir: str
    tree: str

    @property
    def path(self) -> Path:
        """The working tree."""
        return Path(self.tree)

    @property
    def head_sha(self) -> str:
        """The last checkpoint (or the base commit before the first one)."""
        return self.resolve("HEAD")

    def git(
        self,
        *args: str,
        check: bool = True,
        env: dict[str, str] | None = None,
        secrets: list[str] | None = None,
        input: bytes | None = None,
        timeout: int = LOCAL_TIMEOUT,
    ) -> subprocess.CompletedProcess[bytes]:
        """git on the job's git directory and tree."""
        excludes = self.root / SETUP_OUTPUTS
        ignoring = ["-c", f"core.excludesFile={excludes}"] if excludes.exists() else []
        located = [*ignoring, f"--git-dir={self.git_dir}", f"--work-tree={self.tree}", *args]
        return self.run(located, check=check, env=env, secrets=secrets, input=input, timeout=timeout, cwd=self.tree)

    def run(
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
        """git with `args` as given (a clone, `-C` another repository), in the job directory unless `cwd`."""
        return run_git(
            args,
            hooks=self.hooks,
            cwd=cwd or self.root,
            check=check,
            env=env,
            secrets=secrets,
            input=input,
            timeout=timeout,
        )

    def resolve(self, rev: str, *, prefix: list[str] | None = None) -> str:
        """The commit sha `rev` names; `prefix` (`-C repo`) resolves in another repository instead."""
        if rev.startswith("-"):
            raise WorkspaceError(f"refusing revision {rev!r}: it looks like an option")
        args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
        done = self.run([*prefix, *args], check=False) if prefix else self.git(*args, check=False)
        if done.returncode != 0:
            raise WorkspaceError(f"no commit {rev!r} in the repository: check the branch or commit name")
        return done.stdout.decode().strip()

    @contextmanager
    def scratch_index(self) -> Iterator[dict[str, str]]:
        """An environment whose index is a copy of the real one with the whole tree added; the real index is left alone."""
        fd, scratch = tempfile.mkstemp(prefix="index.ai-fix-", dir=self.git_dir)
        os.close(fd)
        try:
            shutil.copyfile(Path(self.git_dir) / "index", scratch)
            env = {"GIT_INDEX_FILE": scratch}
            self.git("add", "-A", env=env)
            yield env
        finally:
            Path(scratch).unlink(missing_ok=True)

    def staged_stats(self, against: str, env: dict[str, str] | None = None) -> DiffStats:
        """What the index (or the scratch index in `env`) holds against the commit `against`."""
        base = ["diff", "--cached", "--no-renames", "-z"]
        raw = self.git(*base, "--raw", against, env=env).stdout
        numstat = self.git(*base, "--numstat", against, env=env).stdout
        return parse_stats(raw, numstat)
