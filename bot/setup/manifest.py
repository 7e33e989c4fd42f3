"""`app.yml`, the App's manifest, read for the setup page: what it asks for and why, and the manifest GitHub is sent.

The reasons are app.yml's own comments (a permission's comment lines above it, an event's comment after
it), so the page explains exactly what the file does and the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from bot.errors import ConfigError

NAME_LIMIT = 34
"""GitHub's longest App name."""


@dataclass(frozen=True)
class Grant:
    """One permission or event of the manifest, with the reason app.yml gives for it."""

    name: str
    access: str
    """`read` or `write` for a permission; "" for an event."""
    reason: str


@dataclass(frozen=True)
class AppManifest:
    """app.yml: the manifest's fields and, for the page, each permission and event with its reason."""

    fields: dict[str, Any]
    permissions: tuple[Grant, ...]
    events: tuple[Grant, ...]

    @property
    def name(self) -> str:
        return str(self.fields.get("name") or "ai-fix")

    def for_github(self, *, name: str, webhook_url: str, redirect_url: str) -> dict[str, Any]:
        """The manifest posted to GitHub: app.yml with this service's webhook and the page's callback."""
        return {
            **self.fields,
            "name": name,
            "hook_attributes": {**self.fields.get("hook_attributes", {}), "url": webhook_url, "active": True},
            "redirect_url": redirect_url,
        }


def _reasons(text: str, section: str) -> dict[str, str]:
    """Each key of the top-level mapping or list `section` → the comment after it, else the comment lines above it."""
    reasons: dict[str, str] = {}
    inside = False
    above: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if line[:1] not in ("", " ", "#"):  # a top-level key opens (or closes) a section
            inside, above = line.startswith(f"{section}:"), []
            continue
        if not inside or not stripped:
            continue
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        entry, _, after = stripped.partition(" #")
        name = entry.removeprefix("- ").partition(":")[0].strip()
        reasons[name] = after.strip() or " ".join(above)
        above = []
    return reasons


def parse_manifest(text: str) -> AppManifest:
    """The manifest in app.yml's text; ConfigError when it is not a manifest or a grant has no reason."""
    try:
        fields = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"app.yml is not YAML ({exc}); restore it from ai-fix's repository") from exc
    if not isinstance(fields, dict) or not isinstance(fields.get("default_permissions"), dict):
        raise ConfigError("app.yml has no default_permissions; restore it from ai-fix's repository")
    why_permission = _reasons(text, "default_permissions")
    why_event = _reasons(text, "default_events")
    permissions = tuple(
        Grant(name, str(access), why_permission.get(name, "")) for name, access in fields["default_permissions"].items()
    )
    events = tuple(Grant(str(name), "", why_event.get(str(name), "")) for name in fields.get("default_events") or [])
    unexplained = [g.name for g in (*permissions, *events) if not g.reason]
    if unexplained:
        raise ConfigError(f"app.yml gives no reason for {', '.join(unexplained)}: add a comment saying why")
    return AppManifest(fields, permissions, events)


def shipped_manifest() -> AppManifest:
    """The app.yml this ai-fix ships (the repository's `app.yml` is a link to it)."""
    return parse_manifest(resources.files("bot.setup").joinpath("app.yml").read_text())
