"""Slow and huge unauthenticated requests against the real `ai-fix serve` (uvicorn on loopback, raw sockets): a
deadline on every request's headers and body, a process-wide budget for bodies in flight, a connection limit;
and signed deliveries still answered 202 meanwhile. The figures (memory, latency) are bench/slow_clients.py's."""

from __future__ import annotations

import selectors
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.processes import AI_FIX, env_for, free_port
from tests.support.server import serve
from tests.support.service import wait_until
from tests.support.webhooks import deliver, labeled

HEADER_TIMEOUT = 1.5
BODY_TIMEOUT = 2.0
SLACK = 4.0
"""How much later than its deadline a connection may close on a loaded machine."""
MAX_CONNECTIONS = 40
BIG = 24 << 20
START = b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: issues\r\n"


@dataclass
class Served:
    port: int
    fake: FakeGitHub
    sockets: list[socket.socket] = field(default_factory=list)

    def connect(self) -> socket.socket:
        self.sockets.append(socket.create_connection(("127.0.0.1", self.port), timeout=10))
        return self.sockets[-1]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("slow")
    fake = FakeGitHub()
    port = free_port()
    with serve(fake.asgi()) as github_url:
        env = env_for(tmp, fake, github_url + "/", "tests.support.pipelines:Gate") | {
            "AIFIX_WORKERS": "0",
            "AIFIX_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
            "AIFIX_BODY_TIMEOUT": str(BODY_TIMEOUT),
            "AIFIX_BODY_BUDGET_MB": "34",
            "AIFIX_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        }
        server = subprocess.Popen([AI_FIX, "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
                wait_until(lambda: _answers(client), timeout=60)
            yield Served(port, fake)
        finally:
            server.terminate()
            server.wait(timeout=60)


@pytest.fixture(autouse=True)
def _close_sockets(served: Served) -> Iterator[None]:
    yield
    for sock in served.sockets:
        sock.close()
    served.sockets.clear()


def _answers(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def closed_within(socks: list[socket.socket], limit: float, *, trickle: bytes = b"") -> list[float | None]:
    """Seconds until the server closed each socket (None: still open after `limit`), sending `trickle` on each
    every 0.25 s meanwhile (a header byte at a time, as a slow client does)."""
    began = time.monotonic()
    closed: list[float | None] = [None] * len(socks)
    selector = selectors.DefaultSelector()
    for i, sock in enumerate(socks):
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, i)
    next_send = began
    while any(c is None for c in closed) and time.monotonic() - began < limit:
        if trickle and time.monotonic() >= next_send:
            for i, sock in enumerate(socks):
                if closed[i] is None:
                    try:
                        sock.send(trickle)
                    except OSError:
                        closed[i] = time.monotonic() - began
            next_send += 0.25
        for key, _ in selector.select(timeout=0.05):
            i = key.data
            try:
                gone = socks[i].recv(65536) == b""
            except BlockingIOError:
                continue
            except OSError:
                gone = True
            if gone and closed[i] is None:
                closed[i] = time.monotonic() - began
                selector.unregister(socks[i])
    selector.close()
    return closed


def answer_of(sock: socket.socket) -> bytes:
    """What the server answered on `sock`, to the end of the connection (a server that closes while the client still
    sends may end it with a reset once its answer is read: the answer is what counts)."""
    sock.settimeout(10)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_clients_that_trickle_their_headers_or_send_none_are_closed_at_the_header_deadline(served: Served) -> None:
    tricklers = [served.connect() for _ in range(20)]
    for sock in tricklers:
        sock.sendall(START)
    silent = served.connect()
    with served.client() as client:
        assert deliver(client, "issues", labeled(1)).status_code == 202, "signed deliveries go on meanwhile"
    closed = closed_within([*tricklers, silent], HEADER_TIMEOUT + SLACK, trickle=b"X")
    assert all(c is not None for c in closed), closed


def test_a_kept_alive_connection_trickling_its_next_request_is_closed_too(served: Served) -> None:
    sock = served.connect()
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    sock.sendall(b"GET /healthz HTTP/1.1\r\n")
    [closed] = closed_within([sock], HEADER_TIMEOUT + SLACK, trickle=b"Y")
    assert closed is not None, "uvicorn's keep-alive timer stops at the first byte; the header deadline does not"


def test_a_body_that_stalls_is_closed_at_the_body_deadline(served: Served) -> None:
    sock = served.connect()
    sock.sendall(START + b"Content-Length: 100000\r\n\r\n" + b"{" * 10)
    [closed] = closed_within([sock], BODY_TIMEOUT + SLACK)
    assert closed is not None and closed >= BODY_TIMEOUT - 0.5, closed


def test_bodies_beyond_the_budget_are_refused_at_once_and_deliveries_still_fit(served: Served) -> None:
    held = served.connect()
    held.sendall(START + f"Content-Length: {BIG}\r\n\r\n".encode())
    held.sendall(b" " * (BIG - 1))  # returns once the server has read most of it: the body is in and counted
    refused = served.connect()
    refused.sendall(START + f"Content-Length: {BIG}\r\n\r\n".encode())
    answer = answer_of(refused)
    assert answer.startswith(b"HTTP/1.1 503") and b"connection: close" in answer and b"retry-after: 10" in answer
    with served.client() as client:
        assert deliver(client, "issues", labeled(2)).status_code == 202, "the 8 MiB kept for small bodies"
    chunked = served.connect()
    chunked.sendall(START + b"Transfer-Encoding: chunked\r\n\r\n")
    try:
        for _ in range(8):  # no length declared: counted as it arrives, and large past 1 MiB
            chunked.sendall(b"100000\r\n" + b" " * 0x100000 + b"\r\n")
    except OSError:
        pass  # refused and closed while sending
    assert answer_of(chunked).startswith(b"HTTP/1.1 503")
    [closed] = closed_within([held], BODY_TIMEOUT + SLACK)
    assert closed is not None, "the held body's connection is closed at its deadline, and the budget released"
    again = served.connect()
    again.sendall(START + f"Content-Length: {BIG}\r\n\r\n".encode() + b" " * BIG)
    assert answer_of(again).startswith(b"HTTP/1.1 401"), "read whole, then refused for its missing signature"


def test_connections_beyond_the_limit_are_answered_503_and_closed(served: Served) -> None:
    with served.client() as client:
        wait_until(lambda: _answers(client))
    open_ = [served.connect() for _ in range(MAX_CONNECTIONS)]
    extra = served.connect()
    assert answer_of(extra).startswith(b"HTTP/1.1 503 Service Unavailable"), "refused before reading anything"
    for sock in open_:
        sock.close()
    with served.client() as client:  # room again once they are gone
        wait_until(lambda: _answers(client))
