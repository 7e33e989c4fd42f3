"""Parsing a delivery's headers and body into an Event, leniently (real payloads miss 'required' fields)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

_ACTION = re.compile(r"[a-z_]{1,64}")
"""What GitHub's actions look like (`labeled`, `new_permissions_accepted`); anything else is stored as no action."""


class MalformedDelivery(Exception):
    """The signed body or its headers cannot be understood; the caller answers 400."""


@dataclass(frozen=True)
class Event:
    name: str
    """X-GitHub-Event, e.g. `issues`."""
    delivery_id: str
    """X-GitHub-Delivery; the same for a redelivery, so it is the dedupe key."""
    payload: dict[str, Any]

    @property
    def action(self) -> str:
        action = self.payload.get("action")
        return action if isinstance(action, str) and _ACTION.fullmatch(action) else ""


def _header(headers: Mapping[str, str], name: str) -> str:
    # Starlette's Headers is case-insensitive; a plain dict from a test may not be.
    value = headers.get(name) or headers.get(name.lower()) or ""
    return value.strip()


def parse_event(headers: Mapping[str, str], body: bytes) -> Event:
    """The event named by X-GitHub-Event with its JSON payload; MalformedDelivery when either is unusable."""
    name = _header(headers, "X-GitHub-Event")
    delivery_id = _header(headers, "X-GitHub-Delivery")
    if not name or len(name) > 100:
        raise MalformedDelivery("X-GitHub-Event header is missing or too long")
    if not delivery_id or len(delivery_id) > 200:
        raise MalformedDelivery("X-GitHub-Delivery header is missing or too long")
    try:
        # orjson: the payload is parsed on the request path, and it is 3-4x faster than json here.
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedDelivery(f"body is not JSON ({exc.__class__.__name__}); send application/json payloads") from exc
    if not isinstance(payload, dict):
        raise MalformedDelivery("body must be a JSON object")
    return Event(name=name, delivery_id=delivery_id, payload=payload)
