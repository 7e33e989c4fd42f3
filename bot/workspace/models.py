"""Data the workspace hands to the loop and the PR renderer."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FileChange(BaseModel):
    path: str
    added: int
    removed: int
    status: str = "M"
    """git's letter: A added, M modified, D deleted, T type changed."""
    old_mode: str = ""
    """git's mode at the base ("100644", "100755", "120000" symlink, "160000" submodule); empty when added."""
    new_mode: str = ""
    """git's mode after the change; empty when deleted."""
    binary: bool = False
    """git saw binary content (added and removed are then 0)."""


class DiffStats(BaseModel):
    files: list[FileChange] = Field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def lines(self) -> int:
        return self.added + self.removed


class GateDecision(BaseModel):
    allowed: bool
    path: str
    """The canonical workspace-relative path, or the raw input when it could not be canonicalised."""
    reason: str = ""
    """Why it was refused, in words the model can act on."""
