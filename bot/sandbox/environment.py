"""The environment commands see: built from an allowlist, never inherited (no secret of ai-fix's gets in)."""

from __future__ import annotations

import os
from collections.abc import Mapping

PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""Host variables copied in when set; everything else the host holds stays out."""

WORKDIR = "/workspace"
ARTIFACT_DIR = "/run/ai-fix"
HOME = "/tmp/home"


def sandbox_env(
    *, path: str | None, extra: Mapping[str, str] | None = None, host: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables for one command: a fixed base, allowlisted host locale settings, then `extra`.

    `path` None leaves PATH to the image's default (containers); bwrap passes the host's PATH.
    """
    host = os.environ if host is None else host
    env = {name: host[name] for name in PASSED_THROUGH if name in host}
    env.update({"HOME": HOME, "TMPDIR": "/tmp", "CI": "true", "AI_FIX_ARTIFACTS": ARTIFACT_DIR})
    if path is not None:
        env["PATH"] = path
    env.update(extra or {})
    return env


def host_sandbox_env(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """`sandbox_env` for backends that run the host's own binaries (bwrap, none): the host's PATH, then `layers` in order."""
    extra: dict[str, str] = {}
    for layer in layers:
        extra.update(layer or {})
    return sandbox_env(path=os.environ.get("PATH", "/usr/bin:/bin"), extra=extra)
