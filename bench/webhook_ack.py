"""Webhook acknowledgement benchmark: N signed deliveries at concurrency C against real `ai-fix serve` processes.

Protocol (the same for every server): GitHub's documented `issues.labeled` example payload, C keep-alive
connections, each delivery timed from the first byte sent to the last byte of the answer. Every delivery is
a trigger for a different issue (so none merge) and a share of them are redeliveries of an earlier
X-GitHub-Delivery (which must not create a job). Afterwards the job store is read: jobs must equal the
distinct triggering deliveries, every delivery must be stored once.

    .venv/bin/python bench/webhook_ack.py --probot --rounds 3   # N=2000, C=50; Probot 14 and ai-fix interleaved
    .venv/bin/python bench/webhook_ack.py --probot -n 4000 -c 200 --rounds 5
    .venv/bin/python bench/webhook_ack.py --probot --database sqlite --database postgresql --rounds 3
    .venv/bin/python bench/webhook_ack.py --baseline -n 5000 -c 100 --synchronous normal
    .venv/bin/python bench/webhook_ack.py --database postgresql --intakes 2   # a PostgreSQL it starts, two intakes
    .venv/bin/python bench/webhook_ack.py --database postgresql://aifix@127.0.0.1:5432/postgres   # a fresh database
    .venv/bin/python bench/webhook_ack.py --smoke   # every server on a tiny load: it still runs

Fair to every server (issue 38, each point a way an earlier version of this bench leaned toward ai-fix):

1. The same warm-up for all: `--warmup` deliveries of the same event (`issues`, action `labeled`, each for
   an issue the timed run does not use), so Probot runs its `issues.labeled` handler and Node compiles
   that path before the timer starts, as CPython's caches warm for ai-fix. (Warm-up deliveries under an
   event name no handler had left Probot's per-event path cold.)
2. Connections opened before the timer: the C connections are opened, and each has had an answer from
   the server (so the server has accepted it), during the warm-up; the timed run reuses them. (Opening
   C fresh connections as the timer started timed the kernel's accept queue: at C=200, Node served the
   first connections while up to 137 waited unaccepted, and its p99 jumped to about 1 s.) A connection
   the server closed while idle is opened again, and answered once, before the timer.
3. The work after the answer is counted: under load `ai-fix serve` answers once a delivery is stored
   durably and may make its job rows after the burst. Each run reports the processing tail (from the last
   answer until every stored delivery has its job) and the server CPU it took, and a second figure that
   times each delivery until it is answered and its job exists: from its first byte sent to its answer or,
   if later, the moment its `queued` event row was written (`events.at`, in the transaction that commits
   the job), so work left for after the burst is inside that window. Probot and the baseline store nothing and make no jobs.
4. Spread and load: every figure is printed per run, and per server as the median with the lowest and
   highest of the runs; each run prints the machine's load average before and after it, and the summary
   the load over the whole session (the machine is shared).
5. Probot is set up as its documentation advises for production (`NODE_ENV=production`, JSON logs, only
   warnings logged; see `intake_servers.start_probot`), with its locked dependencies (`npm ci`).

Each round runs, one after the other on the machine as it is then: the baseline (`--baseline`: the same
server stack as ai-fix, uvicorn with httptools and uvloop, answering 202 and storing nothing), the Probot
app (`--probot`: `bench/probot/app.js`, Probot 14, installed with `npm ci` into .cache/probot-bench the
first time), then `ai-fix serve` on each `--database`; every other round in the opposite order. After the
warm-up each server gets the same pause (until ai-fix has processed the warm-up's deliveries, then
SETTLE_SECONDS), so no server starts the timed run with the warm-up's work still running.

With --intakes 2 the C connections are split between two intake processes on one database (as behind a
load balancer), so a redelivery often reaches the other intake than its first copy did.

The server runs with AIFIX_WORKERS=0 (intake only: jobs stay queued) so the figure is the intake alone:
verify, parse, decide, commit durably, answer, make the job. The one GitHub call it makes, GET /app at
start, is answered by a stub in this process. On PostgreSQL, the server's CPU counts PostgreSQL's too.
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
from collections.abc import Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg
import uvloop
from common import add_smoke, machine_load
from intake_servers import (
    BASELINE,
    SECRET,
    collections,
    free_port,
    github_stub,
    install_probot,
    postgres_cpu,
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
WARMUP_ISSUES = 1_000_000
"""The warm-up's deliveries are for issues from this number on; the timed run's from 10,000."""
SETTLE_SECONDS = 0.5
"""The pause every server gets after the warm-up (once ai-fix has processed the warm-up's deliveries):
shorter than the 5 s both uvicorn and Node keep an idle connection open."""

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass(frozen=True)
class Delivery:
    id: str
    request: bytes
    """The raw HTTP/1.1 request."""


def build_deliveries(n: int, redeliver: float, first_issue: int) -> tuple[list[Delivery], int, int]:
    """N signed `issues.labeled` deliveries, a share of them redeliveries: them, the distinct count, the body size."""
    base = json.loads(PAYLOAD.read_text())
    base["label"]["name"] = "ai-fix"
    base["installation"] = {"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
    rng = random.Random(first_issue)
    sent: list[tuple[str, bytes]] = []
    deliveries: list[Delivery] = []
    for _ in range(n):
        if sent and rng.random() < redeliver:
            delivery, body = rng.choice(sent)
        else:
            payload = copy.deepcopy(base)
            payload["issue"]["number"] = first_issue + len(sent)
            body = json.dumps(payload, indent=2).encode()
            delivery = str(uuid.uuid4())
            sent.append((delivery, body))
        head = (
            f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            f"Content-Type: application/json\r\nX-GitHub-Event: issues\r\nX-GitHub-Delivery: {delivery}\r\n"
            f"X-Hub-Signature-256: {sign(body, SECRET)}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        deliveries.append(Delivery(delivery, head.encode() + body))
    return deliveries, len(sent), len(sent[0][1])


async def exchange(connection: Connection, request: bytes) -> int:
    """Send one request and read its whole answer; its status."""
    reader, writer = connection
    writer.write(request)
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


@dataclass
class Load:
    """What the timed run saw on the client side."""

    latencies: list[float]
    statuses: list[int]
    sent: dict[str, float]
    """Delivery id -> time.time() when its first copy was sent."""
    answered: dict[str, float]
    """Delivery id -> time.time() when its first copy was answered."""
    started: float
    """time.time() when the timer started."""
    wall: float


async def drive(connections: list[Connection], deliveries: list[Delivery], load: Load | None = None) -> Load:
    """The deliveries over the open connections, all drawing from one queue in order."""
    queue = list(reversed(deliveries))
    load = load or Load([], [], {}, {}, time.time(), 0.0)

    async def one_connection(connection: Connection) -> None:
        while queue:
            delivery = queue.pop()
            load.sent.setdefault(delivery.id, time.time())
            began = time.perf_counter()
            status = await exchange(connection, delivery.request)
            load.latencies.append(time.perf_counter() - began)
            load.statuses.append(status)
            load.answered.setdefault(delivery.id, time.time())

    began = time.perf_counter()
    await asyncio.gather(*(one_connection(c) for c in connections))
    load.wall = time.perf_counter() - began
    return load


async def open_connections(ports: list[int], count: int) -> list[Connection]:
    return list(
        await asyncio.gather(*(asyncio.open_connection("127.0.0.1", ports[i % len(ports)]) for i in range(count)))
    )


async def warm_up(connections: list[Connection], deliveries: list[Delivery]) -> None:
    """One delivery on each connection first (so the server has accepted every one), then the rest shared."""
    first, rest = deliveries[: len(connections)], deliveries[len(connections) :]
    await asyncio.gather(*(exchange(c, d.request) for c, d in zip(connections, first)))
    await drive(connections, rest)


async def reopened(connections: list[Connection], ports: list[int], spare: list[Delivery]) -> list[Connection]:
    """The connections with any the server closed while idle opened again and answered once (still untimed), each
    with a delivery taken from `spare`."""
    fresh: list[Connection] = []
    for i, connection in enumerate(connections):
        if connection[0].at_eof():
            connection[1].close()
            connection = await asyncio.open_connection("127.0.0.1", ports[i % len(ports)])
            await exchange(connection, spare.pop().request)
        fresh.append(connection)
    return fresh


async def session(
    ports: list[int],
    args: argparse.Namespace,
    settle: Callable[[], Awaitable[None]],
    cpu: Callable[[], float],
) -> tuple[Load, tuple[float, float], int, int, int]:
    """Open the connections, warm up, settle, then time the N deliveries: (load, (server, client) CPU s, warm-up
    deliveries sent, distinct timed deliveries, body size). The client runs on uvloop: on asyncio's own loop it spent
    about twice the CPU."""
    warm, _, _ = build_deliveries(max(args.warmup, args.c) + args.c, 0.0, WARMUP_ISSUES)
    warm, spare = warm[: max(args.warmup, args.c)], warm[max(args.warmup, args.c) :]
    spares = len(spare)
    deliveries, distinct, size = build_deliveries(args.n, args.redeliver, 10_000)
    connections = await open_connections(ports, args.c)
    try:
        await warm_up(connections, warm)
        await settle()
        connections = await reopened(connections, ports, spare)
        server_before, client_before = cpu(), time.process_time()
        load = await drive(connections, deliveries, Load([], [], {}, {}, time.time(), 0.0))
        used = (cpu() - server_before, time.process_time() - client_before)
    finally:
        for _, writer in connections:
            writer.close()
    return load, used, len(warm) + spares - len(spare), distinct, size


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000, method="inclusive")[int(q * 10) - 1] if len(values) > 1 else values[0]


@dataclass(frozen=True)
class Figures:
    """One run's figures; for a server that makes no jobs, the job figures are None."""

    p50: float
    p90: float
    p99: float
    max: float
    rate: float
    """Deliveries answered per second."""
    cpu: float
    """Server CPU per delivery while answering, µs."""
    client_cpu: float
    tail: float | None = None
    """ms from the last answer until every stored delivery has its job."""
    tail_cpu: float | None = None
    """Server CPU in the tail, µs per delivery."""
    job_p99: float | None = None
    """ms from a delivery's first byte sent until it was answered and its job existed, p99 over the distinct
    deliveries."""
    job_rate: float | None = None
    """Deliveries per second from the timer's start until the last job existed."""
    job_cpu: float | None = None
    """Server CPU per delivery until every job existed (answers and tail), µs."""


LABELS = {
    "p50": ("p50", "ms"),
    "p90": ("p90", "ms"),
    "p99": ("p99", "ms"),
    "max": ("max", "ms"),
    "rate": ("deliveries/s", ""),
    "cpu": ("server CPU per delivery", "µs"),
    "client_cpu": ("client CPU per delivery", "µs"),
    "tail": ("processing tail", "ms"),
    "tail_cpu": ("its CPU per delivery", "µs"),
    "job_p99": ("p99 until answered and the job exists", "ms"),
    "job_rate": ("deliveries/s until the jobs exist", ""),
    "job_cpu": ("server CPU per delivery with the jobs", "µs"),
}


def ack_figures(n: int, load: Load, cpu: tuple[float, float]) -> Figures:
    ms = [x * 1000 for x in load.latencies]
    return Figures(
        percentile(ms, 50),
        percentile(ms, 90),
        percentile(ms, 99),
        max(ms),
        n / load.wall,
        cpu[0] / n * 1e6,
        cpu[1] / n * 1e6,
    )


def show(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def report(name: str, f: Figures, load_before: str) -> None:
    print(f"{name}\n  before: {load_before}; after: {machine_load()}")
    print(
        f"  answers: p50 {show(f.p50)} ms, p90 {show(f.p90)} ms, p99 {show(f.p99)} ms, max {show(f.max)} ms; "
        f"{show(f.rate)} deliveries/s; CPU per delivery: server {show(f.cpu)} µs, client {show(f.client_cpu)} µs"
    )
    if f.tail is not None:
        print(
            f"  jobs: processing tail {show(f.tail)} ms after the last answer ({show(f.tail_cpu)} µs of server CPU "
            f"per delivery); until each job exists: p99 {show(f.job_p99)} ms, {show(f.job_rate)} deliveries/s, "
            f"server CPU {show(f.job_cpu)} µs per delivery"
        )


def fsync_ms(directory: Path, times: int = 100) -> tuple[float, float]:
    """p50 and p99 of one `fdatasync` after appending 16 KB (a delivery's WAL frames) in `directory`, in ms: on a
    shared disk, what every durable answer waits for at least once."""
    took: list[float] = []
    probe = directory / "fsync-probe"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for _ in range(times):
            os.write(fd, b"x" * 16384)
            began = time.perf_counter()
            os.fdatasync(fd)
            took.append((time.perf_counter() - began) * 1000)
    finally:
        os.close(fd)
        probe.unlink()
    return percentile(took, 50), percentile(took, 99)


def count(store: Store, query: str) -> int:
    """One COUNT(*) on the bench's database, SQLite or PostgreSQL, through the store's own connection."""
    with store.reading() as conn:
        return int(conn.execute(query).fetchone()[0])


def processed(store: Store, cpu: Callable[[], float], timeout: float = 60.0) -> tuple[float, float]:
    """Seconds until the server has processed every stored delivery (made its job), and the CPU s it used meanwhile."""
    started, before = time.perf_counter(), cpu()
    while count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0"):
        if time.perf_counter() - started > timeout:
            break
        time.sleep(0.005)
    return time.perf_counter() - started, cpu() - before


def job_times(store: Store) -> dict[str, float]:
    """Delivery id -> time.time() when the job it made was queued."""
    with store.reading() as conn:
        rows = conn.execute(
            "SELECT t.delivery_id, e.at FROM triggers t JOIN events e ON e.job_id = t.job_id WHERE e.event = 'queued'"
        ).fetchall()
    return {delivery: float(at) for delivery, at in rows}


def run_alone(name: str, server: subprocess.Popen[bytes], port: int, args: argparse.Namespace) -> Figures:
    """One run against a server that stores nothing (the baseline, Probot), stopped afterwards."""
    before = machine_load()
    try:
        load, cpu, _, _, _ = uvloop.run(
            session([port], args, functools.partial(asyncio.sleep, SETTLE_SECONDS), lambda: servers_cpu([server]))
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    result = ack_figures(args.n, load, cpu)
    report(name, result, before)
    return result


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
    before = machine_load()
    with tempfile.TemporaryDirectory() as tmp:
        url, described = fresh_database(database, args, Path(tmp), postgres)
        ports = [free_port() for _ in range(args.intakes)]
        servers = [start_server(url, ports[0], github_url)]  # the first migrates the database alone
        servers += [start_server(url, port, github_url) for port in ports[1:]]
        store = Store.from_url(url)
        local_postgres = postgres.data if postgres is not None and database == "postgresql" else None

        def cpu() -> float:
            return servers_cpu(servers) + (postgres_cpu(local_postgres) if local_postgres else 0.0)

        async def settle() -> None:
            processed(store, cpu)
            await asyncio.sleep(SETTLE_SECONDS)

        try:
            gc_before = [collections(port) for port in ports]
            load, used, warm, distinct, size = uvloop.run(session(ports, args, settle, cpu))
            gc_after = [collections(port) for port in ports]
            tail, tail_cpu = processed(store, cpu)
            made = job_times(store)
            jobs = count(store, "SELECT COUNT(*) FROM jobs")
            stored = count(store, "SELECT COUNT(*) FROM deliveries WHERE event = 'issues'")
        finally:
            store.close()
            for server in servers:
                server.terminate()
                server.wait(timeout=30)

    # Done once answered and its job written (a job made with the answer was written before it was committed).
    until_job = [(max(made[d], load.answered[d]) - sent) * 1000 for d, sent in load.sent.items() if d in made]
    last_job = max(max(made[d], load.answered[d]) for d in load.sent if d in made)
    result = replace(
        ack_figures(args.n, load, used),
        tail=tail * 1000,
        tail_cpu=tail_cpu / args.n * 1e6,
        job_p99=percentile(until_job, 99),
        job_rate=args.n / (last_job - load.started),
        job_cpu=(used[0] + tail_cpu) / args.n * 1e6,
    )
    intakes = f"{args.intakes} ai-fix serve processes" if args.intakes > 1 else "ai-fix serve"
    report(f"{intakes} ({described})", result, before)
    gc_during = [sum(a[g] - b[g] for a, b in zip(gc_after, gc_before)) for g in range(3)]
    print(
        f"  garbage collections in the server during the {args.warmup} + {args.n} deliveries: "
        f"young {gc_during[0]}, middle {gc_during[1]}, full {gc_during[2]}"
    )
    codes = {code: load.statuses.count(code) for code in sorted(set(load.statuses))}
    ok = jobs == distinct + warm and stored == distinct + warm and set(codes) <= {200, 202}
    print(
        f"  deliveries: {args.n} of {size} bytes ({distinct} distinct, {args.n - distinct} redeliveries) after {warm} "
        f"warm-up ones; answers {codes}; stored {stored} deliveries and {jobs} jobs, expected {distinct + warm} "
        f"of each: {'OK' if ok else 'MISMATCH'}"
    )
    return result, ok


def summary(name: str, runs: list[Figures]) -> dict[str, float]:
    """The median of each figure, printed with the lowest and highest of the runs."""
    medians: dict[str, float] = {}
    parts = []
    for key, (label, unit) in LABELS.items():
        values = [v for r in runs if (v := getattr(r, key)) is not None]
        if not values:
            continue
        medians[key] = statistics.median(values)
        spread = f" ({show(min(values))} - {show(max(values))})" if len(values) > 1 else ""
        parts.append(f"{label} {show(medians[key])}{' ' + unit if unit else ''}{spread}")
    print(f"  {name}, median of {len(runs)} run(s) (lowest - highest): " + "; ".join(parts))
    return medians


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
        help="issues.labeled deliveries sent to each server first over the same connections, not timed (default "
        "2000; at least one per connection)",
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
    add_smoke(parser, "60 deliveries at concurrency 5 to the baseline, Probot (with npm) and ai-fix on both stores")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.c, args.warmup, args.rounds, args.baseline = 60, 5, 20, 1, True
        args.database = ["sqlite", "postgresql"]
        args.probot = subprocess.run(["sh", "-c", "command -v npm"], check=False, capture_output=True).returncode == 0
    databases: list[str] = args.database or ["sqlite"]

    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {git_head()}; {machine_load()}\n"
        f"N={args.n} timed after {args.warmup} warm-up deliveries, concurrency {args.c} (connections opened and "
        f"answered before the timer), keep-alive, {args.rounds} round(s), {args.intakes} intake process(es)"
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
    print(f"at the end: {machine_load()}\nsummary:")
    mine = {
        database: summary(f"ai-fix serve ×{args.intakes}, {database.split(':')[0]}", runs)
        for database, runs in ai_fix.items()
    }
    first = mine[databases[0]]
    for database in databases[1:]:
        print(
            f"  {database.split(':')[0]} / {databases[0]}: p99 {mine[database]['p99'] / first['p99']:.2f}, "
            f"p99 until the job exists {mine[database]['job_p99'] / first['job_p99']:.2f}"
        )
    if theirs:
        probot_p99 = summary("Probot 14", theirs)["p99"]
        for database, figures_ in mine.items():
            print(
                f"  ai-fix ({database.split(':')[0]}) / Probot: p99 {figures_['p99'] / probot_p99:.2f}, "
                f"p99 until the job exists {figures_['job_p99'] / probot_p99:.2f}"
            )
    if baseline:
        floor = summary("baseline", baseline)
        print(f"  p99 above the baseline: {first['p99'] - floor['p99']:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        sync_p50, sync_p99 = fsync_ms(Path(tmp))
    print(f"  one fdatasync of 16 KB on this disk at the end: p50 {sync_p50:.1f} ms, p99 {sync_p99:.1f} ms")
    return 0 if ok else 1


def git_head() -> str:
    """The commit measured, and whether the work tree had changes."""
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "bot", "bench"], check=False, capture_output=True
    )
    return f"commit {head.stdout.strip()}{' with changes' if dirty.stdout else ''}"


if __name__ == "__main__":
    sys.exit(main())
