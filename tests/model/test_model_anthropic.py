"""The Anthropic backend on the real SDK against the fake Messages API on loopback."""

from __future__ import annotations

import json
import logging
import time
from contextlib import ExitStack, closing

import pytest

from bot.errors import ModelError
from bot.model.base import ModelRequest
from bot.model.scripted import ScriptedModel, call, turn
from tests.support.model import anthropic_model, serve_fake_api

TOOLS = [
    {
        "name": "finish",
        "description": "end",
        "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}}},
    }
]
STABLE = "You are a careful engineer. " * 400  # well over the 1024-token cache minimum


def request(model: str = "claude-sonnet-4-5") -> ModelRequest:
    return ModelRequest(
        model=model,
        system=STABLE,
        messages=[{"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}],
        tools=TOOLS,
        tool_choice={"type": "tool", "name": "finish"},
    )


def test_tool_call_usage_cache_and_cost() -> None:
    script = ScriptedModel([turn("done", call("finish", summary="ok")), turn("again", call("finish", summary="ok2"))])
    with serve_fake_api(script) as (fake, url), closing(anthropic_model(url)) as model:
        first = model.complete(request())
        second = model.complete(request())
    sent = json.loads(fake.bodies[0])
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["tool_choice"] == {"type": "tool", "name": "finish"}
    assert sent["tools"][0]["name"] == "finish"
    assert first.tool_calls[0].name == "finish" and first.tool_calls[0].input == {"summary": "ok"}
    assert first.text == "done" and first.stop_reason == "tool_use"
    assert first.usage.cache_write_tokens > 1024 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens and second.usage.cache_write_tokens == 0
    # Sonnet: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens.
    u = first.usage
    expected = (u.input_tokens * 3 + u.output_tokens * 15 + u.cache_write_tokens * 3.75) / 1e6
    assert first.cost_usd == pytest.approx(expected)
    assert second.cost_usd < first.cost_usd


def test_529_and_429_are_retried_honouring_retry_after() -> None:
    sleeps: list[float] = []
    script = ScriptedModel([turn("", call("finish", summary="ok"))])
    with serve_fake_api(script) as (fake, url):
        fake.failures = [(529, {}), (429, {"retry-after": "2"}), (503, {"retry-after-ms": "1500"})]
        with closing(anthropic_model(url, sleep=sleeps.append)) as model:
            response = model.complete(request())
    assert response.tool_calls[0].name == "finish"
    assert response.retries == 3
    assert len(fake.bodies) == 4
    assert 0 < sleeps[0] <= 0.5 and sleeps[1:] == [2.0, 1.5]


def test_gives_up_after_max_attempts_with_a_clear_error() -> None:
    script = ScriptedModel([])
    with serve_fake_api(script) as (fake, url):
        fake.failures = [(500, {})] * 3
        with (
            closing(anthropic_model(url, max_attempts=3)) as model,
            pytest.raises(ModelError, match="after 3 attempts"),
        ):
            model.complete(request())
    assert len(fake.bodies) == 3


def test_client_errors_are_not_retried() -> None:
    script = ScriptedModel([])
    with serve_fake_api(script) as (fake, url):
        fake.failures = [(401, {})]
        with closing(anthropic_model(url)) as model, pytest.raises(ModelError, match="AIFIX_ANTHROPIC_API_KEY"):
            model.complete(request())
    assert len(fake.bodies) == 1


def test_unknown_model_costs_null_with_a_warning_never_a_refusal(caplog: pytest.LogCaptureFixture) -> None:
    script = ScriptedModel([turn("", call("finish", summary="ok"))])
    with (
        caplog.at_level(logging.WARNING),
        serve_fake_api(script) as (_fake, url),
        closing(anthropic_model(url)) as model,
    ):
        response = model.complete(request(model="claude-future-9"))
    assert response.cost_usd is None
    assert response.tool_calls[0].name == "finish"
    assert "claude-future-9" in caplog.text and "AIFIX_MODEL_PRICES" in caplog.text


def test_a_call_gets_no_more_time_than_the_run_has_left_retries_included() -> None:
    with ExitStack() as stack:
        fake, url = stack.enter_context(serve_fake_api(ScriptedModel([turn("late", call("finish", summary="ok"))] * 3)))
        fake.delay_s = 4.0  # a hung API: every answer comes after the time left
        model = stack.enter_context(closing(anthropic_model(url)))
        began = time.monotonic()
        with pytest.raises(ModelError, match="wall-time budget"):
            model.complete(request().model_copy(update={"timeout_s": 1.0}))
        spent = time.monotonic() - began
    assert spent < 3.0, f"the call took {spent:.1f} s with 1 s left"
    assert len(fake.bodies) == 1, "no retry started once the time was spent"
