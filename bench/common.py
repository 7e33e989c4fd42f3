"""What the bench scripts share: a median timer and the secrets a job typically holds."""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable


def median_ms(
    fn: Callable[[], object], runs: int, *, before: Callable[[], object] = lambda: None, warm_up: bool = False
) -> float:
    """The median wall time of `fn` in ms over `runs` calls, with `before` run (untimed) ahead of each call;
    `warm_up`: one untimed call first (page cache, first-use costs)."""
    if warm_up:
        fn()
    times = []
    for _ in range(runs):
        before()
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def held_secrets() -> list[str]:
    """A fresh PEM private key and three 40-character tokens: what redaction holds for a job."""
    pem = (
        "-----BEGIN PRIVATE KEY-----\n"
        + "\n".join(secrets.token_urlsafe(48) for _ in range(26))
        + "\n-----END PRIVATE KEY-----\n"
    )
    return [pem, *(secrets.token_hex(20) for _ in range(3))]
