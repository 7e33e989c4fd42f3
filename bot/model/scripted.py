"""A scripted model for ai-fix's own tests: it plays back turns written in advance.

Usage is simulated with the Messages API's caching rule (an exact prefix up to the breakpoint, at
least `CACHE_MIN_TOKENS` long, is read from the cache when seen before), so tests and benchmarks see
the token split a real run with the same requests would get.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from bot.errors import ModelError
from bot.model.base import ModelRequest, ModelResponse, ToolCall, Usage
from bot.model.prices import cost_usd

CACHE_MIN_TOKENS = 1024
"""The smallest prefix the API caches (Sonnet-class models)."""


def estimate_tokens(text: str) -> int:
    """About four characters per token: close enough for budgets and simulations."""
    return (len(text) + 3) // 4


class Turn(BaseModel):
    """One scripted answer."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = Field(default_factory=list)
    """(tool name, input) pairs, in order."""


def turn(text: str = "", *calls: tuple[str, dict[str, Any]]) -> Turn:
    return Turn(text=text, calls=list(calls))


def call(name: str, **tool_input: Any) -> tuple[str, dict[str, Any]]:
    return (name, tool_input)


class PromptCache:
    """Which stable prefixes have been written to the (simulated) cache."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def usage(self, prefix: str, rest: str, output: str) -> Usage:
        prefix_tokens, rest_tokens = estimate_tokens(prefix), estimate_tokens(rest)
        out = estimate_tokens(output)
        if prefix_tokens < CACHE_MIN_TOKENS:
            return Usage(input_tokens=prefix_tokens + rest_tokens, output_tokens=out)
        key = hashlib.sha256(prefix.encode()).hexdigest()
        if key in self._seen:
            return Usage(input_tokens=rest_tokens, cache_read_tokens=prefix_tokens, output_tokens=out)
        self._seen.add(key)
        return Usage(input_tokens=rest_tokens, cache_write_tokens=prefix_tokens, output_tokens=out)


def compress_by_echo(request: ModelRequest) -> str:
    """The scripted stand-in for history compression: keep each conclusion's first sentence."""
    body = request.messages[-1]["content"]
    text = body if isinstance(body, str) else "\n".join(b.get("text", "") for b in body)
    return "\n".join(line.split(". ")[0] for line in text.splitlines() if line.startswith("- "))


class ScriptedModel:
    """`Model` that answers step requests from a script and compression requests by `compress`."""

    def __init__(
        self,
        script: list[Turn | Callable[[ModelRequest], Turn]],
        *,
        compress: Callable[[ModelRequest], str] = compress_by_echo,
        cache: PromptCache | None = None,
    ) -> None:
        self.script = list(script)
        self.compress = compress
        self.cache = cache or PromptCache()
        self.requests: list[ModelRequest] = []
        self._calls = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if request.purpose == "compress":
            reply = Turn(text=self.compress(request))
        else:
            if not self.script:
                raise ModelError(f"the script ran out after {len(self.requests) - 1} requests; add turns to the test's script")
            entry = self.script.pop(0)
            reply = entry(request) if callable(entry) else entry
        calls = []
        for name, tool_input in reply.calls:
            self._calls += 1
            calls.append(ToolCall(id=f"toolu_{self._calls:04d}", name=name, input=tool_input))
        prefix = json.dumps(request.tools, sort_keys=True) + request.system
        output = reply.text + json.dumps([c.input for c in calls])
        usage = self.cache.usage(prefix, json.dumps(request.messages), output)
        return ModelResponse(
            model=request.model,
            text=reply.text,
            tool_calls=calls,
            stop_reason="tool_use" if calls else "end_turn",
            usage=usage,
            cost_usd=cost_usd(request.model, usage),
        )
