"""The container engines (podman, docker): the command line and environment ai-fix runs them with, probes."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Literal

Engine = Literal["podman", "docker"]

CONTAINERS_CONF = "[containers]\n# The engine's default ulimits cannot be applied on some hosts; limits come from ai-fix's flags.\ndefault_ulimits = []\n"


def containers_conf() -> Path:
    """ai-fix's own containers.conf for podman, written once per user (users need not set anything)."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    path = base / "ai-fix" / "containers.conf"
    if not path.is_file() or path.read_text() != CONTAINERS_CONF:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CONTAINERS_CONF)
    return path


def engine_command(engine: Engine) -> list[str]:
    """The engine binary plus global flags: podman uses runc when it is installed."""
    if engine == "podman" and shutil.which("runc"):
        return ["podman", "--runtime", "runc"]
    return [engine]


def engine_env(engine: Engine) -> dict[str, str]:
    env = dict(os.environ)
    if engine == "podman" and "CONTAINERS_CONF" not in env:
        env["CONTAINERS_CONF"] = str(containers_conf())
    return env


@cache
def probe_engine(engine: Engine) -> str | None:
    """Why the engine cannot run containers here (with the fix), or None when it can."""
    if shutil.which(engine) is None:
        fix = (
            "install podman and runc (Debian: apt-get install podman runc)"
            if engine == "podman"
            else "install Docker Engine"
        )
        return f"{engine}: not installed; {fix}"
    try:
        info = run_engine(engine, "info", timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{engine}: `{engine} info` failed ({exc}); check the engine's installation"
    if info.returncode != 0:
        detail = last_line(info.stderr, f"exit {info.returncode}")
        fix = (
            "start the Docker daemon (systemctl start docker) or use podman"
            if engine == "docker"
            else "install runc and check `podman info`"
        )
        return f"{engine}: the engine does not run ({detail}); {fix}"
    return None


def run_engine(
    engine: Engine, *args: str, timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """One engine command, its output captured; never raises on a non-zero exit."""
    return subprocess.run(
        [*engine_command(engine), *args],
        env=engine_env(engine),
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def last_line(stderr: bytes, fallback: str) -> str:
    """The engine's own message: the last line it wrote to stderr."""
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else fallback
