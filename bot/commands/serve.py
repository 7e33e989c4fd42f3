"""`ai-fix serve`: the webhook server and AIFIX_WORKERS in-process workers under uvicorn (SIGTERM drains).

With no GitHub App configured it serves the setup page instead (`setup_mode.py`), and the service once
the page has registered one.
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import threading
from types import FrameType

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from bot.commands.checkup import start_problems
from bot.commands.services import build_services, log_to_stderr
from bot.commands.setup_mode import setup_mode
from bot.intake.app import create_app
from bot.intake.connections import ConnectionLimits, guarded_protocol
from bot.queue.store import Store
from bot.queue.worker import WorkerPool
from bot.settings import Settings, app_configured, load_settings

log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    """uvicorn, telling the app the moment a shutdown begins (uvicorn waits for open responses before the lifespan ends)."""

    def __init__(self, config: uvicorn.Config, closing: threading.Event) -> None:
        super().__init__(config)
        self.closing = closing

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.closing.set()
        super().handle_exit(sig, frame)


def serve_main(args: argparse.Namespace) -> int:
    log_to_stderr()
    closing = threading.Event()
    stores: list[Store] = []

    def start(loaded: Settings | None = None) -> Starlette:
        s = build_services(loaded)
        stores.append(s.store)
        for problem in start_problems(s.settings):
            log.warning("%s: %s; %s (ai-fix doctor checks everything)", problem.name, problem.detail, problem.fix)
        pool = WorkerPool(s.store, s.github, s.pipeline, s.settings)
        # Once at start: which PRs are ai-fix's is decided on every delivery, from the author GitHub names.
        return create_app(
            s.settings, store=s.store, bot_login=s.github.bot_login(), services=[pool, FrozenHeap()], closing=closing
        )

    settings = load_settings()
    app: ASGIApp = start(settings) if app_configured(settings) else setup_mode(args, settings, start)
    # uvicorn drains on SIGTERM/SIGINT (lifespan shutdown stops the workers), then re-raises the signal
    # under the handlers found at start: with these, a drained server (or one still starting) exits 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, exit_cleanly)
    config = server_config(app, settings, host=args.host, port=args.port)
    try:
        DrainingServer(config, closing).run()
    finally:
        for store in stores:
            store.close()
    return 0


def server_config(app: ASGIApp, settings: Settings, *, host: str, port: int) -> uvicorn.Config:
    """uvicorn's settings for the service: its own HTTP protocol, holding every client to the deadlines and the
    connection limit (`bot.intake.connections`)."""
    limits = ConnectionLimits(settings.header_timeout, settings.body_timeout, settings.max_connections)
    # Access logs cost more than the acknowledgement itself; deliveries are counted in /metrics.
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,
        log_level="info",
        timeout_graceful_shutdown=30,
        http=guarded_protocol(limits),
    )


class FrozenHeap:
    """Garbage collection that leaves the acknowledgement tail alone, started once the service is up.

    CPython's full collection walks every object, and at start-up the heap holds ~200,000 (settings,
    pydantic and githubkit models, the pipeline's modules); under load one ran about every 1,000
    deliveries and held every request in flight for 50 - 400 ms. So: collect once, move what survived
    start-up out of the collector's reach (`gc.freeze()`: it lives as long as the process anyway), and
    collect the young generation after 20,000 net allocations instead of 700, so the objects of the
    requests in flight (a few dozen each) mostly die before a collection instead of being promoted.
    """

    YOUNG_THRESHOLD = 20_000

    def __init__(self) -> None:
        self._thresholds = gc.get_threshold()

    def start(self) -> None:
        gc.collect()
        gc.freeze()
        gc.set_threshold(self.YOUNG_THRESHOLD, *self._thresholds[1:])

    def stop(self) -> None:
        gc.unfreeze()
        gc.set_threshold(*self._thresholds)


def exit_cleanly(signum: int, frame: object) -> None:
    """The handler uvicorn re-raises a captured SIGTERM or SIGINT under once it has shut down: exit 0."""
    raise SystemExit(0)
