"""POST /webhook as a bare ASGI endpoint over the sans-I/O core.

It is the hot path (GitHub waits on it, and it must answer in milliseconds), so it skips Starlette's
Request/Response objects: read the body with a size cap, verify, parse, decide, hand the delivery to
the intake writer, and answer once it is committed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.errors import StoreUnavailable
from bot.intake.apply import Incoming
from bot.intake.body_budget import BodyBudget, Held, OverBudget
from bot.intake.events import MalformedDelivery, parse_event
from bot.intake.metrics import Metrics
from bot.intake.signature import InvalidSignature, verify_signature
from bot.intake.triggers import decide
from bot.intake.writer import IntakeWriter
from bot.settings import Settings
from bot.vocabulary import UNVERIFIED_EVENT

log = logging.getLogger(__name__)

MAX_BODY = 25 * 1024 * 1024
"""GitHub caps payloads at 25 MB; anything larger is not from GitHub."""
BUSY = "too many request bodies are being received at once; GitHub can redeliver later"


class TooLarge(Exception):
    """The body is over the limit; answered 413 without reading the rest."""


async def read_body(receive: Receive, declared: str, limit: int, held: Held) -> bytes:
    """The request body, counted in `held` as it arrives; TooLarge as soon as it is known to exceed `limit`,
    OverBudget as soon as the process's body budget cannot hold it, either without reading the rest."""
    if declared.isdigit():
        if int(declared) > limit:
            raise TooLarge
        held.declared(int(declared))
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        held.grow(size)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


class WebhookFirst:
    """ASGI middleware sending POST /webhook straight to the endpoint, past routing and exception layers."""

    def __init__(self, app: ASGIApp, endpoint: WebhookEndpoint) -> None:
        self.app = app
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/webhook" and scope["method"] == "POST":
            await self.endpoint(scope, receive, send)
        else:
            await self.app(scope, receive, send)


class WebhookEndpoint:
    """POST /webhook: verify, parse, decide, store durably, then answer (202, or 200 for ping and redeliveries)."""

    def __init__(
        self,
        settings: Settings,
        writer: IntakeWriter,
        metrics: Metrics,
        *,
        bot_login: str,
        budget: BodyBudget,
        max_body: int = MAX_BODY,
    ) -> None:
        self.secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else ""
        self.trigger_label = settings.trigger_label
        self.bot_login = bot_login
        self.writer = writer
        self.metrics = metrics
        self.max_body = max_body
        self.budget = budget

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        held = self.budget.hold()
        try:
            await self.answer(receive, send, headers, held, started)
        finally:
            held.release()  # once answered: a body counts for as long as it is in memory

    async def answer(self, receive: Receive, send: Send, headers: dict[str, str], held: Held, started: float) -> None:
        answered: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
        try:
            body = await read_body(receive, headers.get("content-length", ""), self.max_body, held)
        except TooLarge:
            status, event, outcome, answer = (
                413,
                UNVERIFIED_EVENT,
                "too_large",
                {"error": f"payload larger than {self.max_body} bytes"},
            )
        except OverBudget:
            status, event, outcome, answer = 503, UNVERIFIED_EVENT, "busy", {"error": BUSY}
            answered.append((b"retry-after", b"10"))
        except ConnectionError:
            return
        else:
            status, event, outcome, answer = await self.handle(headers, body)
        if status in (413, 503) and outcome != "unavailable":
            answered.append((b"connection", b"close"))  # the rest of the body is never read: no next request
        self.metrics.observe(event, outcome, time.perf_counter() - started)
        data = orjson.dumps(answer)
        answered.append((b"content-length", str(len(data)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": answered})
        await send({"type": "http.response.body", "body": data})

    async def handle(self, headers: dict[str, str], body: bytes) -> tuple[int, str, str, dict[str, Any]]:
        """(HTTP status, event and outcome for the metrics, JSON answer) for one delivery."""
        try:
            verify_signature(body, headers.get("x-hub-signature-256"), self.secret)
        except InvalidSignature as exc:
            return 401, UNVERIFIED_EVENT, "unauthorized", {"error": str(exc)}
        try:
            event = parse_event(headers, body)
        except MalformedDelivery as exc:
            return 400, headers.get("x-github-event", ""), "malformed", {"error": str(exc)}
        decision = decide(event, trigger_label=self.trigger_label, bot_login=self.bot_login)
        try:
            ack = await self.writer.submit(Incoming(event, body, decision, time.time()))
        except StoreUnavailable as exc:
            log.error("delivery %s refused: %s", event.delivery_id, exc)
            return 503, event.name, "unavailable", {"error": "job store unavailable; GitHub can redeliver later"}
        status = 200 if ack.outcome in ("ping", "duplicate") else 202
        return status, event.name, ack.outcome, {"outcome": ack.outcome, "job_id": ack.job_id, "reason": ack.reason}
