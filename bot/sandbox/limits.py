"""Naming why the sandbox killed a command, from what the backend can observe."""

from __future__ import annotations

import signal

from bot.contract.models import SandboxConfig

KILL_GRACE_S = 5.0
"""How long output is still collected after the process tree was killed."""


def killed_reason(exit_code: int | None, *, oom_killed: bool, config: SandboxConfig) -> str | None:
    """Why a finished command was killed by a limit, or None when it exited on its own."""
    if oom_killed:
        return f"killed (memory limit {config.memory_mb} MiB): the out-of-memory killer ended it"
    if exit_code in (128 + signal.SIGKILL, -signal.SIGKILL):
        return f"killed by SIGKILL: most likely the {config.memory_mb} MiB memory or {config.pids} process limit"
    if exit_code in (128 + signal.SIGXCPU, -signal.SIGXCPU):
        return "killed by SIGXCPU: the CPU time limit"
    return None
