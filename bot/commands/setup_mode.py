"""`ai-fix serve` with no GitHub App configured: the setup page, then the service proper, in the same process.

`ModeSwitch` is the ASGI app uvicorn runs: the setup page (`bot.setup.page`) until the App is registered;
then `start` builds the service from the settings the page wrote, its lifespan (workers, the intake
writer) is started here, and every request but the setup page's goes to it. No restart, no port
closed in between: the first webhook GitHub sends after the registration is answered by the service.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AsyncExitStack
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool

from bot.commands.toolkit import default_models
from bot.errors import AiFixError
from bot.settings import Settings, settings_file
from bot.setup.manifest import shipped_manifest
from bot.setup.page import SETUP_PATHS, SetupConfig, setup_app

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class ModeSwitch:
    """The setup page until `activate` succeeds, then the service `start` builds (the page keeps its own paths)."""

    def __init__(self, start: Callable[[], Starlette]) -> None:
        self.start = start
        self.setup: Starlette | None = None
        self.service: Starlette | None = None
        self._lifespans = AsyncExitStack()

    async def activate(self) -> str:
        """Start the service proper; "" when it runs, else why it cannot (the setup page says so)."""
        try:
            service = await run_in_threadpool(self.start)
            await self._lifespans.enter_async_context(service.router.lifespan_context(service))
        except Exception as exc:  # noqa: BLE001 - an edge: whatever stops the start is said on the page
            reason = str(exc) if isinstance(exc, AiFixError) else f"{type(exc).__name__}: {exc}"
            log.error("ai-fix serve: the App is registered, but the service cannot start: %s", reason)
            return reason
        self.service = service
        log.info("ai-fix serve: the App is registered; the service answers webhooks now")
        return ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        assert self.setup is not None
        page = scope["type"] == "http" and scope["path"] in SETUP_PATHS
        await (self.setup if self.service is None or page else self.service)(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._lifespans.aclose()  # the service's own shutdown: workers drain, the writer stops
                await send({"type": "lifespan.shutdown.complete"})
                return


def setup_notes(settings: Settings) -> tuple[str, ...]:
    """What the service will still lack once the App exists, said on the page before registering."""
    try:
        default_models(settings).close()
    except AiFixError as exc:
        return (f"Before ai-fix can work on issues it needs a model: {exc}.",)
    return ()


def setup_mode(args: argparse.Namespace, settings: Settings, start: Callable[[], Starlette]) -> ModeSwitch:
    """The app `ai-fix serve` runs while no App is configured; says so, with the page's address, in one log line."""
    switch = ModeSwitch(start)
    config = SetupConfig(
        manifest=shipped_manifest(),
        api_url=settings.github_api_url,
        public_url=settings.public_url,
        settings_file=settings_file(settings).absolute(),
        force=args.force,
        trigger_label=settings.trigger_label,
        notes=setup_notes(settings),
    )
    switch.setup = setup_app(config, switch.activate)
    host = f"[{args.host}]" if ":" in args.host else args.host
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else host
    log.warning(
        "ai-fix serve: no GitHub App is configured (setup mode); open http://%s:%d/ to register one", shown, args.port
    )
    if args.host not in LOOPBACK_HOSTS:
        log.warning(
            "ai-fix serve: the setup page listens on %s, beyond this machine: whoever reaches it can register an App "
            "whose credentials this service then uses; prefer --host 127.0.0.1 until the App is registered",
            args.host,
        )
    return switch
