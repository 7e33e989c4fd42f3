"""Job throughput of the store: jobs claimed and finished per second by W worker processes, on SQLite and PostgreSQL.

The pipeline is a no-op: each worker process loops claim → finish through `Store`, the same calls
`WorkerPool` makes around a job (the lease, the attempt, the history rows), with nothing in between,
so the figure is what the store itself allows. The jobs are enqueued first by the intake's own
`apply_batch` (one per issue, so none merge) and the bench checks every job ended `done` exactly once.

    .venv/bin/python bench/job_throughput.py                   # SQLite file and a local PostgreSQL it starts
    .venv/bin/python bench/job_throughput.py -n 4000 --workers 1 2 4
    .venv/bin/python bench/job_throughput.py --database postgresql://aifix@127.0.0.1:5432/bench
    .venv/bin/python bench/job_throughput.py --smoke           # 20 jobs, one worker process: it still runs
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

from common import add_smoke, machine_load

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from bot.intake.apply import apply_batch  # noqa: E402
from bot.queue.health import job_counts  # noqa: E402
from bot.queue.store import Store  # noqa: E402
from bot.vocabulary import WORK_KINDS  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402
from tests.support.webhooks import incoming  # noqa: E402


def work(url: str, name: str, start: float, done: multiprocessing.Queue[int]) -> None:
    store = Store.from_url(url)
    while time.time() < start:
        time.sleep(0.001)
    finished = 0
    while (job := store.leases.claim(name, WORK_KINDS, 60.0)) is not None:
        store.leases.finish(job.id, name, "done", "no-op")
        finished += 1
    store.close()
    done.put(finished)


def run(url: str, n: int, workers: int) -> tuple[float, bool]:
    """Jobs per second for `workers` processes, and whether every job ended done once."""
    store = Store.from_url(url)
    store.init_schema()
    for first in range(0, n, 200):
        apply_batch(
            store, [incoming(i, f"bench-{i}-{time.time_ns()}") for i in range(first + 1, min(first + 201, n + 1))]
        )
    done: multiprocessing.Queue[int] = multiprocessing.Queue()
    start = time.time() + 1.0
    procs = [multiprocessing.Process(target=work, args=(url, f"w{i}", start, done)) for i in range(workers)]
    for p in procs:
        p.start()
    counts = [done.get() for _ in procs]
    wall = time.time() - start
    for p in procs:
        p.join()
    ok = sum(counts) == n and job_counts(store) == {("issue", "done"): n}
    store.close()
    return n / wall, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="jobs per run (default 2000)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker processes per run")
    parser.add_argument(
        "--database", help="a PostgreSQL URL to use instead of one started here (its tables are reused)"
    )
    add_smoke(parser, "20 jobs, one worker process")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.workers = 20, [1]
    print(f"{machine_load()}; {args.n} jobs per run, no-op pipeline")
    server = None if args.database else PostgresServer(durable=True)
    ok = True
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for workers in args.workers:
                urls = {
                    "SQLite (WAL, synchronous=full)": f"sqlite:///{Path(tmp) / f'bench-{workers}.db'}",
                    "PostgreSQL 15 (fsync on)": args.database or server.new_database(),  # type: ignore[union-attr]
                }
                for name, url in urls.items():
                    rate, good = run(url, args.n, workers)
                    ok = ok and good
                    print(
                        f"{name}, {workers} worker process(es): {rate:,.0f} jobs/s {'OK' if good else 'MISMATCH'} "
                        f"({machine_load()})"
                    )
    finally:
        if server is not None:
            server.stop()
    print(f"at the end: {machine_load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
