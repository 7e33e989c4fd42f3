"""`ai-fix migrate`: apply the job store's schema migrations and exit (serve and worker apply them at start too).

For deployments that migrate once before rolling out new intakes and workers.
"""

from __future__ import annotations

import argparse

from bot.queue.store import Store
from bot.settings import load_settings


def migrate_main(args: argparse.Namespace) -> int:
    settings = load_settings()
    store = Store.from_url(settings.database_url)
    try:
        applied = store.init_schema()
    finally:
        store.close()
    where = settings.database_url.split("@")[-1]  # no password in the output
    print(f"applied {', '.join(applied)} to {where}" if applied else f"{where} is up to date")
    return 0
