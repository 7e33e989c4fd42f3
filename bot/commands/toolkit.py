"""How runs get their parts, built from the settings: the model, the sandbox opener, retrieval, the default pipeline."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from bot.context.provider import RepoContext, repo_tag_cache
from bot.contract.models import SandboxConfig
from bot.errors import ConfigError
from bot.job.pipeline import DeliveryPipeline
from bot.loop.session import Toolkit
from bot.model.anthropic_backend import AnthropicModel
from bot.model.base import Model
from bot.model.replay import ReplayModel
from bot.queue.pipeline import Pipeline
from bot.sandbox.base import Sandbox
from bot.sandbox.select import open_sandbox
from bot.settings import Settings
from bot.viewer.links import run_url

log = logging.getLogger(__name__)


def open_model(spec: str | None, settings: Settings) -> Model:
    """`replay:TRACE` replays a trace; anything else (or nothing) is the Anthropic backend."""
    if spec and spec.startswith("replay:"):
        return ReplayModel.from_trace(Path(spec.removeprefix("replay:")))
    if settings.anthropic_api_key is None or not settings.anthropic_api_key.get_secret_value():
        raise ConfigError(
            "AIFIX_ANTHROPIC_API_KEY is not set: set it to an Anthropic API key, or pass --model replay:TRACE to replay a recorded run"
        )
    return AnthropicModel.from_settings(settings.anthropic_api_key.get_secret_value(), settings.anthropic_base_url)


def model_override(spec: str | None) -> str | None:
    """The model id `--model` names, when it names one (a replay names a trace, not a model)."""
    return None if spec is None or spec.startswith("replay:") else spec


def toolkit(settings: Settings, *, model: Callable[[], Model], sandbox: str | None = None) -> Toolkit:
    """How runs get their parts: `model` opens the backend, the sandbox backend is `sandbox` or AIFIX_SANDBOX."""
    kind = sandbox or settings.sandbox

    def sandbox_for(tree: Path, config: SandboxConfig) -> Sandbox:
        return open_sandbox(kind, tree, config, ro_paths=settings.sandbox_ro_paths)

    def context_for(tree: Path, repo: str) -> RepoContext:
        # The index lives beside the working tree in the job's folder (outside the sandbox, removed with the job);
        # its tag cache is shared by every job on the repository, so an unchanged file is parsed once across jobs.
        return RepoContext(tree, cache_dir=tree.parent / "context", tag_cache=repo_tag_cache(settings.work_dir, repo))

    return Toolkit(
        open_model=model,
        open_sandbox=sandbox_for,
        open_context=context_for,
        default_model=settings.model,
        small_model=settings.small_model,
        work_dir=settings.work_dir,
    )


def run_links(settings: Settings) -> Callable[[int], str] | None:
    """Job id → a signed link to its run-viewer page valid AIFIX_VIEWER_LINK_DAYS; None unless both settings are set."""
    public, secret = settings.public_url, settings.viewer_secret
    if not public or secret is None:
        if public or secret is not None:
            log.warning("run viewer links are off: set both AIFIX_PUBLIC_URL and AIFIX_VIEWER_SECRET")
        return None
    key, ttl = secret.get_secret_value(), settings.viewer_link_days * 86_400

    def link(job_id: int) -> str:
        return run_url(public, key, job_id, expires=int(time.time()) + ttl)

    return link


def delivery_pipeline(settings: Settings) -> Pipeline:
    """The default AIFIX_PIPELINE: contract → loop → pull request, with the model opened afresh for each job."""
    return DeliveryPipeline(toolkit(settings, model=lambda: open_model(None, settings)), run_link=run_links(settings))
