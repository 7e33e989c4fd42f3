"""The viewer's endpoints in the service's app (real uvicorn on loopback): who gets in, the list, the live stream."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from bot.job.state import trace_file
from bot.loop.records import EndRecord, StartRecord, StepRecord
from bot.loop.trace import Trace
from bot.queue.enqueue import insert_job
from bot.queue.models import Trigger
from bot.queue.store import Store
from bot.viewer.links import sign
from tests.support.service import ADMIN, Service

KEY = "viewer-secret-for-tests-0123456789"
BEARER = {"Authorization": f"Bearer {ADMIN}"}


def add_job(store: Store, repo: str = "Codertocat/Hello-World", number: int = 1, job_dir: Path | None = None) -> int:
    trigger = Trigger(kind="issue", repo=repo, number=number, installation_id=1, sender="Codertocat")
    with store.transaction() as conn:
        job_id = insert_job(store.db, conn, trigger, time.time())
    if job_dir is not None:
        store.leases.save_state(job_id, {"delivery": {"job_dir": str(job_dir)}})
    return job_id


def signed(service: Service, job_id: int, *, expires: int | None = None, path: str = "") -> str:
    exp = expires if expires is not None else int(time.time()) + 3600
    return f"/runs/{job_id}{path}?exp={exp}&sig={sign(KEY, service.store.identity(), job_id, exp)}"


@pytest.fixture
def service(start_service: Callable[..., Service]) -> Service:
    return start_service(workers=False, viewer_secret=KEY)


@pytest.fixture
def traced(service: Service, tmp_path: Path) -> tuple[int, Trace]:
    """A job whose trace holds its start and one step (what a running job's page shows)."""
    job_dir = tmp_path / "work" / "jobs" / "Codertocat--Hello.World-1-1-1"
    job_id = add_job(service.store, job_dir=job_dir)
    trace = Trace(trace_file(job_dir), ["hunter2-secret-value"])
    trace.append(StartRecord(title="Fix add()", model="m", small_model="s", model_reason="", branch="b", base_sha="0"))
    trace.append(StepRecord(step=1, intent="plan it"))
    return job_id, trace


def test_a_signed_link_or_the_admin_token_opens_a_page_and_nothing_else_does(
    service: Service, traced: tuple[int, Trace]
) -> None:
    job_id, _ = traced
    page = service.client.get(signed(service, job_id))
    assert page.status_code == 200 and "Fix add()" in page.text and 'data-step="1"' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and re.search(r"script-src 'nonce-[\w-]+'", csp)
    assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
    assert service.client.get(f"/runs/{job_id}", headers=BEARER).status_code == 200
    past = int(time.time()) - 1
    for path in (
        signed(service, job_id, expires=past),
        signed(service, job_id + 1).replace(f"/runs/{job_id + 1}", f"/runs/{job_id}"),
        f"/runs/{job_id}?exp=9999999999&sig=",
        signed(service, job_id, expires=past, path="/events"),
    ):
        assert service.client.get(path).status_code == 403, path
    assert "expired on" in service.client.get(signed(service, job_id, expires=past)).text
    anonymous = service.client.get(f"/runs/{job_id}")
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == 'Basic realm="ai-fix runs"'
    assert service.client.get(signed(service, job_id + 99)).status_code == 404, (
        "a valid signature for a job that is not there"
    )


def test_a_link_made_for_one_job_store_opens_nothing_once_another_serves_that_job_number(
    start_service: Callable[..., Service], tmp_path: Path
) -> None:
    before = start_service(workers=False, viewer_secret=KEY)
    link = signed(before, add_job(before.store))
    assert before.client.get(link).status_code == 200
    # The database replaced (a new file here): its first job has the same number, another issue.
    after = start_service(workers=False, viewer_secret=KEY, database_url=f"sqlite:///{tmp_path / 'new.db'}")
    job_id = add_job(after.store, "Codertocat/Other", 9)
    assert after.store.identity() != before.store.identity() and link.startswith(f"/runs/{job_id}?")
    refused = after.client.get(link)
    assert refused.status_code == 403 and "made before the job store was replaced" in refused.text
    assert after.client.get(signed(after, job_id)).status_code == 200


def test_without_a_viewer_secret_signed_links_are_refused_and_without_either_setting_the_viewer_is_off(
    start_service: Callable[..., Service],
) -> None:
    admin_only = start_service(workers=False)
    job_id = add_job(admin_only.store)
    assert "AIFIX_VIEWER_SECRET is not set" in admin_only.client.get(signed(admin_only, job_id)).text
    assert admin_only.client.get(signed(admin_only, job_id)).status_code == 403
    assert admin_only.client.get(f"/runs/{job_id}", headers=BEARER).status_code == 200
    off = start_service(workers=False, admin_token=None)
    assert off.client.get("/runs").status_code == 404 and off.client.get(f"/runs/{job_id}").status_code == 404


def test_the_list_needs_the_admin_token_and_filters_by_repository_and_status(service: Service) -> None:
    one = add_job(service.store, "Codertocat/Hello-World", 1)
    other = add_job(service.store, "Codertocat/Other", 2)
    claimed = service.store.leases.claim("w", ["issue"], 60)
    assert claimed is not None and claimed.id == one
    listed = service.client.get("/runs", headers=BEARER)
    assert listed.status_code == 200 and f'data-job="{one}"' in listed.text and f'data-job="{other}"' in listed.text
    by_repo = service.client.get("/runs", headers=BEARER, params={"repo": "Codertocat/Other"}).text
    assert f'data-job="{other}"' in by_repo and f'data-job="{one}"' not in by_repo
    running = service.client.get("/runs", headers=BEARER, params={"status": "running"}).text
    assert f'data-job="{one}"' in running and f'data-job="{other}"' not in running
    assert service.client.get("/runs", headers=BEARER, params={"status": "nope"}).status_code == 400
    assert service.client.get("/runs", headers=BEARER, params={"limit": "0"}).status_code == 400
    assert service.client.get("/runs").status_code == 401
    assert service.client.get(signed(service, one).replace(f"/runs/{one}", "/runs")).status_code == 401, (
        "a link opens one run"
    )


def events(service: Service, path: str, into: list[tuple[str, dict]], until: int) -> threading.Thread:
    """Read the event stream at `path` in a thread, appending (event, data) as they arrive; hang up after `until`."""

    def read() -> None:
        with httpx.stream("GET", service.url + path, timeout=30) as response:
            assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
            name = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    into.append((name, json.loads(line.removeprefix("data: "))))
                    if len(into) == until:
                        return

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def wait_for(events: list[tuple[str, dict]], count: int, timeout: float = 10) -> list[tuple[str, dict]]:
    deadline = time.monotonic() + timeout
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {events} arrived"
        time.sleep(0.02)
    return events


def test_the_stream_sends_new_steps_then_ends_when_the_job_is_over(service: Service, traced: tuple[int, Trace]) -> None:
    job_id, trace = traced
    claimed = service.store.leases.claim("w", ["issue"], 60)
    assert claimed is not None and claimed.id == job_id
    got: list[tuple[str, dict]] = []
    reader = events(service, signed(service, job_id, path="/events") + "&from=2", got, until=5)
    time.sleep(0.5)
    assert got == [], "nothing new since the page"
    trace.append(StepRecord(step=2, intent="the key is hunter2-secret-value"))
    [(name, update)] = wait_for(got, 1)
    assert name == "update" and update["records"] == 3 and len(update["items"]) == 1
    assert 'data-step="2"' in update["items"][0] and "the key is [REDACTED]" in update["items"][0]
    assert 'class="total-steps">2<' in update["sections"]["run-header"] and "run-contract" not in update["sections"]
    trace.append(EndRecord(outcome="accepted", reason="all checks pass", steps=2, head_sha="abc"))
    wait_for(got, 2)
    assert 'data-status="accepted"' in got[1][1]["sections"]["run-outcome"]
    time.sleep(0.3)
    assert len(got) == 2, "the job still runs (it delivers after the end record): the stream goes on"
    assert service.store.leases.finish(job_id, "w", "done", "delivered")
    wait_for(got, 4)
    assert "job status: <b>done</b>" in got[2][1]["sections"]["run-header"] and got[3][0] == "end"
    reader.join(5)
    assert not reader.is_alive(), "the stream closed after its end event"


def test_a_trace_begun_afresh_makes_the_page_reload(service: Service, traced: tuple[int, Trace]) -> None:
    job_id, trace = traced
    got: list[tuple[str, dict]] = []
    events(service, signed(service, job_id, path="/events") + "&from=2", got, until=1)
    time.sleep(0.4)
    trace.path.write_text("")  # a new `ai-fix run` into the same --out begins the trace anew
    assert wait_for(got, 1)[0][0] == "restart"
    late: list[tuple[str, dict]] = []
    events(service, signed(service, job_id, path="/events") + "&from=5", late, until=1)
    assert wait_for(late, 1)[0][0] == "restart", "a page showing more records than the trace holds reloads"


@pytest.fixture
def no_trace_yet(service: Service, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    job_dir = tmp_path / "later" / "job"
    yield add_job(service.store, job_dir=job_dir), trace_file(job_dir)


def test_a_page_opened_before_the_run_started_fills_in(service: Service, no_trace_yet: tuple[int, Path]) -> None:
    job_id, path = no_trace_yet
    page = service.client.get(signed(service, job_id)).text
    assert "No trace yet" in page and 'data-records="0"' in page and 'data-finished="false"' in page
    got: list[tuple[str, dict]] = []
    reader = events(service, signed(service, job_id, path="/events") + "&from=0", got, until=1)
    time.sleep(0.4)
    path.parent.mkdir(parents=True)
    Trace(path, []).append(
        StartRecord(title="Now", model="m", small_model="s", model_reason="", branch="b", base_sha="0")
    )
    [(name, update)] = wait_for(got, 1)
    assert name == "update" and "Now" in update["sections"]["run-header"]
    reader.join(5)


def test_a_job_id_no_store_can_hold_is_404_like_an_unknown_one(start_service: Callable[..., Service]) -> None:
    svc = start_service(workers=False)
    for job_id in ("99999999999999999999999", str(2**63), "424242"):
        for path in (f"/runs/{job_id}", f"/runs/{job_id}/events"):
            answer = svc.client.get(path, headers=BEARER)
            assert answer.status_code == 404, (path, answer.text[:200])
            assert f"There is no job {job_id}." in answer.text
