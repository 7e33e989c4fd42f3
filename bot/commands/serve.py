"""`ai-fix serve`: the webhook server and AIFIX_WORKERS in-process workers under uvicorn (SIGTERM drains)."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

import uvicorn

from bot.commands.services import build_services
from bot.intake.app import create_app
from bot.queue.worker import WorkerPool


class DrainingServer(uvicorn.Server):
    """uvicorn, telling the app the moment a shutdown begins (uvicorn waits for open responses before the lifespan ends)."""

    def __init__(self, config: uvicorn.Config, closing: threading.Event) -> None:
        super().__init__(config)
        self.closing = closing

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.closing.set()
        super().handle_exit(sig, frame)


def serve_main(args: argparse.Namespace) -> int:
    s = build_services()
    pool = WorkerPool(s.store, s.github, s.pipeline, s.settings)
    closing = threading.Event()
    app = create_app(s.settings, store=s.store, services=[pool], closing=closing)
    # uvicorn drains on SIGTERM/SIGINT (lifespan shutdown stops the workers), then re-raises the signal
    # under the handlers found at start: with these, a drained server (or one still starting) exits 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, exit_cleanly)
    # Access logs cost more than the acknowledgement itself; deliveries are counted in /metrics.
    config = uvicorn.Config(
        app, host=args.host, port=args.port, access_log=False, log_level="info", timeout_graceful_shutdown=30
    )
    try:
        DrainingServer(config, closing).run()
    finally:
        s.store.close()
    return 0


def exit_cleanly(signum: int, frame: object) -> None:
    """The handler uvicorn re-raises a captured SIGTERM or SIGINT under once it has shut down: exit 0."""
    raise SystemExit(0)
