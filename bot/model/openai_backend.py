"""The OpenAI-compatible backend: the official `openai` SDK's Chat Completions with function tools and our own retries.

It speaks to OpenAI and to any server with the same API (Ollama, vLLM, llama.cpp's server, a LiteLLM
gateway). Requests arrive in the Messages API's shapes (`bot.model.base`) and are translated here:
the stable layer becomes the system message, a message's text blocks are joined in order (so the
stable prefix stays byte-identical and the provider's automatic prompt cache can serve it), tools
become function tools (Anthropic's built-in text editor as the schema in `function_tools.json`) and
`tool_choice` is mapped. Arguments that are not a JSON object come back as a call carrying an `error`,
which the loop answers as malformed: a sloppy model never crashes a run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Literal

import openai

from bot.errors import ModelError
from bot.model.base import ModelRequest, ModelResponse, ToolCall, Usage
from bot.model.prices import Price, Pricer
from bot.model.retry import Api, RetryPolicy, call_timeout, with_retries

CHAT_API = Api(
    name="the Chat Completions API",
    transient=(openai.APITimeoutError, openai.APIConnectionError),
    status=openai.APIStatusError,
    fixes={
        401: "check the API key (for openai: AIFIX_OPENAI_API_KEY or OPENAI_API_KEY)",
        403: "the API key lacks access to this model; pick another with --model or model.name",
        404: "the server does not know this model (or this URL); check the model spec and the provider's base URL setting",
    },
)
TOOL_CHOICE = {"any": "required", "auto": "auto", "none": "none"}
"""Messages API `tool_choice` types → Chat Completions; `{"type": "tool", "name": N}` names a function."""
MAX_SHOWN_ARGUMENTS = 300


@cache
def function_tools() -> dict[str, dict[str, Any]]:
    raw: dict[str, dict[str, Any]] = json.loads(
        resources.files("bot.model").joinpath("function_tools.json").read_text()
    )
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def function_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A Messages API tool definition as a Chat Completions function tool."""
    if "input_schema" in tool:
        function = {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool["input_schema"],
        }
    elif (builtin := function_tools().get(tool.get("type", ""))) is not None:
        function = {"name": tool["name"], **builtin}
    else:
        raise ModelError(
            f"the tool {tool.get('name')!r} (type {tool.get('type')!r}) has no function form; add it to bot/model/function_tools.json"
        )
    return {"type": "function", "function": function}


def chat_tool_choice(choice: dict[str, Any]) -> str | dict[str, Any]:
    if choice.get("type") == "tool":
        return {"type": "function", "function": {"name": choice["name"]}}
    return TOOL_CHOICE[choice["type"]]


def message_text(content: str | list[dict[str, Any]]) -> str:
    """A message's content as one string: the form every compatible server reads."""
    if isinstance(content, str):
        return content
    others = sorted({str(b.get("type")) for b in content if b.get("type") != "text"})
    if others:
        raise ModelError(f"the Chat Completions backend sends text only; this request holds {', '.join(others)} blocks")
    return "\n\n".join(b["text"] for b in content)


def tool_call(index: int, call: Any) -> ToolCall:
    """One call of the answer; arguments that are not a JSON object make a call the loop rejects as malformed."""
    call_id = call.id or f"call_{index}"
    function = getattr(call, "function", None)
    if function is None:
        return ToolCall(id=call_id, name=str(call.type), error="only function tools exist here; call one of them")
    raw = function.arguments
    if isinstance(raw, dict):  # a lenient server that sent an object instead of a JSON string
        return ToolCall(id=call_id, name=function.name, input=raw)
    if raw is None or not raw.strip():
        return ToolCall(id=call_id, name=function.name)
    shown = raw if len(raw) <= MAX_SHOWN_ARGUMENTS else raw[:MAX_SHOWN_ARGUMENTS] + "..."
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        error = f"its arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): {shown}"
        return ToolCall(id=call_id, name=function.name, input={"_arguments": raw}, error=error)
    if not isinstance(parsed, dict):
        error = f"its arguments must be a JSON object, not {type(parsed).__name__}: {shown}"
        return ToolCall(id=call_id, name=function.name, input={"_arguments": raw}, error=error)
    return ToolCall(id=call_id, name=function.name, input=parsed)


def chat_usage(u: Any) -> Usage:
    """Chat Completions counts cached tokens inside `prompt_tokens`; ours are disjoint."""
    if u is None:
        return Usage()
    details = u.prompt_tokens_details
    read = (details.cached_tokens or 0) if details else 0
    written = (getattr(details, "cache_write_tokens", None) or 0) if details else 0
    return Usage(
        input_tokens=max(u.prompt_tokens - read - written, 0),
        output_tokens=u.completion_tokens,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


class OpenAIModel:
    """`Model` over an OpenAI-compatible Chat Completions endpoint."""

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens",
        retry: RetryPolicy | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.client = client
        self.max_tokens_field = max_tokens_field
        """OpenAI's newer models refuse `max_tokens`; Ollama reads only `max_tokens`."""
        self.retry = retry or RetryPolicy()
        self.pricer = Pricer(prices)

    @classmethod
    def from_settings(
        cls,
        api_key: str,
        base_url: str | None,
        *,
        timeout_s: float = 300.0,
        max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens",
        retry: RetryPolicy | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> OpenAIModel:
        client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        return cls(client, max_tokens_field=max_tokens_field, retry=retry, prices=prices)

    def complete(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)
        started = time.monotonic()
        completion, retries = with_retries(
            lambda left: self.client.chat.completions.create(**(params | call_timeout(left, self.client))),
            CHAT_API,
            self.retry,
            limit_s=request.timeout_s,
        )
        return self._response(request.model, completion, retries, time.monotonic() - started)

    def close(self) -> None:
        self.client.close()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.system}]
        messages += [{"role": m["role"], "content": message_text(m["content"])} for m in request.messages]
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            self.max_tokens_field: request.max_tokens,
        }
        if request.tools:
            params["tools"] = [function_tool(t) for t in request.tools]
            if request.tool_choice:
                params["tool_choice"] = chat_tool_choice(request.tool_choice)
        return params

    def _response(self, model: str, completion: Any, retries: int, latency_s: float) -> ModelResponse:
        if not completion.choices:
            raise ModelError(f"the Chat Completions API answered {model} with no choices; check the server's log")
        choice = completion.choices[0]
        usage = chat_usage(completion.usage)
        return ModelResponse(
            model=model,
            text=choice.message.content or "",
            tool_calls=[tool_call(i, c) for i, c in enumerate(choice.message.tool_calls or [])],
            stop_reason=choice.finish_reason or "",
            usage=usage,
            cost_usd=self.pricer.cost(model, usage),
            retries=retries,
            latency_s=round(latency_s, 4),
        )
