"""Our own retries around an SDK call, shared by every backend: the SDKs' retries are switched off so that
every attempt, wait and failure is ours to count and record.

Retried: 408, 409, 429 and every 5xx (529 "overloaded" included), timeouts and connection errors;
`retry-after-ms` / `retry-after` honoured up to a minute, else exponential backoff with jitter.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from bot.errors import ModelError

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_STATUS = frozenset({408, 409, 429})
"""Besides every 5xx."""
MAX_RETRY_AFTER_S = 60.0
"""A longer `retry-after` is cut to this; the caller's wall-time budget still applies."""


def retry_after_s(headers: Any) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, then `retry-after` as seconds or an HTTP date."""
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())


def backoff_s(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with jitter (75-100 % of the nominal delay)."""
    return min(base * 2.0**attempt, cap) * (1 - 0.25 * random.random())


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    sleep: Callable[[float], None] = time.sleep


class _Response(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


class _StatusError(Protocol):
    """What both SDKs' `APIStatusError` carry (they are generated from one template)."""

    status_code: int
    message: str
    response: _Response


@dataclass(frozen=True)
class Api:
    """One provider API as the retry loop sees it."""

    name: str
    """How errors name it, e.g. "the Messages API"."""
    transient: tuple[type[Exception], ...]
    """The SDK's timeout and connection errors."""
    status: type[Exception]
    """The SDK's error for an HTTP error status."""
    fixes: Mapping[int, str]
    """What to do about a status that is not retried."""


def call_timeout(left: float | None, client: Any) -> dict[str, float]:
    """The `timeout=` argument of one attempt: the client's own timeout, cut to the `left` seconds of the call."""
    if left is None:
        return {}
    own = getattr(client, "timeout", None)
    return {"timeout": min(left, own) if isinstance(own, int | float) else left}


def with_retries(
    send: Callable[[float | None], T], api: Api, policy: RetryPolicy, *, limit_s: float | None = None
) -> tuple[T, int]:
    """`send(left)`'s result and how many failed attempts preceded it; ModelError when it fails for good.

    With `limit_s`, attempts and waits end within that many seconds: each attempt gets `left`, the seconds
    still left (see `call_timeout`), and no wait runs past the limit.
    """
    why = ""
    until = None if limit_s is None else time.monotonic() + limit_s
    for attempt in range(policy.max_attempts):
        left = None if until is None else until - time.monotonic()
        if left is not None and left <= 0:
            break
        try:
            return send(left), attempt
        except api.transient as exc:
            wait, why = backoff_s(attempt, policy.backoff_base_s, policy.backoff_cap_s), type(exc).__name__
        except api.status as raised:
            error = cast(_StatusError, raised)
            if error.status_code not in RETRY_STATUS and error.status_code < 500:
                fix = api.fixes.get(error.status_code, "the request was refused; see the message")
                raise ModelError(f"{api.name} answered {error.status_code}: {error.message}; {fix}") from raised
            asked = retry_after_s(error.response.headers)
            wait = (
                min(asked, MAX_RETRY_AFTER_S)
                if asked is not None
                else backoff_s(attempt, policy.backoff_base_s, policy.backoff_cap_s)
            )
            why = f"HTTP {error.status_code}"
        if until is not None and time.monotonic() + wait >= until:
            raise ModelError(f"{api.name} failed ({why}) and the run's wall-time budget leaves no time to retry")
        if attempt + 1 < policy.max_attempts:
            log.warning("model call failed (%s); retry %d/%d in %.1fs", why, attempt + 1, policy.max_attempts - 1, wait)
            policy.sleep(wait)
    if until is not None and time.monotonic() >= until:
        raise ModelError(f"{api.name} did not answer ({why or 'no attempt'}) within the run's wall-time budget")
    raise ModelError(
        f"{api.name} kept failing ({why}) after {policy.max_attempts} attempts; try again later or raise the budget's wall time"
    )
