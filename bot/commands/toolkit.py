"""How runs get their parts, built from the settings: the models, the sandbox opener, retrieval, the default pipeline."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pydantic import SecretStr

from bot.context.provider import RepoContext, repo_tag_cache
from bot.contract.models import SandboxConfig
from bot.errors import ConfigError
from bot.job.kinds import GitHubJobs
from bot.job.tools import JobTools
from bot.loop.session import ModelOpener, Toolkit
from bot.model.anthropic_backend import AnthropicModel
from bot.model.base import Model
from bot.model.prices import Price
from bot.model.providers import RoutedModel, parse_spec
from bot.model.replay import ReplayModel
from bot.model.routing import ModelChoice, small_for
from bot.queue.pipeline import Pipeline
from bot.sandbox.base import Sandbox, SandboxJob
from bot.sandbox.select import open_sandbox
from bot.sandbox.snapshots import repo_slug
from bot.secrets import setup_secret_repos, setup_secrets
from bot.settings import Settings
from bot.viewer.links import run_url

log = logging.getLogger(__name__)

NO_KEY = "no-key"
"""What the SDK sends as its key to servers that need none (Ollama, vLLM): never a real key from the environment."""
HOW_TO_CHOOSE = "or choose models of a provider you have (--model, model.name and model.small in .github/ai-fix.yml, AIFIX_MODEL, AIFIX_SMALL_MODEL)"


def _missing_key(variables: str, vendor: str, spec: str, role: str) -> ConfigError:
    return ConfigError(
        f"{variables} are not set, and {spec} (the {role} model) is an {vendor} model: set one to an {vendor} API key, {HOW_TO_CHOOSE}"
    )


def secret(value: SecretStr | None) -> str:
    return value.get_secret_value() if value is not None else ""


def open_backend(provider: str, settings: Settings, *, spec: str, role: str) -> Model:
    """One provider's client, configured from the settings; ConfigError naming both key variables when one is needed.

    The other providers' modules are imported only when a run names them: importing the `openai` SDK
    costs about a second of CPU, which every start of `ai-fix serve` would otherwise pay.
    """
    # AIFIX_MODEL_PRICES names specs ("openai:my-model"); a backend sees the id without its provider's prefix.
    specs = {parse_spec(name): price for name, price in settings.model_prices.items()}
    prices = {s.model: Price.model_validate(price) for s, price in specs.items() if s.provider == provider}
    if provider == "anthropic":
        if not (key := secret(settings.anthropic_api_key)):
            raise _missing_key("AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY", "Anthropic", spec, role)
        return AnthropicModel.from_settings(key, settings.anthropic_base_url, prices=prices)
    from bot.model.clouds import bedrock_model, vertex_model
    from bot.model.openai_backend import OpenAIModel

    if provider == "openai":
        if not (key := secret(settings.openai_api_key)):
            raise _missing_key("AIFIX_OPENAI_API_KEY and OPENAI_API_KEY", "OpenAI", spec, role)
        return OpenAIModel.from_settings(key, settings.openai_base_url, prices=prices)
    if provider == "bedrock":
        return bedrock_model(
            region=settings.aws_region,
            base_url=settings.bedrock_base_url,
            api_key=secret(settings.aws_bearer_token_bedrock) or None,
            prices=prices,
        )
    if provider == "vertex":
        return vertex_model(
            region=settings.vertex_region,
            project_id=settings.vertex_project_id,
            base_url=settings.vertex_base_url,
            prices=prices,
        )
    # Self-hosted servers: no key, and the older `max_tokens` field they all read.
    base_url = {"ollama": settings.ollama_base_url, "vllm": settings.vllm_base_url}[provider]
    return OpenAIModel.from_settings(NO_KEY, base_url, max_tokens_field="max_tokens", prices=prices)


def open_models(choice: ModelChoice, settings: Settings) -> Model:
    """A backend for each provider the chosen models name (opened once each), routed by the spec's prefix."""
    roles = {choice.name: "main"}
    roles.setdefault(choice.small, "small")
    backends: dict[str, Model] = {}
    for spec, role in roles.items():
        provider = parse_spec(spec).provider
        if provider not in backends:
            backends[provider] = open_backend(provider, settings, spec=spec, role=role)
    return RoutedModel(backends)


def default_models(settings: Settings) -> Model:
    """The models AIFIX_MODEL and AIFIX_SMALL_MODEL name, opened (a missing key is a ConfigError naming it)."""
    small = small_for(settings.model, settings.small_model)
    return open_models(ModelChoice(name=settings.model, small=small, reason="the defaults"), settings)


def model_opener(spec: str | None, settings: Settings) -> ModelOpener:
    """`--model replay:TRACE` replays a trace (read now, so a bad path stops at start); else the settings' providers."""
    if spec and spec.startswith("replay:"):
        replay = ReplayModel.from_trace(Path(spec.removeprefix("replay:")))
        return lambda _choice: replay
    return lambda choice: open_models(choice, settings)


def model_override(spec: str | None) -> str | None:
    """The model spec `--model` names, when it names one (a replay names a trace, not a model)."""
    return None if spec is None or spec.startswith("replay:") else spec


def operator_sandbox(config: SandboxConfig, settings: Settings) -> SandboxConfig:
    """A repository's sandbox settings with the operator's applied: AIFIX_SANDBOX_PULL wins over `sandbox.pull`, and
    AIFIX_SANDBOX_IMAGE is the image when `sandbox.image` names none."""
    update: dict[str, object] = {"image": config.image or settings.sandbox_image}
    if settings.sandbox_pull is not None:
        update["pull"] = settings.sandbox_pull
    return config.model_copy(update=update)


def toolkit(settings: Settings, *, model: ModelOpener, sandbox: str | None = None) -> Toolkit:
    """How runs get their parts: `model` opens the backends, the sandbox backend is `sandbox` or AIFIX_SANDBOX."""
    kind = sandbox or settings.sandbox

    def sandbox_for(tree: Path, config: SandboxConfig, job: SandboxJob) -> Sandbox:
        # Caches and snapshots are kept per repository.
        config = operator_sandbox(config, settings)
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
        setup_secret_repos=setup_secret_repos(),
    )


def run_links(settings: Settings) -> Callable[[str, int], str] | None:
    """(The job store's id, a job id) → a signed link to its run-viewer page valid AIFIX_VIEWER_LINK_DAYS; None unless
    both settings are set."""
    public, secret = settings.public_url, settings.viewer_secret
    if not public or secret is None:
        if public or secret is not None:
            log.warning("run viewer links are off: set both AIFIX_PUBLIC_URL and AIFIX_VIEWER_SECRET")
        return None
    key, ttl = secret.get_secret_value(), settings.viewer_link_days * 86_400

    def link(store: str, job_id: int) -> str:
        return run_url(public, key, store, job_id, expires=int(time.time()) + ttl)

    return link


def delivery_pipeline(settings: Settings) -> Pipeline:
    """The default AIFIX_PIPELINE: contract → loop → pull request (and the CI, rebase and scan jobs), with the models
    opened afresh for each job.

    The default models are opened once here, so a missing key stops `ai-fix serve` at start; a repository's
    own `model:` config is opened with its job.
    """
    default_models(settings).close()
    kit = toolkit(settings, model=model_opener(None, settings))
    return GitHubJobs(JobTools(kit, run_link=run_links(settings)))
