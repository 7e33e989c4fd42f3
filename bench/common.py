"""What the bench scripts share: the `--smoke` option, the machine's load, a median timer, the secrets a job holds."""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def add_smoke(parser: argparse.ArgumentParser, tiny: str) -> None:
    """`--smoke`: the bench on a tiny input, only to show that it still runs (scripts/bench-smoke.sh runs every
    bench so in CI); its figures mean nothing."""
    parser.add_argument(
        "--smoke", action="store_true", help=f"a tiny run that only shows the bench still works, as CI runs it: {tiny}"
    )


def machine_load() -> str:
    """The load averages over 1, 5 and 15 minutes and the CPUs, and Linux's I/O pressure where it has one: the
    machine is shared, so every figure is printed with what else was running."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs{io_pressure()}"


def io_pressure() -> str:
    """Linux's share of the last 10 s in which some task waited for the disk: other work's I/O delays every fsync."""
    pressure = Path("/proc/pressure/io")
    if not pressure.exists():
        return ""
    fields = dict(part.split("=") for part in pressure.read_text().splitlines()[0].split()[1:])
    return f", I/O pressure {float(fields['avg10']):.0f} %"


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
