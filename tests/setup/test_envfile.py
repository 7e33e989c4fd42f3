"""The settings file: mode 600 from its first byte, read back exactly by the settings, never written over another."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from dotenv import dotenv_values
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import ConfigError
from bot.settings import load_settings
from bot.setup.envfile import dotenv_line, write_settings

PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"


def test_the_file_is_private_and_the_settings_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("AIFIX_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    target = tmp_path / ".env"
    write_settings(
        target, {"AIFIX_APP_ID": "42", "AIFIX_PRIVATE_KEY": PEM, "AIFIX_WEBHOOK_SECRET": 'a"b\\c'}, header="hi\nthere"
    )
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text().startswith("# hi\n# there\n")
    loaded = load_settings()
    assert loaded.app_id == 42 and loaded.private_key is not None and loaded.private_key.get_secret_value() == PEM
    assert loaded.webhook_secret is not None and loaded.webhook_secret.get_secret_value() == 'a"b\\c'
    monkeypatch.setenv("AIFIX_APP_ID", "7")  # the environment wins over the file
    assert load_settings().app_id == 7
    assert [p.name for p in tmp_path.iterdir()] == [".env"], "no temporary file is left behind"


def test_an_existing_file_is_refused_and_force_keeps_it_as_previous(tmp_path: Path) -> None:
    target = tmp_path / ".env"
    target.write_text("MINE=1\n")
    with pytest.raises(ConfigError, match="exists and is not overwritten.*--force"):
        write_settings(target, {"AIFIX_APP_ID": "1"}, header="")
    assert target.read_text() == "MINE=1\n"
    write_settings(target, {"AIFIX_APP_ID": "1"}, header="", force=True)
    assert dotenv_values(target) == {"AIFIX_APP_ID": "1"}
    assert (tmp_path / ".env.previous").read_text() == "MINE=1\n"


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\n\\\"'$#={} "), max_size=60
    ).filter(lambda v: "${" not in v)
)
def test_any_value_reads_back_as_written(value: str) -> None:
    # As pydantic-settings reads the file: python-dotenv with its `${NAME}` expansion on.
    assert dotenv_values(stream=io.StringIO(dotenv_line("AIFIX_X", value)))["AIFIX_X"] == value


def test_a_value_that_would_be_expanded_is_refused() -> None:
    with pytest.raises(ConfigError, match="cannot go in the settings file"):
        dotenv_line("AIFIX_X", "a${HOME}")
