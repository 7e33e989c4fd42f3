"""Run an ASGI app under a real uvicorn on loopback, in a thread; wait for a process to answer; count TCP connections."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn


@contextmanager
def serve(app: Any, *, timeout: float = 10.0, host: str = "127.0.0.1") -> Iterator[str]:
    """Yield the base URL of `app` served on `host` (a free port); lifespan runs, shutdown is graceful.

    `host="0.0.0.0"`: also reachable from containers (the URL still names loopback)."""
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=0, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)


def wait_for_http(url: str, process: subprocess.Popen[bytes], log: Path, *, timeout: float = 30.0) -> None:
    """Return once `url` answers 200; raise with the process's log if it exits or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{process.args!r} did not start:\n{log.read_text()}")
        time.sleep(0.05)


@contextmanager
def tcp_listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP listener on loopback: its port, and a list that gets each peer whose connection it accepted."""
    accepted: list[object] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=serve, name="tcp-listener-test", daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
