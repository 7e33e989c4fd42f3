"""The environment commands see: built from an allowlist, never inherited (no secret of ai-fix's gets in).

On top of the allowlist every command gets the project environment's places (`bot.envdir`): its
virtual environment's `bin` first on PATH, and the Go and Cargo stores inside it, so what setup
installs is what the checks use, on every backend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from bot.envdir import ENV_DIR, VENV_BIN

PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""Host variables copied in when set; everything else the host holds stays out."""

WORKDIR = "/workspace"
ARTIFACT_DIR = "/run/ai-fix"
HOME = "/tmp/home"
SETUP_CACHE = "/tmp/ai-fix-cache"
"""bwrap: where the repository's package-manager cache folder appears, for setup commands only."""
SETUP_CACHE_ENV = {
    "PIP_CACHE_DIR": f"{SETUP_CACHE}/pip",
    "POETRY_CACHE_DIR": f"{SETUP_CACHE}/poetry",
    "PDM_CACHE_DIR": f"{SETUP_CACHE}/pdm",
    "npm_config_cache": f"{SETUP_CACHE}/npm",
    "YARN_CACHE_FOLDER": f"{SETUP_CACHE}/yarn",
}
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The host's system directories: bwrap binds them read-only (symlinks among them, a merged /usr, as symlinks);
toolchains elsewhere are mounted one by one."""


def project_env(workdir: str) -> dict[str, str]:
    """The package managers' stores inside the workspace's environment folder (absolute paths, as Go requires)."""
    base = f"{workdir}/{ENV_DIR}"
    # GOCACHE too: under HOME (a fresh /tmp for every bwrap command) every check would build the standard library again.
    return {
        "GOMODCACHE": f"{base}/go/mod",
        "GOCACHE": f"{base}/go/cache",
        "GOFLAGS": "-modcacherw",
        "CARGO_HOME": f"{base}/cargo",
    }


def venv_first(workdir: str, path: str) -> str:
    """PATH with the project's virtual environment first."""
    return f"{workdir}/{VENV_BIN}:{path}"


def sandbox_env(
    *, path: str | None, workdir: str, extra: Mapping[str, str] | None = None, host: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables for one command: a fixed base, allowlisted host locale settings, the project's stores, then `extra`.

    `path` None leaves PATH to the image's default (containers); bwrap passes the host's PATH.
    """
    host = os.environ if host is None else host
    env = {name: host[name] for name in PASSED_THROUGH if name in host}
    env.update({"HOME": HOME, "TMPDIR": "/tmp", "CI": "true", "AI_FIX_ARTIFACTS": ARTIFACT_DIR})
    env.update(project_env(workdir))
    if path is not None:
        env["PATH"] = path
    env.update(extra or {})
    return env


def host_sandbox_env(workdir: str, front: Sequence[str], *layers: Mapping[str, str] | None) -> dict[str, str]:
    """`sandbox_env` for backends that run the host's own binaries (bwrap, none): the host's PATH, then `layers` in order.

    PATH ends up as the project's virtual environment, then the `front` folders (real interpreters behind shims), then the rest.
    """
    extra: dict[str, str] = {}
    for layer in layers:
        extra.update(layer or {})
    env = sandbox_env(path=os.environ.get("PATH", "/usr/bin:/bin"), workdir=workdir, extra=extra)
    env["PATH"] = venv_first(workdir, ":".join([*front, env["PATH"]]))
    return env
