"""The JSON shapes the trigger rules read from a payload, and Unusable when a field has another one.

GitHub's payloads are signed, not typed: a field the rules read may hold anything a sender put there. A
value of the wrong JSON type (a list where GitHub sends text, a number where it sends a list) is never
let through to code that assumes the type: the delivery is recorded `ignored`, naming the field.
"""

from __future__ import annotations

from typing import Any


class Unusable(Exception):
    """A field a decision reads holds a value of the wrong JSON type (a list where GitHub sends text)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def as_dict(value: Any) -> dict[str, Any]:
    """An object as it is; anything else as an empty one (an absent object reads as one without fields)."""
    return value if isinstance(value, dict) else {}


def text(obj: dict[str, Any], key: str, field: str) -> str:
    """`obj[key]` as text ("" when absent or null); Unusable naming `field` when it is anything else."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Unusable(field, f"must be text, not {type(value).__name__}")
    return value


def items(obj: dict[str, Any], key: str, field: str) -> list[Any]:
    """`obj[key]` as a list ([] when absent or null); Unusable naming `field` when it is anything else."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Unusable(field, f"must be a list, not {type(value).__name__}")
    return value
