"""Prices, routing, replay and the scripted model: pure parts of the model layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.contract.models import Budget, Criterion, ModelConfig, Scope, TaskContract
from bot.errors import ConfigError, ModelError
from bot.model.base import ModelRequest, ModelResponse, ToolCall, Usage
from bot.model.prices import cost_usd, price_for
from bot.model.providers import ModelSpec, parse_spec
from bot.model.replay import ReplayModel
from bot.model.routing import choose_model
from bot.model.scripted import PromptCache, ScriptedModel, call, turn


def test_dated_ids_price_as_their_family() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("claude-sonnet-5-5") == price_for("claude-sonnet-5")
    assert price_for("claude-unreleased-9") is None
    assert cost_usd("claude-haiku-4-5", Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000)) == pytest.approx(
        1.1
    )


def contract(title: str, goal: str, allow: list[str], **kw: object) -> TaskContract:
    return TaskContract(status="ready", title=title, goal=goal, scope=Scope(allow=allow), **kw)  # type: ignore[arg-type]


def test_small_mechanical_task_goes_to_the_small_model_with_a_reason() -> None:
    choice = choose_model(contract("Fix typo in README", "Fix the typo", ["README.md"]), "big", "small")
    assert choice.name == "small" and "typo" in choice.reason and "README.md" in choice.reason


def test_general_task_goes_to_the_main_model() -> None:
    c = contract(
        "Division by zero crashes",
        "Return None",
        ["src/**"],
        acceptance_criteria=[Criterion(text="a", origin="stated")],
    )
    choice = choose_model(c, "big", "small")
    assert choice.name == "big" and choice.small == "small" and "general" in choice.reason


def test_repo_config_overrides_the_settings_models() -> None:
    c = contract("Add a feature", "more", ["**"], model=ModelConfig(name="claude-opus-4-5", small="claude-3-5-haiku"))
    choice = choose_model(c, "big", "small")
    assert (choice.name, choice.small) == ("claude-opus-4-5", "claude-3-5-haiku")
    tiny = contract(
        "Bump version", "bump", ["**"], budget=Budget(max_lines_changed=10), model=ModelConfig(small="claude-3-5-haiku")
    )
    assert choose_model(tiny, "big", "small").name == "claude-3-5-haiku"


def req() -> ModelRequest:
    return ModelRequest(model="m", system="s", messages=[{"role": "user", "content": "x"}])


def test_replay_serves_recorded_responses_in_order_then_says_it_diverged(tmp_path: Path) -> None:
    responses = [
        ModelResponse(model="m", tool_calls=[ToolCall(id=f"t{i}", name="finish", input={"i": i})]) for i in range(2)
    ]
    lines = [json.dumps({"step": i, "model_calls": [{"response": r.model_dump()}]}) for i, r in enumerate(responses)]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    model = ReplayModel.from_trace(trace)
    answers = [model.complete(req()) for _ in range(2)]
    assert [a.tool_calls[0].input["i"] for a in answers] == [0, 1]
    assert answers[0].model == "replay:m"
    with pytest.raises(ModelError, match="diverged"):
        model.complete(req())


def test_replay_refuses_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        ReplayModel.from_trace(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match="no model responses"):
        ReplayModel.from_trace(tmp_path / "empty.jsonl")


def test_scripted_model_runs_out_loudly() -> None:
    model = ScriptedModel([turn("hi", call("finish", summary="s"))])
    assert model.complete(req()).tool_calls[0].id == "toolu_0001"
    with pytest.raises(ModelError, match="ran out"):
        model.complete(req())


def test_the_simulated_cache_reads_the_longest_known_prefix_and_writes_the_rest() -> None:
    cache = PromptCache()
    stable, slow = "s" * 4400, "v" * 800  # 1100 and 200 tokens
    first = cache.usage([stable, slow], "tail", "out")
    assert (first.cache_write_tokens, first.cache_read_tokens, first.input_tokens) == (1300, 0, 1)
    same = cache.usage([stable, slow], "other tail", "out")
    assert (same.cache_write_tokens, same.cache_read_tokens) == (0, 1300)
    moved = cache.usage([stable, "w" * 800], "tail", "out")
    assert (moved.cache_write_tokens, moved.cache_read_tokens) == (200, 1100)
    small = cache.usage(["x" * 400], "tail", "out")
    assert (small.cache_write_tokens, small.cache_read_tokens, small.input_tokens) == (0, 0, 101)


def test_the_provider_comes_from_the_spec_prefix() -> None:
    assert parse_spec("claude-sonnet-4-5") == ModelSpec("anthropic", "claude-sonnet-4-5")
    assert parse_spec("anthropic:claude-opus-5") == ModelSpec("anthropic", "claude-opus-5")
    assert parse_spec("openai:gpt-5.4") == ModelSpec("openai", "gpt-5.4")
    assert parse_spec("ollama:qwen3:8b") == ModelSpec("ollama", "qwen3:8b")
    assert parse_spec("vllm:Qwen/Qwen3-Coder-30B") == ModelSpec("vllm", "Qwen/Qwen3-Coder-30B")
    with pytest.raises(ConfigError, match="unknown provider 'qwen3'.*ollama:qwen3:8b"):
        parse_spec("qwen3:8b")
    with pytest.raises(ConfigError, match="names no model; write openai:MODEL"):
        parse_spec("openai:")


def test_openai_models_price_by_family_and_the_longest_key_wins() -> None:
    assert price_for("gpt-5.4-mini-2026-03-17") == price_for("gpt-5.4-mini") != price_for("gpt-5.4")
    assert price_for("gpt-5.2-pro") != price_for("gpt-5.2")
    assert cost_usd("gpt-5.4", Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000)) == pytest.approx(2.75)
