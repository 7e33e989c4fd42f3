"""The HTTP protocol `ai-fix serve` runs under uvicorn: its own, with a deadline on every request and a cap on
connections, as a server open to anyone needs.

uvicorn waits as long as a client likes for a request's headers and body (a connection that sends a header
byte every few seconds stays open for good) and accepts every connection. Here a connection has
`header_timeout` seconds to send a request's headers (from when it opens, or from the first byte of its next
request) and then `body_timeout` seconds to send the body; past either it is closed. A connection beyond
`max_connections` open at once is answered 503 and closed before anything is read. What the app does once
the request is in (storing a delivery, streaming the run viewer's events) has no deadline here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import ClassVar, Literal

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

BUSY = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
Waiting = Literal["", "headers", "body"]


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    """Seconds to send a request's headers, from the connection's start or its next request's first byte."""
    body_timeout: float
    """Seconds to send the body once the headers are in."""
    max_connections: int
    """Open connections at once; more are answered 503 and closed."""


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol holding each connection to `limits` (set by `guarded_protocol`)."""

    limits: ClassVar[ConnectionLimits]
    waiting: Waiting = ""
    deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            transport.write(BUSY)
            transport.close()
            return
        self.expect("headers")

    def data_received(self, data: bytes) -> None:
        if not self.waiting:
            self.expect("headers")  # the first bytes of the next request on a kept-alive connection
        before = self.cycle
        super().data_received(data)
        if self.cycle is not before:  # a request's headers are in
            self.expect("body")
        if self.waiting == "body" and not self.cycle.more_body:
            self.expect("")

    def connection_lost(self, exc: Exception | None) -> None:
        self.expect("")
        super().connection_lost(exc)

    def expect(self, what: Waiting) -> None:
        """Wait for `what` under its deadline ("": nothing is awaited from the client)."""
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        self.waiting = what
        if what:
            seconds = self.limits.header_timeout if what == "headers" else self.limits.body_timeout
            self.deadline = self.loop.call_later(seconds, self.too_slow)

    def too_slow(self) -> None:
        self.deadline = None
        if not self.transport.is_closing():
            self.transport.close()  # an app still reading the body is told the client went away


def guarded_protocol(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with `limits` applied (for `uvicorn.Config(http=...)`)."""
    return type("Guarded", (GuardedProtocol,), {"limits": limits})
