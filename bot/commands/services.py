"""What `serve` and `worker` build from the settings: the store, the GitHub App and the pipeline.

The pipeline is loaded by name (AIFIX_PIPELINE) so a process imports the loop only when it runs it.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.errors import ConfigError, GitHubError
from bot.github.client import GitHubApp
from bot.queue.pipeline import Pipeline
from bot.queue.store import Store
from bot.settings import Settings, load_settings, require_server_settings


def github_app(settings: Settings, **options: Any) -> GitHubApp:
    """The App from AIFIX_APP_ID, its private key and AIFIX_GITHUB_API_URL; `options` go to GitHubApp."""
    if settings.app_id is None:
        raise GitHubError("AIFIX_APP_ID is not set: the App cannot authenticate")
    return GitHubApp(settings.app_id, settings.app_private_key(), base_url=settings.github_api_url, **options)


def load_pipeline(spec: str, settings: Settings) -> Pipeline:
    """Build the pipeline named "module:factory"; the factory takes the settings."""
    module, _, name = spec.partition(":")
    try:
        factory: Callable[[Settings], Pipeline] = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"AIFIX_PIPELINE {spec!r} cannot be loaded ({exc}); use module:factory, e.g. bot.commands.toolkit:delivery_pipeline"
        ) from exc
    return factory(settings)


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: Store
    github: GitHubApp
    pipeline: Pipeline


def log_to_stderr() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def build_services(settings: Settings | None = None) -> Services:
    """Everything `serve` and `worker` need, checked at start: a bad setting stops here with one line. `settings`:
    those already loaded (else read now: after the setup page wrote its file, they must be read again)."""
    log_to_stderr()
    settings = settings or load_settings()
    require_server_settings(settings)
    store = Store.from_url(settings.database_url)
    store.init_schema()
    return Services(settings, store, github_app(settings), load_pipeline(settings.pipeline, settings))
