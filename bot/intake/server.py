"""`ai-fix serve`: settings → store, GitHub App, pipeline → the app under uvicorn (SIGTERM drains)."""

from __future__ import annotations

import argparse
import logging
import signal

import uvicorn

from bot.github.client import GitHubApp
from bot.intake.app import create_app
from bot.queue.pipeline import Pipeline, load_pipeline
from bot.queue.store import Store
from bot.settings import Settings, load_settings, require_server_settings


def build_services() -> tuple[Settings, Store, GitHubApp, Pipeline]:
    """Everything `serve` and `worker` need, checked at start: a bad setting stops here with one line."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    require_server_settings(settings)
    store = Store.from_url(settings.database_url)
    store.init_schema()
    github = GitHubApp.from_settings(settings)
    return settings, store, github, load_pipeline(settings.pipeline, settings)


def serve_main(args: argparse.Namespace) -> int:
    settings, store, github, pipeline = build_services()
    app = create_app(settings, store=store, github=github, pipeline=pipeline)
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
        store.close()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)
