"""`ai-fix run --model openai:... / ollama:...` end to end: the real `openai` client against the fake Chat
Completions API on loopback, a real git repository, bwrap and the sample's own tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.commands.demo import make_repo
from bot.commands.main import main
from bot.commands.toolkit import delivery_pipeline
from bot.errors import ConfigError
from bot.loop.tools import NO_CALL
from bot.model.prices import price_for
from bot.model.scripted import ScriptedModel, call, turn
from bot.settings import load_settings
from tests.support.chat_api import serve_chat_api
from tests.support.model import serve_fake_api
from tests.support.runs import CHECK, FINISH, FIX, PLAN, config, sample_files

pytestmark = pytest.mark.bwrap

TASK = "add() subtracts instead of adding\nThe tests fail with:\nAssertionError: -1 != 5"
CANARIES = {
    "OPENAI_API_KEY": "sk-proj-canary-openai-7Hq2Wm9x",
    "AIFIX_ANTHROPIC_API_KEY": "sk-ant-canary-anthropic-4Rt8Kp1z",
    "GITHUB_TOKEN": "ghp_canaryGithubToken5Nc3Vb6q",
}
REPO_CANARY = "canary-dotenv-value-9Lx4Tq2w"
SCRIPT = [
    turn("Plan first.", PLAN),
    # A small self-hosted model's typical slip: the arguments are cut off, not JSON.
    turn("Look at the code.", call("str_replace_based_edit_tool", _raw='{"command": "view", "path": "calc.py"')),
    turn("add() subtracts: use a + b.", FIX, CHECK),
    turn("Done.", FINISH),
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ANTHROPIC_API_KEY", "AIFIX_OPENAI_API_KEY", "OPENAI_BASE_URL", "AIFIX_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIFIX_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("AIFIX_SANDBOX", "bwrap")
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def repo_with(root: Path, model: str, small: str) -> Path:
    files = sample_files(**{".github/ai-fix.yml": config(model=model, small=small), ".env": f"TOKEN={REPO_CANARY}\n"})
    return make_repo(root / "repo", files)


def read(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    evidence = json.loads((out / "evidence.json").read_text())
    trace = [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]
    return evidence, trace


def assert_the_malformed_call_was_answered(trace: list[dict[str, Any]], bodies: list[str]) -> None:
    actions = [a for r in trace if r["kind"] == "step" for a in r["actions"]]
    [bad] = [a for a in actions if a["decision"] == "malformed" and a["tool"] == "str_replace_based_edit_tool"]
    assert bad["observation"]["text"].startswith(
        "malformed call to str_replace_based_edit_tool: its arguments are not valid JSON"
    )
    assert "malformed call to str_replace_based_edit_tool" in json.loads(bodies[2])["messages"][1]["content"]


def assert_nothing_secret_was_sent(bodies: list[str], headers: list[dict[str, str]], *, allowed: str = "") -> None:
    """No key, token or planted value in any body; in the headers only the endpoint's own key, as its bearer token."""
    secrets = [*CANARIES.values(), REPO_CANARY]
    for body in bodies:
        assert not any(s in body or s[-12:] in body for s in secrets), body[:300]
    for h in headers:
        shown = json.dumps({k: v for k, v in h.items() if k != "authorization"})
        assert not any(s in shown for s in secrets)
        assert h["authorization"] == f"Bearer {allowed or 'no-key'}"


def test_an_openai_model_fixes_the_sample_with_the_sdks_own_variables(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repo_with(env, "claude-sonnet-4-5", small="claude-haiku-4-5")  # --model wins; small stays on Anthropic
    with (
        serve_chat_api(ScriptedModel(list(SCRIPT))) as (chat, chat_url),
        serve_fake_api(ScriptedModel([])) as (messages, messages_url),
    ):
        chat.failures = [(429, {"retry-after": "0.2"})]
        monkeypatch.setenv("OPENAI_BASE_URL", chat_url)  # the SDK's own variables, AIFIX_ ones unset
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", messages_url)
        code = main(
            ["run", "--repo", str(repo), "--task", TASK, "--model", "openai:gpt-5.4", "--out", str(env / "out")]
        )
    printed = capsys.readouterr().out
    assert code == 0, printed
    evidence, trace = read(env / "out")
    assert evidence["accepted"] is True and evidence["checks"][0]["final"]["status"] == "pass"
    assert "model: given on the command line: openai:gpt-5.4" in printed and "openai:gpt-5.4 answered" in printed
    # The 429 was retried after its retry-after; the retry is recorded with the answer.
    assert len(chat.bodies) == len(SCRIPT) + 1 and messages.bodies == []
    steps = [r for r in trace if r["kind"] == "step"]
    assert steps[0]["model_calls"][0]["response"]["retries"] == 1
    assert_the_malformed_call_was_answered(trace, chat.bodies[1:])
    # Cached prompt tokens and their price reach evidence.json.
    cost = evidence["cost"]
    start = trace[0]
    assert (start["model"], start["small_model"]) == ("openai:gpt-5.4", "claude-haiku-4-5")
    assert "| `openai:gpt-5.4` (small: `claude-haiku-4-5`) |" in (env / "out" / "pr.md").read_text()
    assert cost["cache_read_tokens"] > 1024 and cost["cache_write_tokens"] == 0
    price = price_for("gpt-5.4")
    assert price is not None
    expected = (
        cost["input_tokens"] * price.input
        + cost["output_tokens"] * price.output
        + cost["cache_read_tokens"] * price.cache_read
    ) / 1e6
    assert cost["usd"] == pytest.approx(expected, abs=1e-6)
    assert chat.violations == []
    assert_nothing_secret_was_sent(chat.bodies, chat.headers, allowed=CANARIES["OPENAI_API_KEY"])
    for name in ("trace.jsonl", "pr.md", "evidence.json"):
        assert not any(c in (env / "out" / name).read_text() for c in [*CANARIES.values(), REPO_CANARY]), name


def test_an_ollama_model_fixes_the_sample_with_no_key_at_all(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AIFIX_ANTHROPIC_API_KEY")  # no vendor key is needed; OPENAI_API_KEY stays set, unused
    repo = repo_with(env, "ollama:qwen3-coder:30b", small="ollama:qwen3-coder:30b")
    chatty = [SCRIPT[0], turn("The bug must be in add(), I am sure."), *SCRIPT[1:]]  # an answer with no tool call
    with serve_chat_api(ScriptedModel(chatty)) as (chat, chat_url):
        monkeypatch.setenv("AIFIX_OLLAMA_BASE_URL", chat_url)
        code = main(
            ["run", "--repo", str(repo), "--task", TASK, "--model", "ollama:qwen3-coder:30b", "--out", str(env / "out")]
        )
    printed = capsys.readouterr().out
    assert code == 0, printed
    evidence, trace = read(env / "out")
    assert evidence["accepted"] is True
    sent = [json.loads(b) for b in chat.bodies]
    assert {b["model"] for b in sent} == {"qwen3-coder:30b"}
    assert all(b["max_tokens"] == 4096 and "max_completion_tokens" not in b for b in sent)
    no_call = next(a for r in trace if r["kind"] == "step" for a in r["actions"] if a["tool"] == "")
    assert (no_call["decision"], no_call["observation"]["text"]) == ("malformed", NO_CALL)
    assert_the_malformed_call_was_answered(trace, [chat.bodies[0], *chat.bodies[2:]])
    # Not in the price table: the cost is unknown, never refused.
    assert evidence["cost"]["usd"] is None and "cost unknown" in printed
    assert evidence["cost"]["cache_read_tokens"] > 0
    assert chat.violations == []
    assert_nothing_secret_was_sent(chat.bodies, chat.headers)


def test_a_missing_key_stops_the_run_naming_both_variables(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(env, "openai:gpt-5.4", small="openai:gpt-5.4-mini")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OPENAI_API_KEY")
        assert main(["run", "--repo", str(repo), "--task", TASK]) == 2
    err = capsys.readouterr().err
    assert "AIFIX_OPENAI_API_KEY and OPENAI_API_KEY are not set" in err and "openai:gpt-5.4 (the main model)" in err
    assert main(["run", "--repo", str(repo), "--task", TASK, "--model", "gemini:pro"]) == 2
    assert "unknown provider 'gemini'" in capsys.readouterr().err


def no_model_config() -> str:
    """The sample's config without a `model:` section: the user names the model on the command line only."""
    text = config()
    return text[: text.index("model:")]


@pytest.mark.parametrize(
    "prices", [None, '{"openai:gpt-x": {"input": 2.0, "output": 8.0}}'], ids=["unpriced", "priced"]
)
def test_one_vendors_key_is_enough_and_a_model_without_a_price_runs_to_its_end(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], prices: str | None
) -> None:
    monkeypatch.delenv("AIFIX_ANTHROPIC_API_KEY")  # only OpenAI's key is set, and no small model
    monkeypatch.delenv("AIFIX_SMALL_MODEL", raising=False)
    if prices:
        monkeypatch.setenv("AIFIX_MODEL_PRICES", prices)
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": no_model_config()}))
    with serve_chat_api(ScriptedModel(list(SCRIPT))) as (chat, chat_url):
        monkeypatch.setenv("OPENAI_BASE_URL", chat_url)
        code = main(["run", "--repo", str(repo), "--task", TASK, "--model", "openai:gpt-x", "--out", str(env / "out")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    evidence, trace = read(env / "out")
    assert evidence["accepted"] is True
    assert {json.loads(b)["model"] for b in chat.bodies} == {"gpt-x"}
    [start] = [r for r in trace if r["kind"] == "start"]
    assert (start["model"], start["small_model"]) == ("openai:gpt-x", "openai:gpt-x")
    cost, pr = evidence["cost"], (env / "out" / "pr.md").read_text()
    assert cost["input_tokens"] > 0 and cost["output_tokens"] > 0, "tokens are counted either way"
    if prices is None:
        assert cost["usd"] is None
        assert (
            "openai:gpt-x has no price: its tokens are counted, its cost is unknown and the cost limit ($1) cannot apply"
            in printed
        )
        assert "The cost limit ($1) could not apply: a model used has no price" in pr.split("## Known risks", 1)[1]
    else:
        spent = cost["input_tokens"] + cost["cache_read_tokens"] + cost["cache_write_tokens"]
        assert cost["usd"] == pytest.approx((spent * 2.0 + cost["output_tokens"] * 8.0) / 1e6, rel=1e-3)
        assert "could not apply" not in pr


def test_a_missing_key_names_only_the_chosen_vendors_variables(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("AIFIX_SMALL_MODEL", raising=False)
    repo = make_repo(env / "repo", sample_files(**{".github/ai-fix.yml": no_model_config()}))
    assert main(["run", "--repo", str(repo), "--task", TASK, "--model", "openai:gpt-x"]) == 2
    err = capsys.readouterr().err
    assert "AIFIX_OPENAI_API_KEY and OPENAI_API_KEY are not set" in err and "ANTHROPIC" not in err


def test_a_malformed_price_setting_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFIX_MODEL_PRICES", '{"openai:gpt-x": {"input": 1.0}}')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value).startswith("AIFIX_MODEL_PRICES:") and "give input and output" in str(err.value)


def test_serve_at_start_opens_only_the_chosen_vendor(tmp_path: Path) -> None:
    """`ai-fix serve` builds this pipeline at start: AIFIX_MODEL on OpenAI needs OpenAI's key and no other."""
    keys = {"anthropic_api_key": None, "openai_base_url": "http://127.0.0.1:9/v1", "work_dir": tmp_path}
    delivery_pipeline(load_settings(model="openai:gpt-x", openai_api_key="sk-only-openai", **keys))
    with pytest.raises(ConfigError) as err:
        delivery_pipeline(load_settings(model="openai:gpt-x", openai_api_key=None, **keys))
    assert "AIFIX_OPENAI_API_KEY and OPENAI_API_KEY are not set" in str(err.value) and "ANTHROPIC" not in str(err.value)
