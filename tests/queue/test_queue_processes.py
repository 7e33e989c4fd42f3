"""Workers as real processes: a killed worker's job is reclaimed, SIGTERM drains, two processes share a queue."""

import json
import re
import signal
import subprocess
import time
from collections import Counter

import httpx

from bot.errors import StoreUnavailable
from bot.intake.apply import Incoming, apply_batch
from bot.intake.events import Event
from bot.intake.triggers import decide
from bot.queue.pipeline import JobContext, JobOutcome
from bot.queue.store import Store
from bot.queue.worker import WorkerConfig, WorkerPool
from bot.snapshot import Snapshot
from tests.support.pipelines import Gate, Ledger, wait_for
from tests.support.processes import AI_FIX, env_for, free_port
from tests.support.service import ADMIN, FAST, github_for, make_settings, settled, wait_until
from tests.support.webhooks import deliver, labeled


def enqueue(store: Store, *numbers: int) -> list[int]:
    items = []
    for n in numbers:
        payload = labeled(n)
        event = Event("issues", f"d-{n}", payload)
        items.append(
            Incoming(
                event,
                json.dumps(payload).encode(),
                decide(event, trigger_label="ai-fix", bot_login="ai-fix[bot]"),
                time.time(),
            )
        )
    return [ack.job_id for ack in apply_batch(store, items)]


def test_a_killed_workers_job_is_reclaimed_after_its_lease_and_resumes(tmp_path, fake_github, github_url):
    store = Store.from_url(f"sqlite:///{tmp_path / 'ai-fix.db'}")
    store.init_schema()
    [job_id] = enqueue(store, 1)
    worker = subprocess.Popen(
        [AI_FIX, "worker"],
        env=env_for(tmp_path, fake_github, github_url, "tests.support.pipelines:Gate"),
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(tmp_path / "work" / f"started-{job_id}", timeout=30)
        wait_until(lambda: store.jobs.get(job_id).state.get("step", 0) >= 3)
    finally:
        worker.kill()
        worker.wait()
    dead = store.jobs.get(job_id)
    assert dead.status == "running" and dead.attempts == 1
    steps_before = dead.state["step"]

    (tmp_path / "work" / "release-all").write_text("")
    settings = make_settings(tmp_path, fake_github)
    later = Store.from_url(
        f"sqlite:///{tmp_path / 'ai-fix.db'}", clock=lambda: time.time() + 61
    )  # the 60 s lease has run out
    pool = WorkerPool(later, github_for(settings), Gate(settings), settings, workers=1, config=FAST)
    pool.start()
    try:
        job = settled(store, job_id)
    finally:
        pool.stop()
        later.close()
    assert job.status == "done" and job.attempts == 2
    names = [e.event for e in job.events]
    assert "lease_expired" in names and names.count("snapshot_taken") == 1  # resumed: the snapshot was kept
    passed = next(e for e in job.events if e.event == "gate_passed")
    assert passed.data["steps"] >= steps_before


class AwayOnce:
    """The first attempt finds the job store gone (PostgreSQL restarting); the next one ends the job."""

    def __init__(self) -> None:
        self.runs = 0

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        self.runs += 1
        if self.runs == 1:
            raise StoreUnavailable("job store db:5432/aifix is unavailable (terminating connection); retry later")
        return JobOutcome(status="done", reason="attempt 2")


def test_a_job_whose_failed_attempt_could_not_be_stored_is_taken_again_by_its_live_worker(
    tmp_path, fake_github, monkeypatch
):
    """Neither the attempt nor its failure could be stored: the job stays `running`, leased to a worker that
    lives on. Renewing that lease would keep it so for as long as the worker lives (and hold every job of its
    repository behind it); it runs out instead, and the next attempt ends the job."""
    store = Store.from_url(f"sqlite:///{tmp_path / 'ai-fix.db'}")
    store.init_schema()
    [job_id] = enqueue(store, 1)
    record = store.leases.fail_attempt

    def away(*args: object, **kwargs: object) -> None:
        monkeypatch.setattr(store.leases, "fail_attempt", record)
        raise StoreUnavailable("job store db:5432/aifix is unavailable (the server is starting); retry later")

    monkeypatch.setattr(store.leases, "fail_attempt", away)
    settings = make_settings(tmp_path, fake_github)
    config = WorkerConfig(lease_seconds=1.0, poll_seconds=0.02, grace_seconds=5.0, retry_seconds=0.0)
    pool = WorkerPool(store, github_for(settings), AwayOnce(), settings, workers=1, config=config)
    pool.start()
    try:
        job = settled(store, job_id, timeout=20)
    finally:
        pool.stop()
        store.close()
    assert (job.status, job.reason, job.attempts) == ("done", "attempt 2", 2)
    assert [e.event for e in job.events].count("lease_expired") == 1


def test_sigterm_drains_ai_fix_serve_and_exits_0(tmp_path, fake_github, github_url):
    port = free_port()
    server = subprocess.Popen(
        [AI_FIX, "serve", "--port", str(port)],
        env=env_for(tmp_path, fake_github, github_url, "tests.support.pipelines:Gate"),
        stderr=subprocess.PIPE,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            wait_until(lambda: _answers(client), timeout=30)
            job_id = deliver(client, "issues", labeled(1)).json()["job_id"]
            metrics = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"}).text
            # Started up, the heap is frozen: full collections no longer walk it while requests wait.
            assert int(re.search(r"^aifix_gc_frozen_objects (\d+)$", metrics, re.MULTILINE)[1]) > 50_000
        wait_for(tmp_path / "work" / f"started-{job_id}", timeout=15)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    finally:
        server.kill()
        stderr = server.communicate()[1].decode()  # waits, and closes the pipe
    store = Store.from_url(f"sqlite:///{tmp_path / 'ai-fix.db'}")
    job = store.jobs.get(job_id)
    assert job.status == "queued" and job.attempts == 0, stderr
    assert job.events[-1].event == "released" and job.state["step"] >= 1
    assert len(fake_github.calls_to("apps/get-authenticated")) == 1  # its bot user, read once at start
    store.close()


def _answers(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


class Stubborn:
    """Never checks for cancellation: the drain must still end, releasing the job after the grace period."""

    def run(self, snapshot, ctx):
        time.sleep(1.5)
        from bot.queue.pipeline import JobOutcome

        return JobOutcome(status="done", reason="too late")


def test_a_job_that_misses_the_grace_period_is_released_and_its_late_result_refused(tmp_path, fake_github):
    settings = make_settings(tmp_path, fake_github)
    store = Store.from_url(f"sqlite:///{tmp_path / 'ai-fix.db'}")
    store.init_schema()
    [job_id] = enqueue(store, 1)
    pool = WorkerPool(store, github_for(settings), Stubborn(), settings, workers=1, config=FAST)
    pool.start()
    wait_until(lambda: "snapshot_taken" in [e.event for e in store.jobs.get(job_id).events])
    started = time.monotonic()
    pool.stop(grace=0.2)
    assert time.monotonic() - started < 1.0
    assert store.jobs.get(job_id).status == "queued"
    time.sleep(1.6)  # the stubborn run returns now; its lease is gone, so its result is not written
    job = store.jobs.get(job_id)
    assert job.status == "queued" and job.events[-1].event == "released"
    store.close()


def test_two_processes_share_the_queue_without_double_claims(tmp_path, fake_github, github_url):
    store = Store.from_url(f"sqlite:///{tmp_path / 'ai-fix.db'}")
    store.init_schema()
    job_ids = enqueue(store, *range(1, 13))
    for n in range(2, 13):
        fake_github.add_issue("Codertocat/Hello-World", n)
    other = subprocess.Popen(
        [AI_FIX, "worker"],
        env=env_for(tmp_path, fake_github, github_url, "tests.support.pipelines:Ledger"),
        stderr=subprocess.DEVNULL,
    )
    settings = make_settings(tmp_path, fake_github)
    pool = WorkerPool(store, github_for(settings), Ledger(settings), settings, workers=2, config=FAST)
    pool.start()
    try:
        for job_id in job_ids:
            assert settled(store, job_id, timeout=30).status == "done"
    finally:
        pool.stop()
        other.send_signal(signal.SIGTERM)
        assert other.wait(timeout=20) == 0
    runs = Counter(int(line.split()[0]) for line in (tmp_path / "work" / "claims.log").read_text().splitlines())
    assert sorted(runs) == sorted(job_ids) and set(runs.values()) == {1}
    store.close()
