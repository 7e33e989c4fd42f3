"""Slow and huge unauthenticated requests against a real `ai-fix serve`, and signed deliveries meanwhile.

    .venv/bin/python bench/slow_clients.py                     # this tree's serve, with its default limits
    git archive main | tar -x -C /tmp/main-src && .venv/bin/python bench/slow_clients.py --before /tmp/main-src
    .venv/bin/python bench/slow_clients.py --smoke             # 20 deliveries, 2 stalled bodies, 5 slow headers

One `ai-fix serve` (SQLite in a temporary folder, intake only: AIFIX_WORKERS=0), three phases one after the
other, each with the same signed deliveries (GitHub's `issues.labeled` example, `-n` of them over `-c`
keep-alive connections, as bench/webhook_ack.py sends them):

1. **quiet**: the deliveries alone.
2. **stalled bodies**: `--bodies` connections each declare a body of 24 MiB + 1 KiB, send 24 MiB of it and
   then nothing. The server's resident memory is sampled every 20 ms (peak minus the quiet figure);
   each attacker is either answered at once (503: the body budget) or closed by the server later.
3. **slow headers**: `--slow` connections each send a request line and then one header byte every 10 s.

The deliveries of an attack phase start once every attacker has sent what it sends at first (its 24 MiB,
or its request line): they are timed against the attack in its steady state. For each attack: when the
server closed the attackers' connections (seconds after they connected; `open` for those still open after
--linger s), and the deliveries' p50 / p99 acknowledgement (ms) and statuses against the quiet phase's.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvloop
from common import add_smoke
from intake_servers import free_port, github_stub, start_server
from webhook_ack import build_deliveries, drive, open_connections, percentile

BIG = 24 << 20
DECLARED = BIG + 1024
Attack = Callable[[int, float, list[tuple[float | None, bytes]], threading.Barrier], None]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """The server's peak resident memory while it runs."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.02)


def closed_at(sock: socket.socket, began: float, linger: float) -> tuple[float | None, bytes]:
    """(seconds from `began` until the server closed `sock`, or None after `linger` s; what it answered)."""
    answer = b""
    sock.settimeout(0.5)
    while time.monotonic() - began < linger:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - began, answer
        if not chunk:
            return time.monotonic() - began, answer
        answer += chunk
    return None, answer


def stalled_body(port: int, linger: float, out: list[tuple[float | None, bytes]], ready: threading.Barrier) -> None:
    began = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        head = (
            "POST /webhook HTTP/1.1\r\nHost: bench\r\nX-GitHub-Event: issues\r\nX-GitHub-Delivery: stalled\r\n"
            f"Content-Type: application/json\r\nContent-Length: {DECLARED}\r\n\r\n"
        )
        try:
            sock.sendall(head.encode() + b" " * BIG)
        except OSError:
            pass  # refused and closed while sending
        ready.wait()
        out.append(closed_at(sock, began, linger))
    finally:
        sock.close()


def slow_headers(port: int, linger: float, out: list[tuple[float | None, bytes]], ready: threading.Barrier) -> None:
    began = time.monotonic()
    try:
        sock = socket.create_connection(("127.0.0.1", port))
    except OSError:
        ready.wait()
        out.append((0.0, b"not accepted"))
        return
    try:
        sock.sendall(b"POST /webhook HTTP/1.1\r\nHost: bench\r\n")
        ready.wait()
        while True:
            closed, answer = closed_at(sock, began, min(linger, time.monotonic() - began + 10))
            if closed is not None or time.monotonic() - began >= linger:
                out.append((closed, answer))
                return
            try:
                sock.sendall(b"X")
            except OSError:
                out.append((time.monotonic() - began, answer))
                return
    finally:
        sock.close()


_issues = iter(range(10_000, 10_000_000, 10_000))
"""Each batch's first issue number: every delivery is a new one, never a redelivery of an earlier batch's."""


def deliveries(port: int, n: int, c: int) -> tuple[list[float], Counter[int]]:
    batch, _, _ = build_deliveries(n, 0.0, next(_issues))

    async def send() -> tuple[list[float], Counter[int]]:
        connections = await open_connections([port], c)
        try:
            load = await drive(connections, batch)
        finally:
            for _, writer in connections:
                writer.close()
        return [x * 1000 for x in load.latencies], Counter(load.statuses)

    return uvloop.run(send())


@dataclass
class Phase:
    closes: list[tuple[float | None, bytes]]
    """Per attacker: seconds until the server closed its connection (None: still open), what it answered."""
    latencies: list[float]
    statuses: Counter[int]
    peak: float
    """The server's peak RSS, MB."""


def phase(port: int, pid: int, args: argparse.Namespace, attack: Attack, count: int) -> Phase:
    """`count` attackers run `attack`; once each has sent what it sends at first, the deliveries; what it cost
    and when the attackers were closed."""
    out: list[tuple[float | None, bytes]] = []
    sampler = Sampler(pid)
    sampler.start()
    ready = threading.Barrier(count + 1)
    attackers = [
        threading.Thread(target=attack, args=(port, args.linger, out, ready), daemon=True) for _ in range(count)
    ]
    for thread in attackers:
        thread.start()
    ready.wait()
    latencies, statuses = deliveries(port, args.n, args.c)
    for thread in attackers:
        thread.join(args.linger + 15)
    sampler.done.set()
    sampler.join()
    return Phase(out, latencies, statuses, sampler.peak)


def describe(name: str, quiet: list[float], found: Phase, base_rss: float) -> None:
    answered = Counter(a.split(b"\r\n", 1)[0].decode(errors="replace") or "(nothing)" for _, a in found.closes)
    closed = sorted(c for c, _ in found.closes if c is not None)
    still = sum(1 for c, _ in found.closes if c is None)
    spread = f"{closed[0]:.1f}–{closed[-1]:.1f} s (median {statistics.median(closed):.1f})" if closed else "none"
    print(f"{name}: {len(found.closes)} attackers; answered {dict(answered)}; closed after {spread}; {still} open")
    print(
        f"  server RSS {base_rss:.0f} MB quiet, peak {found.peak:.0f} MB ({found.peak - base_rss:+.0f} MB); "
        f"deliveries {dict(found.statuses)} p50 {percentile(found.latencies, 50):.1f} ms "
        f"p99 {percentile(found.latencies, 99):.1f} ms (quiet: p50 {percentile(quiet, 50):.1f}, "
        f"p99 {percentile(quiet, 99):.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=400, help="deliveries per phase")
    parser.add_argument("-c", type=int, default=10, help="their connections")
    parser.add_argument("--bodies", type=int, default=20)
    parser.add_argument("--slow", type=int, default=500)
    parser.add_argument("--linger", type=float, default=70.0, help="seconds an attacker waits to be closed")
    parser.add_argument("--before", type=Path, help="a source tree whose `bot` package serves instead of this one's")
    add_smoke(parser, "20 deliveries a phase, 2 stalled bodies, 5 slow headers, 5 s of lingering")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.bodies, args.slow, args.linger = 20, 2, 5, 5.0
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; serving {args.before or 'this tree'}")
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        server = start_server(f"sqlite:///{tmp}/ai-fix.db", port, github_stub(), source=args.before)
        try:
            deliveries(port, 100, args.c)  # warm-up
            quiet, statuses = deliveries(port, args.n, args.c)
            base = rss_mb(server.pid)
            print(
                f"quiet: deliveries {dict(statuses)} p50 {percentile(quiet, 50):.1f} ms p99 {percentile(quiet, 99):.1f} ms"
            )
            describe("stalled 24 MiB bodies", quiet, phase(port, server.pid, args, stalled_body, args.bodies), base)
            base = rss_mb(server.pid)
            describe("slow headers", quiet, phase(port, server.pid, args, slow_headers, args.slow), base)
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
