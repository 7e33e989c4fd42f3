"""The OpenAI-compatible backend on the real `openai` SDK against the fake Chat Completions API on loopback,
and the routing of model specs to providers."""

from __future__ import annotations

import json
import logging
from contextlib import closing

import pytest

from bot.errors import ModelError
from bot.loop.prompt import tool_definitions
from bot.loop.records import EditInput
from bot.model.base import ModelRequest
from bot.model.openai_backend import function_tools
from bot.model.prices import price_for
from bot.model.providers import RoutedModel
from bot.model.scripted import ScriptedModel, call, turn
from tests.support.chat_api import openai_model, serve_chat_api
from tests.support.model import anthropic_model, serve_fake_api

STABLE = "You are a careful engineer. " * 400  # well over the 1024-token cache minimum


def request(model: str = "gpt-5.4-mini", choice: str | None = None) -> ModelRequest:
    return ModelRequest(
        model=model,
        system=STABLE,
        messages=[{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}]}],
        tools=tool_definitions(),
        tool_choice={"type": choice} if choice else {"type": "tool", "name": "plan"},
    )


def test_tools_choice_and_messages_are_translated_and_usage_counts_cached_tokens() -> None:
    plan = call("plan", steps=[{"do": "fix", "done_when": "tests pass"}], impact=["calc.py"])
    edit = call("str_replace_based_edit_tool", command="view", path="calc.py", view_range=[1, 5])
    script = ScriptedModel([turn("Planning.", plan), turn("", edit)])
    with serve_chat_api(script) as (fake, url), closing(openai_model(url)) as model:
        first = model.complete(request())
        second = model.complete(request(choice="any"))
    assert fake.violations == []
    sent = json.loads(fake.bodies[0])
    assert sent["messages"] == [
        {"role": "system", "content": STABLE},
        {"role": "user", "content": "part one\n\ntwo"},
    ]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "plan"}}
    assert json.loads(fake.bodies[1])["tool_choice"] == "required"
    assert sent["max_completion_tokens"] == 4096 and "max_tokens" not in sent
    tools = {t["function"]["name"]: t["function"] for t in sent["tools"]}
    assert set(tools) == {"plan", "str_replace_based_edit_tool", "search_code", "run_checks", "finish", "ask_human"}
    assert tools["str_replace_based_edit_tool"]["parameters"]["required"] == ["command", "path"]
    assert tools["plan"]["parameters"]["required"] == ["steps", "impact"]
    assert first.text == "Planning." and first.stop_reason == "tool_calls"
    assert (first.tool_calls[0].name, first.tool_calls[0].input["impact"]) == ("plan", ["calc.py"])
    assert second.tool_calls[0].input == {"command": "view", "path": "calc.py", "view_range": [1, 5]}
    # The second request repeats the tools and system prefix: read from the cache, at the cached price.
    assert first.usage.cache_read_tokens == 0 and first.usage.cache_write_tokens == 0
    assert second.usage.cache_read_tokens > 1024 and second.usage.input_tokens < first.usage.input_tokens
    price = price_for("gpt-5.4-mini")
    assert price is not None
    u = second.usage
    assert second.cost_usd == pytest.approx(
        (u.input_tokens * price.input + u.cache_read_tokens * price.cache_read + u.output_tokens * price.output) / 1e6
    )
    assert second.cost_usd < first.cost_usd


def test_the_editor_function_schema_matches_what_the_loop_accepts() -> None:
    schema = function_tools()["text_editor_20250728"]["parameters"]
    fields = EditInput.model_fields
    assert set(schema["properties"]) == set(fields)
    assert set(schema["required"]) == {name for name, f in fields.items() if f.is_required()}
    assert schema["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert"]


def test_429_with_retry_after_and_5xx_are_retried() -> None:
    sleeps: list[float] = []
    script = ScriptedModel([turn("", call("finish", summary="ok"))])
    with serve_chat_api(script) as (fake, url):
        fake.failures = [(429, {"retry-after": "3"}), (503, {"retry-after-ms": "250"}), (500, {})]
        with closing(openai_model(url, sleep=sleeps.append)) as model:
            response = model.complete(request(choice="any"))
    assert response.tool_calls[0].name == "finish" and response.retries == 3
    assert len(fake.bodies) == 4
    assert sleeps[:2] == [3.0, 0.25] and 0 < sleeps[2] <= 2.0  # the last one: backoff with jitter


def test_client_errors_are_not_retried_and_name_the_key() -> None:
    with serve_chat_api(ScriptedModel([])) as (fake, url):
        fake.failures = [(401, {})]
        with (
            closing(openai_model(url)) as model,
            pytest.raises(
                ModelError, match="Chat Completions API answered 401.*AIFIX_OPENAI_API_KEY or OPENAI_API_KEY"
            ),
        ):
            model.complete(request())
    assert len(fake.bodies) == 1


def test_arguments_that_are_not_a_json_object_come_back_as_calls_with_an_error() -> None:
    script = ScriptedModel(
        [
            turn(
                "Sloppy.",
                call("plan", _raw='{"steps": [{"do": "fix"'),
                call("finish", _raw="[1, 2]"),
                call("run_checks", _raw=""),
            )
        ]
    )
    with serve_chat_api(script) as (_fake, url), closing(openai_model(url)) as model:
        response = model.complete(request(choice="any"))
    broken, listed, empty = response.tool_calls
    assert broken.error and broken.error.startswith("its arguments are not valid JSON (Expecting")
    assert broken.input == {"_arguments": '{"steps": [{"do": "fix"'}
    assert listed.error == "its arguments must be a JSON object, not list: [1, 2]"
    assert empty.error is None and empty.input == {}


def test_unknown_model_costs_null_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    script = ScriptedModel([turn("", call("finish", summary="ok"))])
    with caplog.at_level(logging.WARNING), serve_chat_api(script) as (_fake, url), closing(openai_model(url)) as model:
        response = model.complete(request(model="qwen3:8b"))
    assert response.cost_usd is None and response.tool_calls[0].name == "finish"
    assert "qwen3:8b" in caplog.text and "AIFIX_MODEL_PRICES" in caplog.text


def test_each_spec_goes_to_its_provider_and_the_answer_names_the_spec() -> None:
    finish = turn("", call("finish", summary="ok"))
    with (
        serve_chat_api(ScriptedModel([finish])) as (chat, chat_url),
        serve_fake_api(ScriptedModel([finish])) as (messages, messages_url),
        closing(RoutedModel({"openai": openai_model(chat_url), "anthropic": anthropic_model(messages_url)})) as routed,
    ):
        small = routed.complete(request(model="openai:gpt-5.4-mini"))
        main = routed.complete(request(model="claude-haiku-4-5"))
        with pytest.raises(ModelError, match="no ollama backend was opened"):
            routed.complete(request(model="ollama:qwen3:8b"))
    assert json.loads(chat.bodies[0])["model"] == "gpt-5.4-mini" and len(chat.bodies) == 1
    assert json.loads(messages.bodies[0])["model"] == "claude-haiku-4-5" and len(messages.bodies) == 1
    assert (small.model, main.model) == ("openai:gpt-5.4-mini", "claude-haiku-4-5")
    assert small.cost_usd is not None and main.cost_usd is not None
