"""Two `ai-fix serve` and four `ai-fix worker` processes on one real PostgreSQL server.

1,000 signed deliveries plus 10 % redeliveries, each redelivery sent to the other intake at the same
moment as its original: every distinct delivery is stored once, every trigger is on exactly one job,
no job runs twice; a worker killed with SIGKILL mid-job leaves it to be leased again once, resuming
from its saved state.
"""

import json
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from bot.queue.health import job_counts
from bot.queue.store import Store
from bot.vocabulary import FINAL_STATUSES
from tests.support.pipelines import wait_for
from tests.support.processes import AI_FIX, env_for, free_port
from tests.support.service import wait_until
from tests.support.webhooks import headers, labeled

ISSUES = 50
DELIVERIES = 1000
REDELIVERED = 100
REPO = "Codertocat/Hello-World"
IDLE = httpx.Limits(keepalive_expiry=1.0)
"""Idle connections are dropped by the client before uvicorn drops them (after 5 s): no request races a close."""


def sends(ports: list[int]) -> list[tuple[int, bytes, dict[str, str]]]:
    """(port, body, headers) in sending order; a redelivery right after its original, to the other intake."""
    rng = random.Random(18)
    redelivered = set(rng.sample(range(DELIVERIES), REDELIVERED))
    out = []
    for i in range(DELIVERIES):
        body = json.dumps(labeled(1 + i % ISSUES)).encode()
        hdrs = headers("issues", body, delivery=str(uuid.uuid4()))
        first = rng.randrange(2)
        out.append((ports[first], body, hdrs))
        if i in redelivered:
            out.append((ports[1 - first], body, hdrs))
    return out


def post_all(plan: list[tuple[int, bytes, dict[str, str]]], concurrency: int = 16) -> list[int]:
    clients: dict[tuple[int, int], httpx.Client] = {}

    def post(i: int) -> int:
        port, body, hdrs = plan[i]
        key = (i % concurrency, port)
        client = clients.setdefault(key, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60, limits=IDLE))
        return client.post("/webhook", content=body, headers=hdrs).status_code

    try:
        with ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(post, range(len(plan))))
    finally:
        for client in clients.values():
            client.close()


def count(store: Store, sql: str) -> int:
    with store.reading() as conn:
        return int(conn.execute(sql).fetchone()[0])


def test_two_intakes_and_four_workers_on_postgresql(tmp_path, fake_github, github_url, postgres_server):
    url = postgres_server.new_database()
    store = Store.from_url(url)
    store.init_schema()
    for n in range(2, ISSUES + 1):
        fake_github.add_issue(REPO, n)
    env = {
        **env_for(tmp_path, fake_github, github_url, "tests.support.pipelines:Fleet", database_url=url),
        "AIFIX_MAX_RUNNING_PER_REPO": "8",  # every issue is in one repository; the four workers share it
    }
    ports = [free_port(), free_port()]
    intakes = [
        subprocess.Popen([AI_FIX, "serve", "--port", str(port)], env={**env, "AIFIX_WORKERS": "0"}) for port in ports
    ]
    logs = [(tmp_path / f"worker-{i}.log").open("w") for i in range(4)]
    workers = [subprocess.Popen([AI_FIX, "worker"], env=env, stderr=log) for log in logs]
    try:
        for port in ports:
            wait_until(lambda p=port: _healthy(p), timeout=60)
        statuses = post_all(sends(ports))
        assert sorted(Counter(statuses).items()) == [(200, REDELIVERED), (202, DELIVERIES)]

        # The job of issue 1 is held at its gate; its worker is killed mid-job.
        gate_job = int(wait_until(lambda: _job_of(store, 1), timeout=60))
        started = wait_for(tmp_path / "work" / f"started-{gate_job}", timeout=60)
        wait_until(lambda: store.jobs.get(gate_job).state.get("step", 0) >= 3, timeout=30)
        os.kill(int(started.split()[0]), signal.SIGKILL)
        steps_before = store.jobs.get(gate_job).state["step"]
        with store.transaction() as conn:  # as if its 60 s lease ran out (the dead worker renews it no more)
            conn.execute("UPDATE jobs SET lease_expires = ? WHERE id = ?", (time.time() - 1, gate_job))
        (tmp_path / "work" / "release-all").write_text("")

        (
            wait_until(
                lambda: (
                    count(store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0") == 0
                    and count(store, "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')") == 0
                ),
                timeout=300,
                interval=0.5,
            ),
            f"jobs by (kind, status): {job_counts(store)}",
        )
    finally:
        for proc in intakes + workers:
            proc.send_signal(signal.SIGTERM)
        for proc in intakes + workers:
            proc.wait(timeout=60)
        for log in logs:
            log.close()

    assert count(store, "SELECT COUNT(*) FROM deliveries") == DELIVERIES
    # Every trigger on exactly one job, every job of a trigger's issue.
    assert count(store, "SELECT COUNT(*) FROM triggers") == DELIVERIES
    assert count(store, "SELECT COUNT(DISTINCT delivery_id) FROM triggers") == DELIVERIES
    jobs = store.jobs.newest(limit=DELIVERIES + 1)
    assert {j.status for j in jobs} <= FINAL_STATUSES and {j.status for j in jobs} == {"done"}
    runs = Counter(int(line.split()[0]) for line in (tmp_path / "work" / "claims.log").read_text().splitlines())
    ledger_jobs = {j.id for j in jobs if j.number != 1}
    assert set(runs) == ledger_jobs and set(runs.values()) == {1}  # no job ran twice
    gate = store.jobs.get(gate_job)
    assert gate.attempts == 2 and [e.event for e in gate.events].count("lease_expired") == 1
    passed = next(e for e in gate.events if e.event == "gate_passed")
    assert passed.data["steps"] >= steps_before  # the second attempt went on from the first one's saved state
    store.close()


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _job_of(store: Store, number: int) -> int | None:
    with store.reading() as conn:
        row = conn.execute("SELECT MIN(id) FROM jobs WHERE number = ?", (number,)).fetchone()
    return row[0]
