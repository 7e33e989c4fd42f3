"""Checkpoints: one accepted step committed, holding only what the model wrote through the gate and only
what the policy allows; back to the last one; what is left at the end saved, or kept aside when refused."""

from __future__ import annotations

from bot.errors import PolicyViolation
from bot.markdown import unlinked
from bot.workspace.gate import PatchGate
from bot.workspace.jobdir import restore_gitfile
from bot.workspace.jobgit import JobGit
from bot.workspace.overlay import attempts_ref, keep_attempt
from bot.workspace.unwritten import discard_unwritten


def checkpoint(git: JobGit, base_sha: str, message: str, gate: PatchGate | None) -> str | None:
    """Commit the tree as one accepted step; None when nothing changed since the last one.

    With a gate, what was not written through it is put back first (`put_back_unwritten`), then the whole
    change (against `base_sha`) is checked (symlinks, executable bits, limits): on a violation nothing is
    committed and PolicyViolation says why, so the caller can `rollback()`.
    """
    restore_gitfile(git.path, git.git_dir)
    if gate is not None:
        put_back_unwritten(git, gate)
    git.git("add", "-A")
    if git.git("diff", "--cached", "--quiet", check=False).returncode == 0:
        return None
    if gate is not None:
        refused = gate.violations(git.staged_stats(base_sha))
        if refused:
            git.git("reset", "-q")
            raise PolicyViolation("not kept: " + "; ".join(d.reason for d in refused))
    git.git("commit", "-q", "--no-verify", "--file=-", input=unlinked(message).encode())
    if gate is not None:
        gate.written.clear()  # committed: from now on a change to these files is not the model's either
    return git.head_sha


def put_back_unwritten(git: JobGit, gate: PatchGate) -> None:
    """Put back every change not written through `gate` (what the checks wrote); the paths join `gate.discarded`."""
    gate.discarded += discard_unwritten(git, gate.written)


def rollback(git: JobGit) -> str:
    """Back to the last checkpoint: tracked files restored, untracked files removed (ignored ones kept)."""
    git.git("reset", "-q", "--hard", "HEAD")
    git.git("clean", "-q", "-ffd")
    restore_gitfile(git.path, git.git_dir)
    return git.head_sha


def save_work(git: JobGit, base_sha: str, branch: str, message: str, gate: PatchGate) -> str:
    """Commit whatever is left so the branch holds it; a change the gate refuses is kept on `branch`'s attempts ref
    and rolled back instead. "" when the work was kept on the branch (or nothing was left), else where it
    went and why."""
    try:
        checkpoint(git, base_sha, message, gate)
        return ""
    except PolicyViolation as exc:
        kept = keep_attempt(git, branch, f"{message}\n\nNot kept on the branch: {exc}\n")
        rollback(git)
        where = f"kept on {attempts_ref(branch)}" if kept else "dropped"
        return f"changes outside the policy were {where} ({exc})"
