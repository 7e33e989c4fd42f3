"""The one interface every sandbox backend implements."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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


def _quiet(line: str) -> None:
    return None


@dataclass(frozen=True)
class SandboxJob:
    """What a job tells its sandbox before it starts."""

    repo: str = ""
    """"owner/name", or a local path: setup snapshots and package caches are kept per repository."""
    commands: tuple[str, ...] = ()
    """The job's setup and check commands: bwrap mounts what they resolve to on the host's PATH."""
    setup_key: str = ""
    """A digest of the setup commands and the files they depend on; empty when there is no setup."""
    cache_dir: Path | None = None
    """bwrap: the repository's folder for package-manager caches, mounted for setup commands only."""
    keep_snapshots: int = 3
    """Container backends: setup snapshots kept per repository (0: none are made)."""
    progress: Callable[[str], None] = _quiet
    """Where lines about slow preparation go (an image pull), for the job's events."""


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
        """Bring the sandbox up (image pulled and container started, bwrap prepared)."""

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        setup: bool = False,
        output_cap: int = 65536,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run a shell command in the workspace; the whole process tree dies at the timeout.

        `setup`: a setup command (network under `network: setup`, the package caches on bwrap).
        `env` adds variables for this one command on top of the sandbox's allowlisted environment.
        """

    def restore_setup(self) -> str | None:
        """Put a snapshot of this setup (made by an earlier job of the repository) into the workspace.

        The snapshot's name when that worked (setup need not run), else None.
        """

    def save_setup(self, outputs: Sequence[str]) -> str | None:
        """After setup succeeded: keep what it made (workspace-relative `outputs`) for the repository's later jobs.

        The snapshot's name, or None when this backend keeps none (or it could not be made).
        """

    def forget_setup(self) -> None:
        """After setup commands that had setup secrets: drop what they left outside the workspace (the artifact
        directory; a container's /tmp, where HOME is), so the checks find nothing of setup's but the workspace,
        which is searched for the secrets."""

    def missing_command(self, program: str) -> str:
        """Why `program` is not found in this sandbox, and what would add it."""

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        """The file `name` in `artifact_dir`, or None when it is missing, not a regular file or over `limit`."""

    def close(self) -> None:
        """Tear the sandbox down; safe to call twice."""
