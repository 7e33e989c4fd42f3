"""A fake Anthropic Messages API: a real starlette app on loopback, answering from a ScriptedModel.

The real `anthropic` client is pointed at it with `base_url=`; it records every request body (for
canary checks) and can fail the first calls with chosen statuses (for retry tests).
"""

from __future__ import annotations

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
from bot.model.base import ModelRequest
from bot.model.scripted import ScriptedModel
from tests.support.server import serve


class FakeMessagesAPI:
    def __init__(self, scripted: ScriptedModel) -> None:
        self.scripted = scripted
        self.bodies: list[str] = []
        """Raw request bodies, as received."""
        self.failures: list[tuple[int, dict[str, str]]] = []
        """Statuses (with headers) to answer the next calls with, before any scripted turn."""
        self.app = Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])

    async def messages(self, request: Request) -> JSONResponse:
        raw = (await request.body()).decode()
        self.bodies.append(raw)
        if self.failures:
            status, headers = self.failures.pop(0)
            error = {
                "type": "error",
                "error": {"type": "overloaded_error" if status == 529 else "api_error", "message": "injected"},
            }
            return JSONResponse(error, status_code=status, headers=headers)
        body = json.loads(raw)
        system = body.get("system", "")
        system_text = system if isinstance(system, str) else "".join(b["text"] for b in system)
        tools = body.get("tools", [])
        model_request = ModelRequest(
            model=body["model"],
            system=system_text,
            messages=body["messages"],
            tools=tools,
            tool_choice=body.get("tool_choice"),
            max_tokens=body["max_tokens"],
            purpose="step" if tools else "compress",
        )
        try:
            reply = self.scripted.complete(model_request)
        except ModelError as exc:  # the script ran out: tell the client as the API would
            return JSONResponse(
                {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}, status_code=400
            )
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in reply.tool_calls]
        u = reply.usage
        return JSONResponse(
            {
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
        )


@contextmanager
def serve_fake_api(scripted: ScriptedModel) -> Iterator[tuple[FakeMessagesAPI, str]]:
    """Run the fake on loopback; yields it and its base URL."""
    fake = FakeMessagesAPI(scripted)
    with serve(fake.app) as url:
        yield fake, url


def anthropic_model(
    base_url: str, *, api_key: str = "sk-ant-test-key-not-real-000000", **kwargs: Any
) -> AnthropicModel:
    """The real backend on the real SDK, aimed at the fake, with instant back-off for tests."""
    kwargs.setdefault("sleep", lambda _s: None)
    return AnthropicModel.from_settings(api_key, base_url, timeout_s=20.0, **kwargs)
