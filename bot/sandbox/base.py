"""The one interface every sandbox backend implements."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import BaseModel


class ExecResult(BaseModel):
    exit_code: int | None
    """None when the process was killed before it exited."""
    output: str
    """Combined stdout and stderr, head and tail kept within the cap."""
    dropped_bytes: int = 0
    duration_s: float
    timed_out: bool = False
    killed: str | None = None
    """Why the sandbox killed it (memory, processes), when known."""


class Sandbox(Protocol):
    """One per job, kept for the job's lifetime; the workspace is mounted writable inside it."""

    name: str
    workspace: Path

    def start(self) -> None:
        """Bring the sandbox up (container started, bwrap prepared)."""

    def exec(self, command: str, *, timeout: float, network: bool = False, output_cap: int = 65536) -> ExecResult:
        """Run a shell command in the workspace; the whole process tree dies at the timeout."""

    def close(self) -> None:
        """Tear the sandbox down; safe to call twice."""
