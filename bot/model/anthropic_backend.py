"""The Anthropic backend: the official SDK's Messages API with tools, prompt caching and our own retries.

The SDK's retries are switched off so that every attempt, wait and failure is ours to count and record.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import anthropic

from bot.errors import ModelError
from bot.model.base import ModelRequest, ModelResponse, ToolCall, Usage
from bot.model.prices import cost_usd

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429})
"""Besides every 5xx (529 "overloaded" included)."""
MAX_RETRY_AFTER_S = 60.0
"""A longer `retry-after` is cut to this; the caller's wall-time budget still applies."""

_FIXES = {
    401: "check AIFIX_ANTHROPIC_API_KEY",
    403: "the API key lacks access to this model; pick another with --model or model.name",
    404: "the model id is unknown to the API; check --model, AIFIX_MODEL or model.name in .github/ai-fix.yml",
}


def retry_after_s(headers: Any) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, then `retry-after` as seconds or an HTTP date."""
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())


def backoff_s(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with jitter (75-100 % of the nominal delay)."""
    return min(base * 2.0**attempt, cap) * (1 - 0.25 * random.random())


class AnthropicModel:
    """`Model` over the Messages API."""

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        max_attempts: int = 6,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.sleep = sleep
        self._unpriced: set[str] = set()

    @classmethod
    def from_settings(
        cls, api_key: str, base_url: str | None = None, *, timeout_s: float = 300.0, **kwargs: Any
    ) -> AnthropicModel:
        client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        return cls(client, **kwargs)

    def complete(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)
        started = time.monotonic()
        for attempt in range(self.max_attempts):
            try:
                message = self.client.messages.create(**params)
            except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
                wait, why = backoff_s(attempt, self.backoff_base_s, self.backoff_cap_s), type(exc).__name__
            except anthropic.APIStatusError as exc:
                if exc.status_code not in RETRY_STATUS and exc.status_code < 500:
                    fix = _FIXES.get(exc.status_code, "the request was refused; see the message")
                    raise ModelError(f"Messages API answered {exc.status_code}: {exc.message}; {fix}") from exc
                asked = retry_after_s(exc.response.headers)
                wait = (
                    min(asked, MAX_RETRY_AFTER_S)
                    if asked is not None
                    else backoff_s(attempt, self.backoff_base_s, self.backoff_cap_s)
                )
                why = f"HTTP {exc.status_code}"
            else:
                return self._response(request.model, message, attempt, time.monotonic() - started)
            if attempt + 1 < self.max_attempts:
                log.warning(
                    "model call failed (%s); retry %d/%d in %.1fs", why, attempt + 1, self.max_attempts - 1, wait
                )
                self.sleep(wait)
        raise ModelError(
            f"the Messages API kept failing ({why}) after {self.max_attempts} attempts; try again later or raise the budget's wall time"
        )

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
        cost = cost_usd(model, usage)
        if cost is None and model not in self._unpriced:
            self._unpriced.add(model)
            log.warning("model %r is not in bot/model/prices.json: its cost is reported as null; add it there", model)
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
            cost_usd=cost,
            retries=retries,
            latency_s=round(latency_s, 4),
        )
