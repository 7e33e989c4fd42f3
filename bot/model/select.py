"""Build the `Model` a run asks for: an Anthropic model id, or `replay:TRACE`."""

from __future__ import annotations

from pathlib import Path

from bot.errors import ConfigError
from bot.model.anthropic_backend import AnthropicModel
from bot.model.base import Model
from bot.model.replay import ReplayModel
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
