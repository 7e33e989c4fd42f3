"""Gathering every secret a run holds, for redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.secrets import held_secrets
from bot.settings import load_settings
from tests.support.repos import huge_file, peak_bytes


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


def test_the_sdks_own_variables_stand_in_for_unset_aifix_ones_and_are_gathered(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "ANTHROPIC_API_KEY": "sk-ant-sdk-variable-0001",
        "AIFIX_OPENAI_API_KEY": "",  # empty counts as unset
        "OPENAI_API_KEY": "sk-openai-sdk-variable-0002",
        "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1",
        "AIFIX_ANTHROPIC_BASE_URL": "http://127.0.0.1:5000",
        "ANTHROPIC_BASE_URL": "http://ignored.example",
    }.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.anthropic_api_key is not None and settings.openai_api_key is not None
    assert settings.anthropic_api_key.get_secret_value() == "sk-ant-sdk-variable-0001"
    assert settings.openai_api_key.get_secret_value() == "sk-openai-sdk-variable-0002"
    assert (settings.openai_base_url, settings.anthropic_base_url) == (
        "http://127.0.0.1:4000/v1",
        "http://127.0.0.1:5000",
    )
    # Gathered from the settings themselves, not only from a secret-looking environment.
    assert {"sk-ant-sdk-variable-0001", "sk-openai-sdk-variable-0002"} <= set(held_secrets(settings, env={}))
    monkeypatch.setenv("AIFIX_OPENAI_API_KEY", "sk-openai-aifix-variable-0003")
    openai_key = load_settings().openai_api_key
    assert openai_key is not None and openai_key.get_secret_value() == "sk-openai-aifix-variable-0003"


def test_the_viewer_secret_is_redacted_and_checked_at_start() -> None:
    assert "viewer-signing-key-0123" in held_secrets(load_settings(viewer_secret="viewer-signing-key-0123"), {})
    with pytest.raises(ConfigError, match="AIFIX_VIEWER_SECRET: .*at least 16 characters.*openssl rand -hex 32"):
        load_settings(viewer_secret="short")
    with pytest.raises(ConfigError, match="AIFIX_PUBLIC_URL: .*starting with https://"):
        load_settings(public_url="ai-fix.example.com")
    assert load_settings(public_url="https://ai-fix.example.com/").public_url == "https://ai-fix.example.com"


def test_a_huge_secret_file_is_read_in_part_and_its_values_still_held(tmp_path: Path) -> None:
    huge_file(tmp_path / ".env", "API_KEY=first-line-secret-value\n")
    held, peak = peak_bytes(lambda: held_secrets(load_settings(), {}, tmp_path))
    assert "first-line-secret-value" in held
    assert all(len(v) < 1 << 20 for v in held) and peak < 16 << 20, f"{peak} bytes held"


def test_the_secret_parts_of_the_sandbox_environment_are_held() -> None:
    env = {
        "PIP_INDEX_URL": "https://reader:pw-1234@pypi.corp/simple?token=query-token-99&page=2",
        "HTTPS_PROXY": "http://proxy.corp:3128",
        "NO_PROXY": "localhost,127.0.0.1",
        "NPM_TOKEN": "npm-token-0123456789",
    }
    held = held_secrets(load_settings(sandbox_env=env), {})
    assert {"reader:pw-1234", "pw-1234", "query-token-99", "npm-token-0123456789"} <= set(held)
    # An address or a list of hosts is configuration: holding it would mask every `localhost` in every text.
    assert not {"http://proxy.corp:3128", "localhost,127.0.0.1", "2"} & set(held)
