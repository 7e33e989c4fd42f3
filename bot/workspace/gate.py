"""The patch gate: every change the model proposes is checked here before it touches the workspace.

A path is canonicalised first (relative, no `..`, no NUL or control characters, no `.git` in any
spelling a filesystem might treat as `.git`, no symlink anywhere on it), then matched against the
contract's scope and the globs no job may touch (`bot.workspace.pathrules`), then the write is checked
for size, binary content and the budget's file and line limits. Refusals are GateDecisions whose reason the model can act on.

Pure apart from reading the workspace (lstat of the path's parts, the file's current bytes);
`apply_write` is the one function that writes, and it never follows a symlink.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from bot.contract.models import Budget, Scope
from bot.errors import AiFixError
from bot.workspace.models import DiffStats, FileChange, GateDecision
from bot.workspace.nofollow import NotRegularFile, read_nofollow, write_nofollow
from bot.workspace.pathrules import GateRefusal, canonical_path, check_on_disk, check_scope

MAX_FILE_BYTES = 1 << 20
"""Largest file the model may write (1 MiB); source files are far smaller."""

BaseReader = Callable[[str], bytes | None]
"""Reads a workspace-relative file as it was at the base commit; None when it did not exist."""


class Tree(Protocol):
    """A working tree the gate guards (`bot.workspace.git.Workspace`)."""

    @property
    def path(self) -> Path: ...

    def read_base(self, path: str) -> bytes | None: ...


_SYMLINK, _SUBMODULE, _EXECUTABLE = "120000", "160000", "100755"


def line_counts(old: bytes | None, new: bytes | None) -> tuple[int, int]:
    """Lines added and removed going from old to new, as `git diff --numstat` would count them."""
    a = (old or b"").splitlines(keepends=True)
    b = (new or b"").splitlines(keepends=True)
    # Trim the common head and tail first: edits are local, and SequenceMatcher is quadratic at worst.
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def is_binary(data: bytes) -> bool:
    """NUL bytes or invalid UTF-8: not a text file ai-fix may write."""
    if b"\x00" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


class PatchGate:
    """Decides whether a change may be made in the workspace at `root`, under a contract's scope and budget."""

    def __init__(
        self,
        root: Path | str,
        scope: Scope,
        budget: Budget,
        *,
        max_file_bytes: int = MAX_FILE_BYTES,
        base_reader: BaseReader | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.scope = scope
        self.budget = budget
        self.max_file_bytes = max_file_bytes
        # Without a base reader, a second write to a file already changed is counted on top of the
        # first (an overestimate); Workspace.read_base gives exact counts.
        self.base_reader = base_reader
        self.written: dict[str, bytes] = {}
        """What was written through the gate since the last checkpoint, by path: all a checkpoint keeps."""
        self.discarded: list[str] = []
        """Paths checkpoints put back because nothing was written to them through the gate (the checks changed
        them); the loop takes them for the trace (`take_discarded`)."""

    def take_discarded(self) -> list[str]:
        """The paths put back since last taken, each once, sorted."""
        taken, self.discarded = sorted(set(self.discarded)), []
        return taken

    @classmethod
    def over(cls, tree: Tree, scope: Scope, budget: Budget) -> PatchGate:
        """The gate for `tree` under a scope and budget, counting lines against the base commit."""
        return cls(tree.path, scope, budget, base_reader=tree.read_base)

    def check_path(self, path: str) -> GateDecision:
        """May a file at this path be created, changed or deleted?"""
        try:
            rel = canonical_path(path)
            check_scope(rel, self.scope)
            check_on_disk(self.root, rel)
        except GateRefusal as refusal:
            return GateDecision(
                allowed=False, path=path if isinstance(path, str) else repr(path), reason=refusal.reason
            )
        return GateDecision(allowed=True, path=rel)

    def check_write(self, path: str, content: bytes | str, current: DiffStats) -> GateDecision:
        """May `content` be written to `path`, given the change so far (`current`, against the base commit)?"""
        decision = self.check_path(path)
        if not decision.allowed:
            return decision
        rel = decision.path
        try:
            data = _as_bytes(content)
            if len(data) > self.max_file_bytes:
                raise GateRefusal(
                    f"{rel}: {len(data)} bytes is over the {self.max_file_bytes}-byte limit for one file; "
                    "write a smaller file or split it"
                )
            if is_binary(data):
                raise GateRefusal(f"{rel}: binary content is refused; ai-fix only writes text (UTF-8, no NUL bytes)")
            self._check_budget(rel, data, current)
        except GateRefusal as refusal:
            return GateDecision(allowed=False, path=rel, reason=refusal.reason)
        return decision

    def violations(self, stats: DiffStats) -> list[GateDecision]:
        """Refusals for a whole change (what a checkpoint would commit); empty when all of it may be kept.

        Catches what did not come through check_write: files the project's checks wrote in the sandbox,
        new symlinks, submodules, executable bits, binaries, and the budget's limits.
        """
        refused = [d for d in (self._check_change(f) for f in stats.files) if d is not None]
        if len(stats.files) > self.budget.max_files_changed:
            refused.append(GateDecision(allowed=False, path="", reason=self._too_many_files(len(stats.files))))
        if stats.lines > self.budget.max_lines_changed:
            refused.append(GateDecision(allowed=False, path="", reason=self._too_many_lines(stats.lines)))
        return refused

    def _check_change(self, change: FileChange) -> GateDecision | None:
        if change.status != "D":
            decision = self.check_path(change.path)
        else:
            # A deleted file has nothing on disk to inspect; only the path and scope rules apply.
            try:
                check_scope(canonical_path(change.path), self.scope)
            except GateRefusal as refusal:
                return GateDecision(allowed=False, path=change.path, reason=refusal.reason)
            return None
        if not decision.allowed:
            return decision
        reason = ""
        if change.new_mode == _SYMLINK:
            reason = f"{change.path}: symlinks are refused; commit the file itself"
        elif change.new_mode == _SUBMODULE:
            reason = f"{change.path}: nested repositories and submodules are refused"
        elif change.new_mode == _EXECUTABLE and change.old_mode != _EXECUTABLE:
            reason = f"{change.path}: making a file executable is refused; leave its mode as it was"
        elif change.binary:
            reason = f"{change.path}: binary content is refused; ai-fix only changes text files"
        elif _size(self.root / change.path) > self.max_file_bytes:
            reason = f"{change.path}: over the {self.max_file_bytes}-byte limit for one file"
        return GateDecision(allowed=False, path=change.path, reason=reason) if reason else None

    def _check_budget(self, rel: str, data: bytes, current: DiffStats) -> None:
        others = [f for f in current.files if f.path != rel]
        entry = next((f for f in current.files if f.path == rel), None)
        if self.base_reader is not None:
            base = self.base_reader(rel)
            added, removed = line_counts(base, data)
            touched = base != data
        else:
            on_disk = read_nofollow(self.root, rel)
            added, removed = line_counts(on_disk, data)
            touched = entry is not None or on_disk != data
            if entry is not None:
                added, removed = added + entry.added, removed + entry.removed
        files = len(others) + int(touched)
        lines = sum(f.added + f.removed for f in others) + added + removed
        if files > self.budget.max_files_changed:
            raise GateRefusal(self._too_many_files(files))
        if lines > self.budget.max_lines_changed:
            raise GateRefusal(self._too_many_lines(lines))

    def _too_many_files(self, files: int) -> str:
        return (
            f"the change would touch {files} files, over the limit of {self.budget.max_files_changed} "
            "(budget.max_files_changed); change fewer files or undo changes you no longer need"
        )

    def _too_many_lines(self, lines: int) -> str:
        return (
            f"the change would add and remove {lines} lines in all, over the limit of "
            f"{self.budget.max_lines_changed} (budget.max_lines_changed); make a smaller change"
        )


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _as_bytes(content: bytes | str) -> bytes:
    if isinstance(content, bytes):
        return content
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise GateRefusal("content is not valid text (unpaired surrogate characters); write UTF-8 text") from None


def apply_write(workspace: Tree, path: str, content: bytes | str, gate: PatchGate, current: DiffStats) -> GateDecision:
    """Write `content` to `path` in the workspace only when the gate allows it; the decision says what happened."""
    root = Path(os.path.realpath(workspace.path))
    if root != gate.root:
        raise AiFixError(
            f"the patch gate guards {gate.root}, not this workspace ({root}); build the gate with PatchGate.over(workspace, ...)"
        )
    decision = gate.check_write(path, content, current)
    if not decision.allowed:
        return decision
    try:
        data = _as_bytes(content)
        write_nofollow(root, decision.path, data)
        gate.written[decision.path] = data
    except GateRefusal as refusal:
        return GateDecision(allowed=False, path=decision.path, reason=refusal.reason)
    except NotRegularFile as refusal:
        return GateDecision(allowed=False, path=decision.path, reason=str(refusal))
    except OSError as exc:
        # ELOOP/ENOTDIR here means a symlink or file appeared on the path after the check.
        return GateDecision(
            allowed=False,
            path=decision.path,
            reason=f"{decision.path}: not written ({exc.strerror}); check the path and retry",
        )
    return decision
