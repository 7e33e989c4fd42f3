"""The working tree shown another way for a moment, and attempts kept where a person can fetch them.

`laid_over` puts the base commit's files in the tree, with some of the change's own files laid on
top (its test files), runs what is inside, then puts the change back exactly: how the harness runs
the change's tests against the code as it was. Only tracked paths are swapped (through a private
index), so an ignored virtual environment or cache in the tree stays where it is.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from bot.markdown import unlinked


class GitTree(Protocol):
    """What these need of `bot.workspace.jobgit.JobGit`."""

    @property
    def head_sha(self) -> str: ...

    def git(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None, input: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]: ...

    def scratch_index(self) -> AbstractContextManager[dict[str, str]]: ...


def _tree_of_change(ws: GitTree) -> str:
    """The tree object of everything in the working tree now (untracked files included)."""
    with ws.scratch_index() as env:
        return ws.git("write-tree", env=env).stdout.decode().strip()


def _overlay_tree(ws: GitTree, base: str, after: str, keep: Sequence[str]) -> str:
    """`base`'s tree with each path in `keep` as it is in `after` (or absent, where the change deleted it)."""
    with ws.scratch_index() as env:
        ws.git("read-tree", base, env=env)
        for path in keep:
            entry = ws.git("ls-tree", "-z", after, "--", path, env=env).stdout.decode().strip("\0")
            if entry:
                meta, _, _ = entry.partition("\t")
                mode, _, sha = meta.split(" ")
                ws.git("update-index", "--add", "--cacheinfo", f"{mode},{sha},{path}", env=env)
            else:
                ws.git("update-index", "--force-remove", "--", path, env=env)
        return ws.git("write-tree", env=env).stdout.decode().strip()


@contextmanager
def laid_over(ws: GitTree, base: str, keep: Sequence[str] = ()) -> Iterator[None]:
    """Inside, the tree holds `base`'s files plus the change's own versions of `keep`; after, the change again."""
    after = _tree_of_change(ws)
    shown = _overlay_tree(ws, base, after, keep)
    with ws.scratch_index() as env:
        ws.git("read-tree", after, env=env)
        ws.git("read-tree", "--reset", "-u", shown, env=env)
        try:
            yield
        finally:
            ws.git("read-tree", "--reset", "-u", after, env=env)


def _commit(ws: GitTree, ref: str) -> str | None:
    known = ws.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return known.stdout.decode().strip() if known.returncode == 0 else None


ATTEMPTS = "refs/ai-fix/attempts"
"""Where a branch's rolled-back attempts are kept (`refs/ai-fix/attempts/<branch>`): outside `refs/heads/`, so
pushing them starts no workflow (`push` triggers match branches and tags only, and no pull request has them as
its head), yet anyone can fetch them by name."""
FETCHED_ATTEMPTS = "refs/remotes/origin-attempts"
"""Where a clone keeps the remote's attempts refs (fetched with the branches), for a later round to build on."""


def attempts_ref(branch: str) -> str:
    return f"{ATTEMPTS}/{branch}"


def keep_attempt(ws: GitTree, branch: str, message: str) -> str | None:
    """Commit the tree as it is now onto `branch`'s attempts ref (each attempt on top of the one before, or of
    the remote's, which an earlier round pushed), leaving HEAD alone. None when the tree holds nothing beyond
    the last checkpoint.
    """
    ref, remote = attempts_ref(branch), f"{FETCHED_ATTEMPTS}/{branch}"
    tree = _tree_of_change(ws)
    head = ws.head_sha
    if tree == ws.git("rev-parse", f"{head}^{{tree}}").stdout.decode().strip():
        return None
    parent = _commit(ws, ref) or _commit(ws, remote) or head
    sha = ws.git("commit-tree", tree, "-p", parent, input=unlinked(message).encode()).stdout.decode().strip()
    ws.git("update-ref", ref, sha)
    return sha


def has_commit(ws: GitTree, ref: str) -> bool:
    return _commit(ws, ref) is not None
