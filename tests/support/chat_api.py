"""A fake OpenAI-compatible Chat Completions API (what OpenAI, Ollama and vLLM serve at `/v1/chat/completions`).

A real starlette app on loopback, answering from a ScriptedModel like the fake Messages API it shares
its machinery with (`tests.support.model.FakeModelAPI`). Every request is held to the API's request
schema (the fields ai-fix sends, as the API reference defines them; anything else is refused with 400
and recorded in `violations`), every function's `parameters` must be a valid JSON Schema, and each
scripted call's arguments must fit the schema its function declared. A scripted call whose input is
`{"_raw": TEXT}` is sent with TEXT as its arguments verbatim (malformed JSON, for tests). Usage
follows OpenAI's automatic prompt caching: a prefix seen before (tools and system, at least 1024
tokens) is reported as `prompt_tokens_details.cached_tokens`, inside `prompt_tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, ValidationError

from bot.model.base import ModelRequest, ModelResponse
from bot.model.openai_backend import OpenAIModel
from tests.support.model import FakeModelAPI, no_wait
from tests.support.server import serve


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Strict):
    role: Literal["system", "developer", "user", "assistant"]
    content: str


class Function(_Strict):
    name: str
    description: str = ""
    parameters: dict[str, Any]


class FunctionTool(_Strict):
    type: Literal["function"]
    function: Function


class Named(_Strict):
    name: str


class NamedChoice(_Strict):
    type: Literal["function"]
    function: Named


class ChatRequest(_Strict):
    model: str
    messages: list[Message]
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedChoice | None = None
    max_completion_tokens: int | None = None
    max_tokens: int | None = None


class FakeChatAPI(FakeModelAPI):
    routes = ("/v1/chat/completions",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.violations: list[str] = []
        """Why requests (or scripted answers) broke the schema."""

    def check(self, raw: str) -> str | None:
        try:
            ChatRequest.model_validate_json(raw)
            for tool in json.loads(raw).get("tools") or []:
                jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])
        except (ValidationError, jsonschema.SchemaError) as exc:
            self.violations.append(str(exc))
            return str(exc)
        return None

    def model_request(self, body: dict[str, Any]) -> ModelRequest:
        system = "".join(m["content"] for m in body["messages"] if m["role"] in ("system", "developer"))
        tools = body.get("tools") or []
        return ModelRequest(
            model=body["model"],
            system=system,
            messages=[m for m in body["messages"] if m["role"] not in ("system", "developer")],
            tools=tools,
            tool_choice=None,
            max_tokens=body.get("max_completion_tokens") or body.get("max_tokens") or 4096,
            purpose="step" if tools else "compress",
        )

    def response(self, body: dict[str, Any], reply: ModelResponse) -> dict[str, Any]:
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in body.get("tools") or []}
        calls = []
        for c in reply.tool_calls:
            if set(c.input) == {"_raw"}:
                arguments = c.input["_raw"]
            else:
                arguments = json.dumps(c.input)
                if c.name in schemas:
                    try:
                        jsonschema.validate(c.input, schemas[c.name])
                    except jsonschema.ValidationError as exc:
                        self.violations.append(
                            f"scripted {c.name} call does not fit its declared schema: {exc.message}"
                        )
            calls.append({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
        u = reply.usage
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{len(self.bodies):04d}",
            "object": "chat.completion",
            "created": 1_790_000_000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {
                # OpenAI reports no cache writes: what the simulation wrote is ordinary prompt input.
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.output_tokens,
                "total_tokens": u.prompt_tokens + u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
            },
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@contextmanager
def serve_chat_api(scripted: Any) -> Iterator[tuple[FakeChatAPI, str]]:
    """Run the fake on loopback; yields it and its base URL with `/v1` (what OPENAI_BASE_URL would hold)."""
    fake = FakeChatAPI(scripted)
    with serve(fake.app) as url:
        yield fake, url + "/v1"


def openai_model(base_url: str, *, api_key: str = "sk-openai-test-key-not-real-0000", **retry: Any) -> OpenAIModel:
    """The real backend on the real `openai` SDK, aimed at the fake, with instant back-off for tests."""
    return OpenAIModel.from_settings(api_key, base_url, timeout_s=20.0, retry=no_wait(**retry))
