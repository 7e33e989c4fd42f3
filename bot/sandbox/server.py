"""The host side of the container's command server (`shell_server.sh`): starting it, sending it a command, reading the output and status line."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from importlib import resources
from pathlib import Path

from bot.errors import SandboxUnavailable
from bot.sandbox.capture import CHUNK, HeadTail
from bot.sandbox.engine import Engine, engine_command, engine_env
from bot.sandbox.environment import WORKDIR
from bot.sandbox.identity import Identity

SERVER = resources.files("bot.sandbox").joinpath("shell_server.sh").read_text()
"""Runs inside the container as the sandbox user; one command at a time, each in its own session."""

AFTER_EXIT_GRACE_S = 0.5
"""How long output is still read after the command exited (background children may hold the pipe)."""


def collect(out_fd: int, status_fd: int, buffer: HeadTail, deadline: float) -> tuple[int, int] | None:
    """Output until EOF, and the server's `DONE n status oom-kills` line; None at the deadline or if the server died."""
    line = b""
    status: tuple[int, int] | None = None
    out_open = True
    with selectors.DefaultSelector() as sel:
        sel.register(out_fd, selectors.EVENT_READ)
        sel.register(status_fd, selectors.EVENT_READ)
        while out_open or status is None:
            now = time.monotonic()
            if now >= deadline:
                return status
            for key, _ in sel.select(deadline - now):
                if key.fd == out_fd:
                    try:
                        data = os.read(out_fd, CHUNK)
                    except BlockingIOError:
                        continue
                    if data:
                        buffer.feed(data)
                    else:
                        sel.unregister(out_fd)
                        out_open = False
                else:
                    chunk = os.read(status_fd, 4096)
                    if not chunk:
                        return None
                    line += chunk
                    if b"\n" in line:
                        status = parse_done(line.split(b"\n", 1)[0])
                        if status is None:
                            return None
                        sel.unregister(status_fd)
                        deadline = min(deadline, time.monotonic() + AFTER_EXIT_GRACE_S) if out_open else deadline
    return status


def parse_done(line: bytes) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) < 3 or parts[0] != b"DONE":
        return None
    return int(parts[2]), count(parts[3:4])


def count(parts: list[bytes]) -> int:
    return int(parts[0]) if parts and parts[0].isdigit() else 0


def open_output_pipe(path: Path, identity: Identity) -> int:
    """A named pipe for one command's output, the sandbox user's to write, opened for reading.

    Opened non-blocking before the writer exists: select() waits for the writer, EOF comes once it and its children close.
    """
    os.mkfifo(path, 0o600)
    if os.geteuid() == 0:
        os.chown(path, identity.uid, identity.gid)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


class CommandServer:
    """The shell server in the job's container, started once with `exec -i`; it runs one command at a time."""

    def __init__(self, engine: Engine, identity: Identity, cwd: Path) -> None:
        self._engine = engine
        self._cmd = engine_command(engine)
        self._env = engine_env(engine)
        self._identity = identity
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._oom_kills = 0
        """The container's OOM-kill count when the last command ended: a rise means the OOM killer struck."""

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, container: str, image: str) -> None:
        """Start the server in `container` (which runs `image`, named in the error when it has no shell)."""
        proc = subprocess.Popen(
            [*self._cmd, "exec", "-i", "--user", self._identity.spec, "-w", WORKDIR, container, "sh", "-c", SERVER],
            env=self._env,
            cwd=self._cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if not ready.startswith(b"READY"):
            proc.kill()
            proc.wait()
            raise SandboxUnavailable(
                f"{self._engine}: cannot start a shell in the job's container; the image {image!r} needs /bin/sh and sleep"
            )
        self._oom_kills = count(ready.split()[1:2])
        self._proc = proc

    def send(self, n: int, out_fd: int, buffer: HeadTail, deadline: float) -> tuple[int, bool] | None:
        """Run command `n`, its output read from `out_fd` into `buffer`: its exit status and whether the
        OOM killer struck meanwhile, or None at the deadline or when the server died."""
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(f"{n}\n".encode())
            self._proc.stdin.flush()
            status = collect(out_fd, self._proc.stdout.fileno(), buffer, deadline)
        except (BrokenPipeError, OSError):
            return None
        if status is None:
            return None
        code, oom = status
        oom_killed = oom > self._oom_kills
        self._oom_kills = oom
        return code, oom_killed

    def stop(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
