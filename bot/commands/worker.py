"""`ai-fix worker`: workers only, sharing the queue in the same database; exits 0 after a SIGTERM drain."""

from __future__ import annotations

import argparse
import logging
import signal
import threading

from bot.commands.services import build_services
from bot.queue.worker import WorkerPool

log = logging.getLogger(__name__)


def worker_main(args: argparse.Namespace) -> int:
    # Handlers first: a SIGTERM while the services start (a deployment rolling back) still exits 0.
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    s = build_services()
    s.github.bot_login()  # once at start (GET /app): a wrong App id stops here; the jobs know their PRs by it
    pool = WorkerPool(s.store, s.github, s.pipeline, s.settings, workers=max(s.settings.workers, 1))
    pool.start()
    log.info("ai-fix worker %s: %d workers on %s", pool.owner, pool.workers, s.settings.database_url)
    done.wait()
    pool.stop()
    s.store.close()
    return 0
