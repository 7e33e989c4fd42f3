"""`ai-fix serve` refuses to start on a missing or malformed setting, with one line naming it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.commands.main import main

AI_FIX = str(Path(sys.executable).parent / "ai-fix")
KEY = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": "s"},
            "AIFIX_APP_ID is not set: set AIFIX_APP_ID to the numeric App ID",
        ),
        ({"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY}, "AIFIX_WEBHOOK_SECRET is not set"),
        (
            {"AIFIX_APP_ID": "twelve", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": "s"},
            "AIFIX_APP_ID: Input should be a valid integer",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": "not a key", "AIFIX_WEBHOOK_SECRET": "s"},
            "AIFIX_PRIVATE_KEY does not look like a PEM key",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": "s",
                "AIFIX_DATABASE_URL": "mysql://db",
            },
            "AIFIX_DATABASE_URL 'mysql://db' is not supported",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": "s",
                "AIFIX_PIPELINE": "bot.nowhere:Pipeline",
            },
            "AIFIX_PIPELINE 'bot.nowhere:Pipeline' cannot be loaded",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": "s"},
            "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set, and claude-sonnet-5-5 (the main model)",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": "s",
                "AIFIX_MODEL": "openai:gpt-5.4",
                "AIFIX_SMALL_MODEL": "ollama:qwen3:8b",
            },
            "AIFIX_OPENAI_API_KEY and OPENAI_API_KEY are not set, and openai:gpt-5.4 (the main model)",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": "s", "AIFIX_MODEL": "gpt-5.4"},
            "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set, and gpt-5.4 (the main model) is an Anthropic model",
        ),
    ],
)
def test_serve_stops_at_start_with_one_line(tmp_path, monkeypatch, capsys, env, message):
    for name in [k for k in os.environ if k.startswith(("AIFIX_", "ANTHROPIC_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--port", "1"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ai-fix serve: ") and message in lines[0]


def test_the_installed_command_exits_2(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")}
    result = subprocess.run(
        [AI_FIX, "serve"], env=clean, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("ai-fix serve: AIFIX_APP_ID is not set")
