"""Gathering every secret a run holds, for redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.secrets import held_secrets
from bot.settings import load_settings


def test_held_secrets_cover_settings_environment_and_repo_files(tmp_path: Path) -> None:
    (tmp_path / ".env.local").write_text("export DB_PASSWORD='hunter2-long-value'\nSHORT=x\n")
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\nMIIEabcdefgh\n-----END PRIVATE KEY-----\n")
    settings = load_settings(admin_token="admin-token-value-1")
    env = {
        "GITHUB_TOKEN": "ghp_envtokenvalue",
        "HOME": "/root",
        "AIFIX_WEBHOOK_SECRET": "hook-secret-9",
        "AIFIX_WORK_DIR": "/srv/ai-fix-work",
    }
    held = held_secrets(settings, env, tmp_path)
    for value in ("admin-token-value-1", "ghp_envtokenvalue", "hook-secret-9", "hunter2-long-value"):
        assert value in held
    assert any("MIIEabcdefgh" in v for v in held) and "/root" not in held and "/srv/ai-fix-work" not in held


def test_held_secrets_include_the_jobs_tokens_longest_first() -> None:
    held = held_secrets(load_settings(), {}, tokens=["ghs_short_token_1", "ghs_a_much_longer_token_value_2", ""])
    assert held == ["ghs_a_much_longer_token_value_2", "ghs_short_token_1"]


def test_the_viewer_secret_is_redacted_and_checked_at_start() -> None:
    assert "viewer-signing-key-0123" in held_secrets(load_settings(viewer_secret="viewer-signing-key-0123"), {})
    with pytest.raises(ConfigError, match="AIFIX_VIEWER_SECRET: .*at least 16 characters.*openssl rand -hex 32"):
        load_settings(viewer_secret="short")
    with pytest.raises(ConfigError, match="AIFIX_PUBLIC_URL: .*starting with https://"):
        load_settings(public_url="ai-fix.example.com")
    assert load_settings(public_url="https://ai-fix.example.com/").public_url == "https://ai-fix.example.com"
