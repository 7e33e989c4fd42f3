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
from bot.model.base import ModelRequest, ModelResponse, ToolCall, Usage, estimate_tokens
from bot.model.prices import cost_usd

CACHE_MIN_TOKENS = 1024
"""The smallest prefix the API caches (Sonnet-class models)."""


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
    """Which prefixes have been written to the (simulated) cache.

    The rule: each breakpoint closes a prefix; the longest prefix written before is read, the rest up
    to the last breakpoint is written, what follows it is ordinary input.
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def usage(self, segments: list[str], rest: str, output: str) -> Usage:
        """`segments` each end at a breakpoint, in order; `rest` follows the last one."""
        prefixes = ["".join(segments[: i + 1]) for i in range(len(segments))]
        keys = [hashlib.sha256(p.encode()).hexdigest() for p in prefixes]
        cacheable = [i for i, p in enumerate(prefixes) if estimate_tokens(p) >= CACHE_MIN_TOKENS]
        hits = [i for i in cacheable if keys[i] in self._seen]
        read = estimate_tokens(prefixes[hits[-1]]) if hits else 0
        written = estimate_tokens(prefixes[cacheable[-1]]) - read if cacheable else 0
        self._seen.update(keys[i] for i in cacheable)
        total = estimate_tokens("".join(segments)) + estimate_tokens(rest)
        return Usage(
            input_tokens=total - read - written,
            output_tokens=estimate_tokens(output),
            cache_read_tokens=read,
            cache_write_tokens=written,
        )


def cache_segments(request: ModelRequest) -> tuple[list[str], str]:
    """The request's text cut at its cache breakpoints: tools + system, then each marked message block."""
    segments, current = [json.dumps(request.tools, sort_keys=True) + request.system], ""
    for message in request.messages:
        blocks = (
            message["content"]
            if isinstance(message["content"], list)
            else [{"type": "text", "text": message["content"]}]
        )
        for block in blocks:
            current += block.get("text", json.dumps(block, sort_keys=True))
            if block.get("cache_control"):
                segments.append(current)
                current = ""
    return segments, current


def user_text(request: ModelRequest) -> str:
    """All text of the request's last message."""
    body = request.messages[-1]["content"]
    return body if isinstance(body, str) else "\n".join(b.get("text", "") for b in body)


def compress_by_echo(request: ModelRequest) -> str:
    """The scripted stand-in for history compression: keep each conclusion's first sentence."""
    text = user_text(request)
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
                raise ModelError(
                    f"the script ran out after {len(self.requests) - 1} requests; add turns to the test's script"
                )
            entry = self.script.pop(0)
            reply = entry(request) if callable(entry) else entry
        calls = []
        for name, tool_input in reply.calls:
            self._calls += 1
            calls.append(ToolCall(id=f"toolu_{self._calls:04d}", name=name, input=tool_input))
        segments, rest = cache_segments(request)
        usage = self.cache.usage(segments, rest, reply.text + json.dumps([c.input for c in calls]))
        return ModelResponse(
            model=request.model,
            text=reply.text,
            tool_calls=calls,
            stop_reason="tool_use" if calls else "end_turn",
            usage=usage,
            cost_usd=cost_usd(request.model, usage),
        )

    def close(self) -> None:
        """Nothing to close: the script is in memory."""
