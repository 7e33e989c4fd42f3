"""The interface the execution loop uses to get relevant code into its context."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field


class Query(BaseModel):
    text: str
    """Goal, acceptance criteria and issue body."""
    failure: str = ""
    """Latest failure summary from the check runner."""
    diff: str = ""
    """Current diff against the base commit."""


class Slice(BaseModel):
    path: str
    start_line: int
    end_line: int
    blob: str = ""
    last_commit_date: str = ""
    reason: str = ""
    """Why it was chosen: definition, call site, traceback frame, named in the issue."""
    text: str = ""


class Retrieved(BaseModel):
    files: list[tuple[str, float]] = Field(default_factory=list)
    """Ranked (path, score), best first."""
    slices: list[Slice] = Field(default_factory=list)
    rendered: str = ""
    """The slices rendered to fit the budget, with provenance headers."""
    tokens: int = 0


class ContextProvider(Protocol):
    def repo_map(self, budget_tokens: int) -> str:
        """A compact map of the repository for the stable context layer."""

    def retrieve(self, query: Query, budget_tokens: int) -> Retrieved:
        """Ranked files and slices relevant to the query, rendered into the budget."""

    def refresh(self) -> object:
        """Re-index what changed in the workspace since the last call (what it reports is not read)."""
