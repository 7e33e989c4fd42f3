"""`ai-fix serve`: the webhook server and AIFIX_WORKERS in-process workers under uvicorn (SIGTERM drains)."""

from __future__ import annotations

import argparse
import signal

import uvicorn

from bot.commands.services import build_services
from bot.intake.app import create_app
from bot.queue.worker import WorkerPool


def serve_main(args: argparse.Namespace) -> int:
    s = build_services()
    pool = WorkerPool(s.store, s.github, s.pipeline, s.settings)
    # Once at start: which PRs are ai-fix's is decided on every delivery, from the author GitHub names.
    app = create_app(s.settings, store=s.store, bot_login=s.github.bot_login(), services=[pool])
    # uvicorn drains on SIGTERM/SIGINT (lifespan shutdown stops the workers), then re-raises the signal
    # under the handlers found at start: with these, a drained server (or one still starting) exits 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_cleanly)
    try:
        # Access logs cost more than the acknowledgement itself; deliveries are counted in /metrics.
        uvicorn.run(
            app, host=args.host, port=args.port, access_log=False, log_level="info", timeout_graceful_shutdown=30
        )
    finally:
        s.store.close()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)
