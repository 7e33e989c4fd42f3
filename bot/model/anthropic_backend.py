"""The Anthropic backend: the official SDK's Messages API with tools, prompt caching and our own retries."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import anthropic

from bot.model.base import ModelRequest, ModelResponse, ToolCall, Usage
from bot.model.prices import Price, Pricer
from bot.model.retry import Api, RetryPolicy, call_timeout, with_retries

MESSAGES_API = Api(
    name="the Messages API",
    transient=(anthropic.APITimeoutError, anthropic.APIConnectionError),
    status=anthropic.APIStatusError,
    fixes={
        401: "check AIFIX_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY)",
        403: "the API key lacks access to this model; pick another with --model or model.name",
        404: "the model id is unknown to the API; check --model, AIFIX_MODEL or model.name in .github/ai-fix.yml",
    },
)


class AnthropicModel:
    """`Model` over the Messages API."""

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        retry: RetryPolicy | None = None,
        api: Api = MESSAGES_API,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.client = client
        """The SDK's client: `anthropic.Anthropic`, or its Bedrock and Vertex AI clients (`bot.model.clouds`)."""
        self.retry = retry or RetryPolicy()
        self.api = api
        self.pricer = Pricer(prices)

    @classmethod
    def from_settings(
        cls,
        api_key: str,
        base_url: str | None = None,
        *,
        timeout_s: float = 300.0,
        retry: RetryPolicy | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> AnthropicModel:
        client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        return cls(client, retry=retry, prices=prices)

    def complete(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)
        started = time.monotonic()
        message, retries = with_retries(
            lambda left: self.client.messages.create(**(params | call_timeout(left, self.client))),
            self.api,
            self.retry,
            limit_s=request.timeout_s,
        )
        return self._response(request.model, message, retries, time.monotonic() - started)

    def close(self) -> None:
        self.client.close()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        # The breakpoint at the end of the stable layer caches tools + system; later steps read them back.
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}],
            "messages": request.messages,
        }
        if request.tools:
            params["tools"] = request.tools
        if request.tool_choice:
            params["tool_choice"] = request.tool_choice
        return params

    def _response(self, model: str, message: Any, retries: int, latency_s: float) -> ModelResponse:
        u = message.usage
        usage = Usage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_write_tokens=u.cache_creation_input_tokens or 0,
            cache_read_tokens=u.cache_read_input_tokens or 0,
        )
        texts = [b.text for b in message.content if b.type == "text"]
        # A non-object input still becomes a call, so the loop can answer it as malformed instead of crashing.
        calls = [
            ToolCall(id=b.id, name=b.name, input=b.input if isinstance(b.input, dict) else {"_input": b.input})
            for b in message.content
            if b.type == "tool_use"
        ]
        return ModelResponse(
            model=model,
            text="\n".join(texts),
            tool_calls=calls,
            stop_reason=message.stop_reason or "",
            usage=usage,
            cost_usd=self.pricer.cost(model, usage),
            retries=retries,
            latency_s=round(latency_s, 4),
        )
