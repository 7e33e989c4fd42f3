"""app.yml subscribes to exactly the events the intake acts on, with the permissions they need."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.intake.metrics import LABELLED_EVENTS

MANIFEST = yaml.safe_load((Path(__file__).resolve().parents[2] / "app.yml").read_text())
ALWAYS_SENT = {"ping", "installation", "installation_repositories"}
"""GitHub sends these to every App without a subscription."""


def test_every_subscribed_event_is_one_the_intake_handles_and_each_handled_one_is_subscribed() -> None:
    events = set(MANIFEST["default_events"])
    assert events == LABELLED_EVENTS - ALWAYS_SENT - {"unverified"}


def test_the_ci_events_have_their_permissions_and_never_workflows() -> None:
    permissions = MANIFEST["default_permissions"]
    assert permissions["actions"] == "write", "re-running failed jobs needs write; logs and runs need read"
    assert permissions["statuses"] == "read" and permissions["checks"] == "write"
    assert "workflows" not in permissions and "administration" not in permissions
