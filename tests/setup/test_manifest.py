"""app.yml read for the setup page: each permission and event with the reason its comment gives, and the manifest sent."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.errors import ConfigError
from bot.setup.manifest import parse_manifest, shipped_manifest

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_manifest_is_the_repositorys_app_yml_and_explains_every_grant() -> None:
    text = (ROOT / "app.yml").read_text()
    manifest = shipped_manifest()
    assert manifest.fields == yaml.safe_load(text)
    assert [g.name for g in manifest.permissions] == list(manifest.fields["default_permissions"])
    assert [g.name for g in manifest.events] == manifest.fields["default_events"]
    assert all(g.reason for g in (*manifest.permissions, *manifest.events))
    by_name = {g.name: g for g in manifest.permissions}
    assert by_name["contents"].access == "write" and by_name["contents"].reason.startswith("Push the fix branch")
    assert by_name["actions"].reason.endswith("Not `workflows`.")  # a comment of several lines, joined
    assert {g.name: g.reason for g in manifest.events}["push"].startswith("the base branch moved on")


def test_the_manifest_sent_carries_this_services_addresses_and_keeps_the_rest() -> None:
    manifest = shipped_manifest()
    sent = manifest.for_github(
        name="ai-fix-acme", webhook_url="https://x.test/webhook", redirect_url="https://x.test/cb"
    )
    assert sent["name"] == "ai-fix-acme"
    assert sent["hook_attributes"] == {"url": "https://x.test/webhook", "active": True}
    assert sent["redirect_url"] == "https://x.test/cb"
    assert sent["default_permissions"] == manifest.fields["default_permissions"]
    assert sent["default_events"] == manifest.fields["default_events"] and sent["public"] is False


SAMPLE = """name: x
url: https://x.test
default_events:
  - issues        # the label
  # the comments
  - issue_comment
default_permissions:
  # read the code
  # and push
  contents: write
  metadata: read  # every App
"""


def test_a_reason_is_the_comment_after_an_entry_else_the_lines_above_it() -> None:
    manifest = parse_manifest(SAMPLE)
    assert [(g.name, g.access, g.reason) for g in manifest.permissions] == [
        ("contents", "write", "read the code and push"),
        ("metadata", "read", "every App"),
    ]
    assert [(g.name, g.reason) for g in manifest.events] == [("issues", "the label"), ("issue_comment", "the comments")]


def test_a_grant_without_a_reason_or_a_file_that_is_no_manifest_is_refused() -> None:
    with pytest.raises(ConfigError, match="no reason for statuses"):
        parse_manifest(SAMPLE + "  statuses: read\n")
    with pytest.raises(ConfigError, match="no default_permissions"):
        parse_manifest("name: x\n")
    with pytest.raises(ConfigError, match="not YAML"):
        parse_manifest("name: [x\n")
