"""Webhook acknowledgement benchmark: N signed deliveries at concurrency C against a real `ai-fix serve`.

Protocol (the same as the Probot anchor in the README): GitHub's documented `issues.labeled` example
payload, keep-alive connections, each delivery timed from the first byte sent to the last byte of the
answer. Every delivery is a trigger for a different issue (so none merge) and a share of them are
redeliveries of an earlier X-GitHub-Delivery (which must not create a job). Afterwards the job store is
read: jobs must equal the distinct triggering deliveries, every delivery must be stored once. Under
load the server acknowledges once a delivery is committed and makes its job right after the burst, so
the bench first waits until no stored delivery is left unprocessed and reports how long that took.

    .venv/bin/python bench/webhook_ack.py --baseline   # N=2000, C=50; also the stores-nothing baseline
    .venv/bin/python bench/webhook_ack.py --baseline --concurrency 200 --rounds 10   # interleaved, medians
    .venv/bin/python bench/webhook_ack.py -n 5000 -c 100 --synchronous normal

The server runs with AIFIX_WORKERS=0 (intake only: jobs stay queued) so the figure is the
acknowledgement path alone: verify, parse, decide, commit durably, answer. The one GitHub call it
makes, GET /app at start, is answered by a stub in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import random
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import uvloop
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.intake.signature import sign

ROOT = Path(__file__).resolve().parent.parent

PAYLOAD = ROOT / "tests" / "fixtures" / "webhooks" / "issues" / "labeled.json"
SECRET = "bench-secret"
ADMIN = "bench-admin-token"


def build_requests(n: int, redeliver: float, host: str) -> tuple[list[bytes], int, int]:
    """The raw HTTP/1.1 requests, the distinct delivery count, and the body size."""
    base = json.loads(PAYLOAD.read_text())
    base["label"]["name"] = "ai-fix"
    base["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    rng = random.Random(7)
    sent: list[tuple[str, bytes]] = []
    requests: list[bytes] = []
    for _ in range(n):
        if sent and rng.random() < redeliver:
            delivery, body = rng.choice(sent)
        else:
            payload = copy.deepcopy(base)
            payload["issue"]["number"] = 10_000 + len(sent)
            body = json.dumps(payload, indent=2).encode()
            delivery = str(uuid.uuid4())
            sent.append((delivery, body))
        head = (
            f"POST /webhook HTTP/1.1\r\nHost: {host}\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            f"Content-Type: application/json\r\nX-GitHub-Event: issues\r\nX-GitHub-Delivery: {delivery}\r\n"
            f"X-Hub-Signature-256: {sign(body, SECRET)}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        requests.append(head.encode() + body)
    return requests, len(sent), len(sent[0][1])


async def _connection(host: str, port: int, queue: list[bytes], latencies: list[float], statuses: list[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while queue:
            request = queue.pop()
            started = time.perf_counter()
            writer.write(request)
            status = int((await reader.readline()).split()[1])
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            statuses.append(status)
    finally:
        writer.close()


async def run_load(
    host: str, port: int, requests: list[bytes], concurrency: int
) -> tuple[list[float], list[int], float]:
    queue = list(reversed(requests))
    latencies: list[float] = []
    statuses: list[int] = []
    started = time.perf_counter()
    await asyncio.gather(*(_connection(host, port, queue, latencies, statuses) for _ in range(concurrency)))
    return latencies, statuses, time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BASELINE = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""
"""The same server stack answering 202 and storing nothing: what this machine allows right now."""


def wait_for_port(proc: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the server did not start within 60 s")


class _GitHubApp(BaseHTTPRequestHandler):
    """GET /app, the call `ai-fix serve` makes at start (to learn its bot user); nothing else is answered."""

    def do_GET(self) -> None:
        body = json.dumps({"id": 1, "slug": "ai-fix"}).encode() if self.path == "/app" else b"{}"
        self.send_response(200 if self.path == "/app" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def github_stub() -> str:
    """The base URL of a GitHub stub answering GET /app, served by a daemon thread of this process."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GitHubApp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def start_server(db: Path, port: int, synchronous: str, github_url: str) -> subprocess.Popen[bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    env = {
        **os.environ,
        "AIFIX_APP_ID": "1",
        "AIFIX_PRIVATE_KEY": pem,
        "AIFIX_WEBHOOK_SECRET": SECRET,
        "AIFIX_DATABASE_URL": f"sqlite:///{db}?synchronous={synchronous}",
        "AIFIX_WORKERS": "0",
        "AIFIX_ADMIN_TOKEN": ADMIN,
        "AIFIX_GITHUB_API_URL": github_url,
        "AIFIX_ANTHROPIC_API_KEY": "not-used-by-the-intake",  # `serve` checks the model's key at start
    }
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "ai-fix"), "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    return wait_for_port(proc, port)


def measure(
    server: subprocess.Popen[bytes], port: int, args: argparse.Namespace
) -> tuple[list[float], list[int], float, tuple[float, float], int, int]:
    """Warm up, then time the N deliveries: (latencies, statuses, wall s, (server, client) CPU s, distinct, body size).

    The client runs on uvloop: on asyncio's own loop it spent about twice the CPU (45-60 us a delivery)
    on the same two-core machine the server needs.
    """
    warm, _, _ = build_requests(args.warmup, 0.0, f"127.0.0.1:{port}")
    warm = [r.replace(b"X-GitHub-Event: issues", b"X-GitHub-Event: issues_warmup") for r in warm]
    uvloop.run(run_load("127.0.0.1", port, warm, args.c))
    requests, distinct, size = build_requests(args.n, args.redeliver, f"127.0.0.1:{port}")
    server_before, client_before = server_cpu(server.pid), time.process_time()
    latencies, statuses, wall = uvloop.run(run_load("127.0.0.1", port, requests, args.c))
    cpu = (server_cpu(server.pid) - server_before, time.process_time() - client_before)
    return latencies, statuses, wall, cpu, distinct, size


def collections(port: int) -> list[int]:
    """The server's garbage collections so far, by generation (2: full), from its /metrics."""
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    found = dict(re.findall(r'^aifix_gc_collections_total\{generation="(\d)"\} (\d+)$', text, re.MULTILINE))
    return [int(found.get(str(generation), 0)) for generation in range(3)]


def processing_tail(db: Path, pid: int, timeout: float = 60.0) -> tuple[float, float]:
    """Seconds from the last answer until the server has processed every stored delivery (made its job), and its CPU s meanwhile."""
    started, cpu = time.perf_counter(), server_cpu(pid)
    with sqlite3.connect(db) as conn:
        while conn.execute("SELECT COUNT(*) FROM deliveries WHERE processed = 0").fetchone()[0]:
            if time.perf_counter() - started > timeout:
                break
            time.sleep(0.005)
    return time.perf_counter() - started, server_cpu(pid) - cpu


@dataclass(frozen=True)
class Figures:
    """One run's acknowledgement figures."""

    p50: float
    p99: float
    max: float
    rate: float
    """Deliveries per second."""
    cpu: float
    """Server CPU per delivery, µs."""


def figures(n: int, latencies: list[float], wall: float, cpu: tuple[float, float]) -> Figures:
    ms = [x * 1000 for x in latencies]
    return Figures(percentile(ms, 50), percentile(ms, 99), max(ms), n / wall, cpu[0] / n * 1e6)


def report(name: str, n: int, latencies: list[float], wall: float, cpu: tuple[float, float]) -> Figures:
    f = figures(n, latencies, wall, cpu)
    print(
        f"{name}: ack latency ms p50 {f.p50:.1f}  p90 {percentile([x * 1000 for x in latencies], 90):.1f}  "
        f"p99 {f.p99:.1f}  max {f.max:.1f}; {f.rate:,.0f} deliveries/s; CPU per delivery: server {f.cpu:.0f} us, "
        f"client {cpu[1] / n * 1e6:.0f} us"
    )
    return f


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of the server process (Linux /proc; 0 elsewhere)."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return 0.0
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def io_pressure() -> str:
    """Linux's share of the last 10 s in which some task waited for the disk: other work's I/O delays every fsync."""
    pressure = Path("/proc/pressure/io")
    if not pressure.exists():
        return ""
    fields = dict(part.split("=") for part in pressure.read_text().splitlines()[0].split()[1:])
    return f", I/O pressure {float(fields['avg10']):.0f} %"


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000, method="inclusive")[int(q * 10) - 1] if len(values) > 1 else values[0]


def fsync_ms(directory: Path, count: int = 200) -> tuple[float, float]:
    """p50 and p99 of one `fdatasync` after appending 16 KB (a delivery's WAL frames) in `directory`, in ms."""
    times: list[float] = []
    fd = os.open(directory / "fsync-probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for _ in range(count):
            os.write(fd, b"x" * 16384)
            started = time.perf_counter()
            os.fdatasync(fd)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
        os.unlink(directory / "fsync-probe")
    return percentile(times, 50), percentile(times, 99)


def run_baseline(args: argparse.Namespace) -> Figures:
    port = free_port()
    baseline = wait_for_port(subprocess.Popen([sys.executable, "-c", BASELINE, str(port)]), port)
    try:
        latencies, _, wall, cpu, _, _ = measure(baseline, port, args)
    finally:
        baseline.terminate()
        baseline.wait(timeout=30)
    return report("baseline (uvicorn, stores nothing)", args.n, latencies, wall, cpu)


def run_ai_fix(args: argparse.Namespace, github_url: str) -> tuple[Figures, bool]:
    """One run against a fresh `ai-fix serve` and database; the figures, and whether the store is right."""
    with tempfile.TemporaryDirectory() as tmp:
        db, port = Path(tmp) / "bench.db", free_port()
        server = start_server(db, port, args.synchronous, github_url)
        try:
            gc_before = collections(port)
            latencies, statuses, wall, cpu, distinct, size = measure(server, port, args)
            gc_during = [after - before for after, before in zip(collections(port), gc_before)]
            tail, tail_cpu = processing_tail(db, server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
        with sqlite3.connect(db) as conn:
            jobs = conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
            stored = conn.execute("SELECT COUNT(*) FROM deliveries WHERE event = 'issues'").fetchone()[0]

    result = report(f"ai-fix serve (SQLite WAL, synchronous={args.synchronous})", args.n, latencies, wall, cpu)
    print(
        f"processing tail: every stored delivery processed (its job made) {tail * 1000:.0f} ms after the last answer; "
        f"server CPU per delivery including it {(cpu[0] + tail_cpu) / args.n * 1e6:.0f} us"
    )
    print(
        f"garbage collections in the server during the {args.warmup} + {args.n} deliveries: "
        f"young {gc_during[0]}, middle {gc_during[1]}, full {gc_during[2]}"
    )
    codes = {code: statuses.count(code) for code in sorted(set(statuses))}
    ok = jobs == distinct and stored == distinct and set(codes) <= {200, 202}
    print(
        f"deliveries: {args.n} of {size} bytes ({distinct} distinct, {args.n - distinct} redeliveries); answers {codes}; "
        f"stored {stored} deliveries and {jobs} jobs, expected {distinct} of each: {'OK' if ok else 'MISMATCH'}"
    )
    return result, ok


def medians(name: str, runs: list[Figures]) -> Figures:
    f = Figures(*(statistics.median(getattr(r, key) for r in runs) for key in ("p50", "p99", "max", "rate", "cpu")))
    print(
        f"  {name}: median of {len(runs)} runs: p50 {f.p50:.1f} ms, p99 {f.p99:.1f} ms (spread "
        f"{min(r.p99 for r in runs):.1f} - {max(r.p99 for r in runs):.1f}), max {f.max:.1f} ms, {f.rate:,.0f}/s, "
        f"server CPU {f.cpu:.0f} us per delivery"
    )
    return f


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="deliveries to send (default 2000)")
    parser.add_argument(
        "-c", "--concurrency", dest="c", type=int, default=50, help="concurrent keep-alive connections (default 50)"
    )
    parser.add_argument("--redeliver", type=float, default=0.05, help="share of deliveries that repeat an earlier id")
    parser.add_argument("--warmup", type=int, default=200, help="deliveries sent first and not measured")
    parser.add_argument(
        "--synchronous",
        choices=["full", "normal"],
        default="full",
        help="full: every commit fsynced before its 202 (default); normal: committed to the WAL",
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also run the load against the same server stack answering 202 and storing nothing",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="interleaved runs (baseline, then ai-fix, each round); prints medians"
    )
    args = parser.parse_args()

    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs{io_pressure()}; N={args.n}, "
        f"concurrency {args.c}, keep-alive, {args.rounds} round(s)"
    )
    github_url = github_stub()
    baseline: list[Figures] = []
    ai_fix: list[Figures] = []
    ok = True
    for _ in range(args.rounds):
        if args.baseline:
            baseline.append(run_baseline(args))
        result, good = run_ai_fix(args, github_url)
        ai_fix.append(result)
        ok = ok and good
    print(f"load average {os.getloadavg()[0]:.1f}{io_pressure()} at the end")
    if args.rounds > 1 or args.baseline:
        mine = medians("ai-fix serve", ai_fix)
        if baseline:
            theirs = medians("baseline", baseline)
            with tempfile.TemporaryDirectory() as tmp:
                sync_p50, sync_p99 = fsync_ms(Path(tmp))
            print(
                f"  p99 above the baseline: {mine.p99 - theirs.p99:.1f} ms; one fdatasync of 16 KB here: "
                f"p50 {sync_p50:.1f} ms, p99 {sync_p99:.1f} ms"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
