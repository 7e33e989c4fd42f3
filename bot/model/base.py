"""The seam between the loop and any model provider: provider-neutral requests and responses.

Messages and tool definitions use the Messages API's JSON shapes (plain dicts), which every backend
can read without the loop importing a provider SDK.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field


def estimate_tokens(text: str) -> int:
    """About four characters per token: close enough for budgets, context sizes and simulations."""
    return (len(text) + 3) // 4


class Usage(BaseModel):
    input_tokens: int = 0
    """Input tokens billed at the full rate (neither written to nor read from the cache)."""
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every input token, however it was billed."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens


class ToolCall(BaseModel):
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    """Why the call cannot be read (arguments that are not a JSON object); the loop answers it as malformed."""


class ModelRequest(BaseModel):
    model: str
    system: str
    """The stable layer; backends that cache put the breakpoint at its end."""
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: dict[str, Any] | None = None
    max_tokens: int = 4096
    purpose: Literal["step", "compress", "resolve"] = "step"
    """What the call is for: a loop step, compressing the history, or resolving a merge's conflicts."""
    timeout_s: float | None = None
    """The most the call may take, retries and their waits included (what is left of the run's wall time);
    None: only the client's own timeout per attempt."""


class ModelResponse(BaseModel):
    model: str
    text: str = ""
    """The text blocks of the answer, joined: the model's stated intent."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop_reason: str = ""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0
    """None when the model is missing from the price table."""
    retries: int = 0
    """How many failed attempts (429, 529, 5xx, timeouts) preceded this answer."""
    latency_s: float = 0.0


class Model(Protocol):
    """Anything that answers a request; implementations are passed in, never imported by the loop."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One call; raises `bot.errors.ModelError` when the provider fails for good."""

    def close(self) -> None:
        """Close the connections it holds; whoever opened the model closes it when its run ends."""
