"""Choosing and opening a sandbox backend by name (`AIFIX_SANDBOX`, `ai-fix run --sandbox`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from bot.contract.models import SandboxConfig
from bot.errors import SandboxUnavailable
from bot.sandbox.base import Sandbox, SandboxJob
from bot.sandbox.bwrap import BwrapSandbox
from bot.sandbox.container import ContainerSandbox
from bot.sandbox.engine import Engine, probe_engine
from bot.sandbox.none import NoSandbox
from bot.sandbox.pull import ImageUnavailable

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("auto", "podman", "docker", "bwrap", "none")
ENGINES: dict[str, Engine] = {"podman": "podman", "docker": "docker"}
AUTO_ORDER: tuple[Literal["podman", "docker", "bwrap"], ...] = ("podman", "docker", "bwrap")


def build_sandbox(
    kind: str,
    workspace: Path,
    config: SandboxConfig,
    *,
    env: Mapping[str, str] | None = None,
    ro_paths: Sequence[Path] = (),
    job: SandboxJob | None = None,
) -> Sandbox:
    """The backend `kind` (not `auto`), constructed but not started."""
    if (engine := ENGINES.get(kind)) is not None:
        return ContainerSandbox(engine, workspace, config, env=env, ro_paths=ro_paths, job=job)
    if kind == "bwrap":
        return BwrapSandbox(workspace, config, env=env, ro_paths=ro_paths, job=job)
    if kind == "none":
        return NoSandbox(workspace, config, env=env)
    raise SandboxUnavailable(f"unknown sandbox {kind!r}; use one of {', '.join(KINDS)}")


def open_sandbox(
    kind: str,
    workspace: Path,
    config: SandboxConfig,
    *,
    env: Mapping[str, str] | None = None,
    ro_paths: Sequence[Path] = (),
    job: SandboxJob | None = None,
) -> Sandbox:
    """A started sandbox over `workspace`; the caller closes it.

    `env` adds variables to the allowlisted environment; `ro_paths` are host directories mounted
    read-only at the same path (toolchains outside /usr). Both are the operator's, never the repository's.
    `job` says what the job will run (its repository, commands and setup key).
    `auto` tries podman, docker, then bwrap, and says why each one it skipped could not be used; an
    engine that works but cannot get the job's image is not skipped: that ends the job (ImageUnavailable).
    """
    if kind != "auto":
        sandbox = build_sandbox(kind, workspace, config, env=env, ro_paths=ro_paths, job=job)
        sandbox.start()
        return sandbox
    reasons: list[str] = []
    for candidate in AUTO_ORDER:
        if (candidate == "podman" or candidate == "docker") and (reason := probe_engine(candidate)):
            reasons.append(reason)
            continue
        sandbox = build_sandbox(candidate, workspace, config, env=env, ro_paths=ro_paths, job=job)
        try:
            sandbox.start()
        except ImageUnavailable:
            raise
        except SandboxUnavailable as exc:
            reasons.append(str(exc))
            continue
        if reasons:
            log.warning("sandbox auto: using %s; skipped: %s", candidate, "; ".join(reasons))
        return sandbox
    raise SandboxUnavailable("no sandbox backend works on this machine: " + "; ".join(reasons))
