"""Running one host process with capped output, a deadline and a caller-chosen way to kill its tree."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.sandbox.base import ExecResult
from bot.sandbox.capture import HeadTail, drain
from bot.sandbox.limits import KILL_GRACE_S, killed_reason
from bot.sandbox.memory import INTERVAL_S, over_limit, tree_resident


def kill_session(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int,
    config: SandboxConfig,
    cwd: Path | None = None,
    kill: Callable[[subprocess.Popen[bytes]], None] = kill_session,
    watch_memory: bool = False,
) -> ExecResult:
    """Run `argv` in a new session, stdout and stderr merged into a head+tail buffer; `kill` it at the timeout.

    `watch_memory`: kill it too when its process tree holds more than the config's memory resident (`bot.sandbox.memory`).
    """
    buffer = HeadTail(output_cap)
    began = time.monotonic()
    deadline = began + timeout
    proc = subprocess.Popen(
        list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    memory = ""
    with proc.stdout:
        while True:
            finished = drain(proc.stdout.fileno(), buffer, min(deadline, time.monotonic() + INTERVAL_S))
            if finished or time.monotonic() >= deadline:
                break
            if watch_memory and (resident := tree_resident(proc.pid)) > config.memory_mb << 20:
                memory = over_limit(resident, config.memory_mb)
                break
        if not finished:
            kill(proc)
            drain(proc.stdout.fileno(), buffer, time.monotonic() + KILL_GRACE_S)
    code = proc.wait()
    duration = time.monotonic() - began
    if not finished and not memory:
        return ExecResult(
            exit_code=None, output=buffer.text(), dropped_bytes=buffer.dropped, duration_s=duration, timed_out=True
        )
    return ExecResult(
        exit_code=code, output=buffer.text(), dropped_bytes=buffer.dropped, duration_s=duration,
        killed=memory or killed_reason(code, oom_killed=False, config=config),
    )  # fmt: skip
