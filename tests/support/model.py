"""Fake model APIs: real starlette apps on loopback, answering from a ScriptedModel.

`FakeModelAPI` is what every fake shares: it records each request's path, raw body and headers (for
canary checks), can fail the next calls with chosen statuses (for retry tests) and turns the scripted
answer into a response. `FakeMessagesAPI` speaks Anthropic's Messages API, also as Amazon Bedrock and
Google Vertex AI serve it (the model in the path, `anthropic_version` in the body); the Chat
Completions fake lives in `tests.support.chat_api`. The real SDK clients are pointed at them with
`base_url=`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bot.errors import ModelError
from bot.model.anthropic_backend import AnthropicModel
from bot.model.base import ModelRequest, ModelResponse
from bot.model.retry import RetryPolicy
from bot.model.scripted import ScriptedModel
from tests.support.server import serve


class FakeModelAPI:
    """A scripted model behind an HTTP API; subclasses translate requests and answers."""

    routes: tuple[str, ...] = ()
    """The POST routes the API answers (path parameters join the body)."""

    def __init__(self, scripted: ScriptedModel) -> None:
        self.scripted = scripted
        self.bodies: list[str] = []
        """Raw request bodies, as received."""
        self.headers: list[dict[str, str]] = []
        """Each request's headers, in the same order."""
        self.paths: list[str] = []
        """Each request's path, in the same order."""
        self.failures: list[tuple[int, dict[str, str]]] = []
        """Statuses (with headers) to answer the next calls with, before any scripted turn."""
        self.delay_s = 0.0
        """Seconds each answer waits before it is sent (a slow or hung API)."""
        self.api_key = ""
        """When set, the one key the API takes (`x-api-key`, or `Authorization: Bearer`); another is answered 401."""
        self.app = Starlette(routes=[Route(r, self.endpoint, methods=["POST"]) for r in self.routes])

    async def endpoint(self, request: Request) -> JSONResponse:
        raw = (await request.body()).decode()
        self.bodies.append(raw)
        self.headers.append(dict(request.headers))
        self.paths.append(request.url.path)
        await asyncio.sleep(self.delay_s)
        given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.api_key and given != self.api_key:
            return JSONResponse(self.error(401, "invalid x-api-key"), status_code=401)
        if (problem := self.check(raw)) is not None:
            return JSONResponse(self.error(400, problem), status_code=400)
        if self.failures:
            status, headers = self.failures.pop(0)
            return JSONResponse(self.error(status, "injected"), status_code=status, headers=headers)
        body = {**request.path_params, **json.loads(raw)}
        try:
            reply = self.scripted.complete(self.model_request(body))
        except ModelError as exc:  # the script ran out: tell the client as the API would
            return JSONResponse(self.error(400, str(exc)), status_code=400)
        return JSONResponse(self.response(body, reply))

    def check(self, raw: str) -> str | None:
        """Why the request breaks the API's schema, or None."""
        return None

    def model_request(self, body: dict[str, Any]) -> ModelRequest:
        raise NotImplementedError

    def response(self, body: dict[str, Any], reply: ModelResponse) -> dict[str, Any]:
        raise NotImplementedError

    def error(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError


class FakeMessagesAPI(FakeModelAPI):
    routes = (
        "/v1/messages",
        "/model/{model}/invoke",  # Bedrock
        "/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict",  # Vertex AI
    )
    CLOUDS = ("/model/", "/projects/")
    """Bedrock's and Vertex AI's paths."""

    def check(self, raw: str) -> str | None:
        """The clouds take the model from the path and the API version from the body."""
        body, path = json.loads(raw), self.paths[-1]
        if path.startswith(self.CLOUDS) and ("model" in body or not body.get("anthropic_version")):
            return f"{path}: the body must carry anthropic_version and no model"
        return None

    def model_request(self, body: dict[str, Any]) -> ModelRequest:
        system = body.get("system", "")
        tools = body.get("tools", [])
        return ModelRequest(
            model=body["model"],
            system=system if isinstance(system, str) else "".join(b["text"] for b in system),
            messages=body["messages"],
            tools=tools,
            tool_choice=body.get("tool_choice"),
            max_tokens=body["max_tokens"],
            purpose="step" if tools else "compress",
        )

    def response(self, body: dict[str, Any], reply: ModelResponse) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in reply.tool_calls]
        u = reply.usage
        return {
            "id": f"msg_{len(self.bodies):04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cache_creation_input_tokens": u.cache_write_tokens,
                "cache_read_input_tokens": u.cache_read_tokens,
            },
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {529: "overloaded_error", 400: "invalid_request_error", 401: "authentication_error"}.get(
            status, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}


@contextmanager
def serve_fake_api(scripted: ScriptedModel) -> Iterator[tuple[FakeMessagesAPI, str]]:
    """Run the fake Messages API on loopback; yields it and its base URL."""
    fake = FakeMessagesAPI(scripted)
    with serve(fake.app) as url:
        yield fake, url


def no_wait(**options: Any) -> RetryPolicy:
    """Retries with instant back-off, recording nothing (tests pass `sleep=` to see the waits)."""
    options.setdefault("sleep", lambda _s: None)
    return RetryPolicy(**options)


def anthropic_model(base_url: str, *, api_key: str = "sk-ant-test-key-not-real-000000", **retry: Any) -> AnthropicModel:
    """The real backend on the real SDK, aimed at the fake, with instant back-off for tests."""
    return AnthropicModel.from_settings(api_key, base_url, timeout_s=20.0, retry=no_wait(**retry))
