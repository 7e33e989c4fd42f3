"""The host side of the container's command server (`shell_server.sh`): reading a command's output and its status line."""

from __future__ import annotations

import os
import selectors
import time
from importlib import resources

from bot.sandbox.capture import CHUNK, HeadTail

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
