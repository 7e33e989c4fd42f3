"""Which provider serves a model: the one rule is the model spec's prefix, `PROVIDER:MODEL`.

A spec without a known prefix is an Anthropic model id (`claude-sonnet-4-5`), as before providers
existed; `openai:gpt-5.4`, `ollama:qwen3:8b` (the rest may hold colons), `vllm:NAME`,
`bedrock:us.anthropic.claude-...-v1:0` and `vertex:claude-...@DATE` name the others. `RoutedModel` sends each request to its spec's backend, so `model.small` may live on another
provider than `model.name`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.errors import ConfigError, ModelError
from bot.model.base import Model, ModelRequest, ModelResponse

PROVIDERS = ("anthropic", "openai", "ollama", "vllm", "bedrock", "vertex")
DEFAULT_PROVIDER = "anthropic"


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str
    """The id the provider knows the model by."""


def parse_spec(spec: str) -> ModelSpec:
    """`PROVIDER:MODEL`, or a bare Anthropic model id; ConfigError naming the fix otherwise."""
    prefix, colon, rest = spec.partition(":")
    if not colon:
        if not spec.strip():
            raise ConfigError("the model spec is empty; name a model, e.g. claude-sonnet-4-5 or openai:gpt-5.4")
        return ModelSpec(DEFAULT_PROVIDER, spec)
    if prefix not in PROVIDERS:
        raise ConfigError(
            f"model spec {spec!r}: unknown provider {prefix!r}; write PROVIDER:MODEL with one of "
            f"{', '.join(PROVIDERS)} (e.g. ollama:{spec} for an Ollama model)"
        )
    if not rest.strip():
        raise ConfigError(f"model spec {spec!r} names no model; write {prefix}:MODEL")
    return ModelSpec(prefix, rest)


class RoutedModel:
    """`Model` over one backend per provider; a response names the spec it was asked for."""

    def __init__(self, backends: Mapping[str, Model]) -> None:
        self.backends = dict(backends)

    def complete(self, request: ModelRequest) -> ModelResponse:
        spec = parse_spec(request.model)
        backend = self.backends.get(spec.provider)
        if backend is None:
            raise ModelError(f"no {spec.provider} backend was opened for {request.model!r}; the run chose other models")
        response = backend.complete(request.model_copy(update={"model": spec.model}))
        return response.model_copy(update={"model": request.model})

    def close(self) -> None:
        for backend in self.backends.values():
            backend.close()
