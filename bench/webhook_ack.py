"""Webhook acknowledgement benchmark: N signed deliveries at concurrency C against real `ai-fix serve` processes.

Protocol (the same as the Probot anchor in docs/benchmarks.md): GitHub's documented `issues.labeled` example
payload, keep-alive connections, each delivery timed from the first byte sent to the last byte of the
answer. Every delivery is a trigger for a different issue (so none merge) and a share of them are
redeliveries of an earlier X-GitHub-Delivery (which must not create a job). Afterwards the job store is
read: jobs must equal the distinct triggering deliveries, every delivery must be stored once. Under
load the server acknowledges once a delivery is committed and makes its job right after the burst, so
the bench first waits until no stored delivery is left unprocessed and reports how long that took.

    .venv/bin/python bench/webhook_ack.py --probot --rounds 3   # N=2000, C=50; Probot 14 and ai-fix interleaved
    .venv/bin/python bench/webhook_ack.py --probot -n 4000 --concurrency 200 --rounds 3
    .venv/bin/python bench/webhook_ack.py --database sqlite --database postgresql --rounds 3   # both, interleaved
    .venv/bin/python bench/webhook_ack.py --baseline -n 5000 -c 100 --synchronous normal
    .venv/bin/python bench/webhook_ack.py --database postgresql --intakes 2   # a PostgreSQL it starts, two intakes
    .venv/bin/python bench/webhook_ack.py --database postgresql://aifix@127.0.0.1:5432/postgres   # a fresh database per run there

Each round runs, one after the other on the machine as it is then: the baseline (`--baseline`), the
Probot app (`--probot`: `bench/probot/app.js`, Probot 14 with its locked dependencies, installed with
`npm ci` into .cache/probot-bench the first time), then `ai-fix serve` on each `--database`; every
other round in the opposite order.

With --intakes 2 the C connections are split between two intake processes on one database (as behind a
load balancer), so a redelivery often reaches the other intake than its first copy did.

The server runs with AIFIX_WORKERS=0 (intake only: jobs stay queued) so the figure is the
acknowledgement path alone: verify, parse, decide, commit durably, answer. The one GitHub call it
makes, GET /app at start, is answered by a stub in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import psycopg
import uvloop
from intake_servers import (
    BASELINE,
    SECRET,
    collections,
    free_port,
    github_stub,
    install_probot,
    io_pressure,
    servers_cpu,
    start_probot,
    start_server,
    wait_for_port,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from bot.intake.signature import sign  # noqa: E402
from bot.queue.store import Store  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402

PAYLOAD = ROOT / "tests" / "fixtures" / "webhooks" / "issues" / "labeled.json"


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
    host: str, ports: list[int], requests: list[bytes], concurrency: int
) -> tuple[list[float], list[int], float]:
    """The requests over `concurrency` connections spread evenly over `ports`, all drawing from one queue."""
    queue = list(reversed(requests))
    latencies: list[float] = []
    statuses: list[int] = []
    started = time.perf_counter()
    await asyncio.gather(
        *(_connection(host, ports[i % len(ports)], queue, latencies, statuses) for i in range(concurrency))
    )
    return latencies, statuses, time.perf_counter() - started


def measure(
    servers: list[subprocess.Popen[bytes]], ports: list[int], args: argparse.Namespace
) -> tuple[list[float], list[int], float, tuple[float, float], int, int]:
    """Warm up, then time the N deliveries: (latencies, statuses, wall s, (servers, client) CPU s, distinct, body size).

    The client runs on uvloop: on asyncio's own loop it spent about twice the CPU (45-60 us a delivery)
    on the same two-core machine the server needs.
    """
    warm, _, _ = build_requests(args.warmup, 0.0, "127.0.0.1")
    warm = [r.replace(b"X-GitHub-Event: issues", b"X-GitHub-Event: issues_warmup") for r in warm]
    uvloop.run(run_load("127.0.0.1", ports, warm, args.c))
    requests, distinct, size = build_requests(args.n, args.redeliver, "127.0.0.1")
    server_before, client_before = servers_cpu(servers), time.process_time()
    latencies, statuses, wall = uvloop.run(run_load("127.0.0.1", ports, requests, args.c))
    cpu = (servers_cpu(servers) - server_before, time.process_time() - client_before)
    return latencies, statuses, wall, cpu, distinct, size


def count(store: Store, query: str) -> int:
    """One COUNT(*) on the bench's database, SQLite or PostgreSQL, through the store's own connection."""
    with store.reading() as conn:
        return int(conn.execute(query).fetchone()[0])


def processing_tail(store: Store, servers: list[subprocess.Popen[bytes]], timeout: float = 60.0) -> tuple[float, float]:
    """Seconds from the last answer until the servers have processed every stored delivery (made its job), and their CPU s meanwhile."""
    started, cpu = time.perf_counter(), servers_cpu(servers)
    while count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0"):
        if time.perf_counter() - started > timeout:
            break
        time.sleep(0.005)
    return time.perf_counter() - started, servers_cpu(servers) - cpu


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


def run_alone(name: str, server: subprocess.Popen[bytes], port: int, args: argparse.Namespace) -> Figures:
    """One run against a server that stores nothing (the baseline, Probot), stopped afterwards."""
    try:
        latencies, _, wall, cpu, _, _ = measure([server], [port], args)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return report(name, args.n, latencies, wall, cpu)


def run_baseline(args: argparse.Namespace) -> Figures:
    port = free_port()
    baseline = wait_for_port(subprocess.Popen([sys.executable, "-c", BASELINE, str(port)]), port)
    return run_alone("baseline (uvicorn, stores nothing)", baseline, port, args)


def run_probot(args: argparse.Namespace, app: Path) -> Figures:
    port = free_port()
    return run_alone("Probot 14 (node, stores nothing)", start_probot(app, port), port, args)


def fresh_database(
    database: str, args: argparse.Namespace, tmp: Path, postgres: PostgresServer | None
) -> tuple[str, str]:
    """A new, empty database for one run: its URL and a name for the report."""
    if database == "postgresql":
        assert postgres is not None
        return postgres.new_database(), "PostgreSQL 15, fsync on, started here"
    if database.startswith(("postgresql://", "postgres://")):
        name = f"aifix_bench_{uuid.uuid4().hex[:12]}"
        with closing(psycopg.connect(database, autocommit=True)) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return database.rsplit("/", 1)[0] + f"/{name}", f"PostgreSQL at the given URL, database {name}"
    return f"sqlite:///{tmp / 'bench.db'}?synchronous={args.synchronous}", f"SQLite WAL, synchronous={args.synchronous}"


def run_ai_fix(
    database: str, args: argparse.Namespace, github_url: str, postgres: PostgresServer | None
) -> tuple[Figures, bool]:
    """One run against fresh `ai-fix serve` processes on a fresh database; the figures, and whether the store is right."""
    with tempfile.TemporaryDirectory() as tmp:
        url, described = fresh_database(database, args, Path(tmp), postgres)
        ports = [free_port() for _ in range(args.intakes)]
        servers = [start_server(url, ports[0], github_url)]  # the first migrates the database alone
        servers += [start_server(url, port, github_url) for port in ports[1:]]
        store = Store.from_url(url)
        try:
            gc_before = [collections(port) for port in ports]
            latencies, statuses, wall, cpu, distinct, size = measure(servers, ports, args)
            gc_after = [collections(port) for port in ports]
            gc_during = [sum(a[g] - b[g] for a, b in zip(gc_after, gc_before)) for g in range(3)]
            tail, tail_cpu = processing_tail(store, servers)
            jobs = count(store, "SELECT COUNT(*) FROM jobs")
            stored = count(store, "SELECT COUNT(*) FROM deliveries WHERE event = 'issues'")
        finally:
            store.close()
            for server in servers:
                server.terminate()
                server.wait(timeout=30)

    intakes = f"{args.intakes} ai-fix serve processes" if args.intakes > 1 else "ai-fix serve"
    result = report(f"{intakes} ({described})", args.n, latencies, wall, cpu)
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
    parser.add_argument(
        "--warmup",
        type=int,
        default=2000,
        help="deliveries sent to each server first and not measured (default 2000: Probot's p99 included node's "
        "compiling its hot code with a few hundred)",
    )
    parser.add_argument(
        "--synchronous",
        choices=["full", "normal"],
        default="full",
        help="SQLite only. full: every commit fsynced before its 202 (default); normal: committed to the WAL",
    )
    parser.add_argument(
        "--database",
        action="append",
        help="sqlite (a file per run, the default); postgresql (a PostgreSQL 15 server started here, fsync on); "
        "or a postgresql:// URL of a role that may CREATE DATABASE (a new database per run there). "
        "Given more than once: each in every round",
    )
    parser.add_argument("--intakes", type=int, default=1, help="ai-fix serve processes sharing the database")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also run the load against the same server stack answering 202 and storing nothing",
    )
    parser.add_argument("--probot", action="store_true", help="also run the load against a Probot 14 app (needs npm)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of runs (each server once a round); prints medians"
    )
    args = parser.parse_args()
    databases: list[str] = args.database or ["sqlite"]

    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs{io_pressure()}; N={args.n}, "
        f"concurrency {args.c}, keep-alive, {args.rounds} round(s), {args.intakes} intake process(es)"
    )
    probot = install_probot() if args.probot else None
    github_url = github_stub()
    postgres = PostgresServer(durable=True) if "postgresql" in databases else None
    baseline: list[Figures] = []
    theirs: list[Figures] = []
    ai_fix: dict[str, list[Figures]] = {database: [] for database in databases}
    ok = True

    def run_ours(database: str) -> None:
        nonlocal ok
        result, good = run_ai_fix(database, args, github_url, postgres)
        ai_fix[database].append(result)
        ok = ok and good

    servers: list[Callable[[], None]] = []
    if args.baseline:
        servers.append(lambda: baseline.append(run_baseline(args)))
    if probot is not None:
        servers.append(lambda: theirs.append(run_probot(args, probot)))
    servers += [functools.partial(run_ours, database) for database in databases]
    try:
        for round_ in range(args.rounds):
            # Every other round in the opposite order: none always runs first, on a cooler disk or a quieter minute.
            for run in servers if round_ % 2 == 0 else reversed(servers):
                run()
    finally:
        if postgres is not None:
            postgres.stop()
    print(f"load average {os.getloadavg()[0]:.1f}{io_pressure()} at the end")
    if args.rounds > 1 or args.baseline or args.probot or len(databases) > 1:
        mine = {
            database: medians(f"ai-fix serve ×{args.intakes}, {database.split(':')[0]}", runs)
            for database, runs in ai_fix.items()
        }
        first = mine[databases[0]]
        for database in databases[1:]:
            print(f"  p99 {database.split(':')[0]} / {databases[0]}: {mine[database].p99 / first.p99:.2f}")
        if theirs:
            probot_p99 = medians("Probot 14", theirs).p99
            for database, figures_ in mine.items():
                print(f"  p99 ai-fix ({database.split(':')[0]}) / Probot: {figures_.p99 / probot_p99:.2f}")
        if baseline:
            floor = medians("baseline", baseline)
            with tempfile.TemporaryDirectory() as tmp:
                sync_p50, sync_p99 = fsync_ms(Path(tmp))
            print(
                f"  p99 above the baseline: {first.p99 - floor.p99:.1f} ms; one fdatasync of 16 KB here: "
                f"p50 {sync_p50:.1f} ms, p99 {sync_p99:.1f} ms"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
