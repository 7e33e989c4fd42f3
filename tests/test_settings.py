"""The settings file beside the environment, where it is looked for, and what the settings accept as a secret that
checks requests (the webhook secret, the admin token, the link key)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.commands.checkup import start_problems
from bot.errors import ConfigError
from bot.settings import Settings, app_configured, load_settings, settings_file, weak_secret


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [k for k in os.environ if k.startswith(("AIFIX_", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    "value",
    ["change-me", "CHANGE_ME", "changeme-please-changeme", "<your webhook secret>", "${WEBHOOK_SECRET}",
     "your-webhook-secret-here", "secret", "Pass Word", "x", "0123456789abcde", "aaaaaaaaaaaaaaaaaaaaaaaa"],
)  # fmt: skip
def test_placeholders_and_short_values_are_refused_with_the_way_to_make_one(value: str) -> None:
    assert weak_secret(value).endswith("make one with `openssl rand -hex 32`")


@pytest.mark.parametrize(
    "value", ["0123456789abcdef", "It's a Secret to Everybody", "9f86d081884c7d659a2feaa0c55ad015"]
)
def test_chosen_values_are_accepted(value: str) -> None:
    assert weak_secret(value) == ""


def test_the_example_deployment_values_no_longer_start_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFIX_VIEWER_SECRET", "change-me")
    with pytest.raises(ConfigError, match="AIFIX_VIEWER_SECRET: .*placeholder.*openssl rand -hex 32"):
        load_settings()


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, ".env"),
        ({"database_url": "sqlite:////data/ai-fix.db?synchronous=normal"}, "/data/.env"),
        ({"database_url": "sqlite:///state/ai-fix.db"}, "state/.env"),
        ({"database_url": "postgresql://ai-fix@db:5432/aifix"}, ".env"),
        ({"env_file": "/etc/ai-fix/settings"}, "/etc/ai-fix/settings"),
    ],
)
def test_the_settings_file_is_beside_the_sqlite_database_unless_named(values: dict[str, str], expected: str) -> None:
    assert settings_file(Settings(**values)) == Path(expected)  # type: ignore[arg-type]


def test_the_file_beside_the_database_is_read_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ".env").write_text(
        "AIFIX_APP_ID=41\nAIFIX_TRIGGER_LABEL=fix-me\nANTHROPIC_API_KEY=sk-ant-file\n"
    )
    monkeypatch.setenv("AIFIX_DATABASE_URL", f"sqlite:///{tmp_path / 'data' / 'ai-fix.db'}")
    monkeypatch.setenv("AIFIX_TRIGGER_LABEL", "from-env")
    loaded = load_settings()
    assert (loaded.app_id, loaded.trigger_label) == (41, "from-env")
    assert loaded.anthropic_api_key is not None and loaded.anthropic_api_key.get_secret_value() == "sk-ant-file"
    assert app_configured(loaded) and not app_configured(load_settings(env_file=tmp_path / "none"))


def test_a_settings_file_that_is_wrong_says_which_and_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("AIFIX_APP_ID=twelve\n")
    with pytest.raises(ConfigError, match="AIFIX_APP_ID: Input should be a valid integer"):
        load_settings()
    (tmp_path / ".env").write_bytes(b"AIFIX_TRIGGER_LABEL=\xff\xfe\n")
    with pytest.raises(ConfigError, match=r"settings file .*\.env is not UTF-8"):
        load_settings()
    (tmp_path / ".env").unlink()
    (tmp_path / ".env").mkdir()
    monkeypatch.setenv("AIFIX_ENV_FILE", str(tmp_path / ".env"))
    assert load_settings().app_id is None  # a directory is not a settings file: nothing to read


def test_serve_checks_the_cheap_things_at_start(tmp_path: Path) -> None:
    settings = Settings(webhook_secret="change-me", database_url=f"sqlite:///{tmp_path / 'a.db'}", work_dir=tmp_path)  # type: ignore[arg-type]
    problems = {p.name: p for p in start_problems(settings)}
    assert set(problems) == {"webhook secret", "database"}  # the disk has room; the database was never made
    assert "openssl rand -hex 32" in problems["webhook secret"].fix
