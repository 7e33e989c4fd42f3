"""How runs get their parts, built from the settings: the model, the sandbox opener, retrieval, the default pipeline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
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
from bot.sandbox.base import Sandbox, SandboxJob
from bot.sandbox.select import open_sandbox
from bot.sandbox.snapshots import repo_slug
from bot.secrets import setup_secrets
from bot.settings import Settings


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

    def sandbox_for(tree: Path, config: SandboxConfig, job: SandboxJob) -> Sandbox:
        # The operator's pull policy wins over the repository's; caches and snapshots are kept per repository.
        if settings.sandbox_pull is not None:
            config = config.model_copy(update={"pull": settings.sandbox_pull})
        job = replace(
            job,
            cache_dir=settings.work_dir.resolve() / "setup-cache" / repo_slug(job.repo),
            keep_snapshots=settings.sandbox_snapshots,
        )
        return open_sandbox(kind, tree, config, env=settings.sandbox_env, ro_paths=settings.sandbox_ro_paths, job=job)

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
        setup_secrets=setup_secrets(),
    )


def delivery_pipeline(settings: Settings) -> Pipeline:
    """The default AIFIX_PIPELINE: contract → loop → pull request, with the model opened afresh for each job."""
    return DeliveryPipeline(toolkit(settings, model=lambda: open_model(None, settings)))
