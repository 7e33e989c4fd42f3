"""What the settings accept as a secret that checks requests (the webhook secret, the admin token, the link key)."""

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings, weak_secret


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
