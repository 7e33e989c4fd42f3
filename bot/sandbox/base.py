"""The one interface every sandbox backend implements."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from bot.contract.models import SandboxConfig


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

    @property
    def name(self) -> str:
        """The backend: podman, docker, bwrap or none."""

    workspace: Path
    config: SandboxConfig
    """The limits and image it was opened with."""
    workdir: str
    """Where the workspace appears inside the sandbox (paths in tracebacks start with it)."""
    artifact_dir: str
    """A directory inside the sandbox whose files the harness can read back (junit XML, reports)."""

    def start(self) -> None:
        """Bring the sandbox up (container started, bwrap prepared)."""

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        network: bool = False,
        output_cap: int = 65536,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run a shell command in the workspace; the whole process tree dies at the timeout.

        `env` adds variables for this one command on top of the sandbox's allowlisted environment.
        """

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        """The file `name` in `artifact_dir`, or None when it is missing, not a regular file or over `limit`."""

    def close(self) -> None:
        """Tear the sandbox down; safe to call twice."""
