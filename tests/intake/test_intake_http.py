"""POST /webhook and the read endpoints on a real uvicorn server on loopback."""

import json
import socket
import sqlite3
import threading
import uuid

import httpx
import pytest

from bot.errors import StoreUnavailable
from bot.intake.signature import sign
from bot.queue.store import Store
from tests.support.fake_github import load_payload
from tests.support.service import ADMIN, settled, wait_until
from tests.support.webhooks import SECRET, deliver, headers, labeled


def stored_deliveries(svc) -> list:
    with svc.store.reading() as conn:
        return conn.execute("SELECT id, event, action, outcome, reason FROM deliveries").fetchall()


def test_signed_trigger_is_stored_then_acknowledged(start_service, database_url):
    svc = start_service(workers=False, database_url=database_url)
    response = deliver(svc.client, "issues", labeled(5), delivery="delivery-5")
    assert response.status_code == 202
    assert response.json()["outcome"] == "queued"
    job = svc.store.jobs.get(response.json()["job_id"])
    assert (job.status, job.kind, job.repo, job.number) == ("queued", "issue", "Codertocat/Hello-World", 5)
    assert [t.delivery_id for t in job.triggers] == ["delivery-5"]
    assert [tuple(r)[:4] for r in stored_deliveries(svc)] == [("delivery-5", "issues", "labeled", "trigger")]


def test_bad_signatures_get_401_store_nothing_and_echo_nothing(start_service):
    svc = start_service(workers=False)
    body = json.dumps(labeled(title_marker := 1)).encode()
    cases = {
        "missing": {k: v for k, v in headers("issues", body).items() if k != "X-Hub-Signature-256"},
        "wrong secret": headers("issues", body, secret="not the secret"),
        "sha1 only": {
            **{k: v for k, v in headers("issues", body).items() if k != "X-Hub-Signature-256"},
            "X-Hub-Signature": "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59",
        },
        "tampered": headers("issues", body.replace(b"Spelling", b"Spellinx")),
    }
    for name, hdrs in cases.items():
        response = svc.client.post("/webhook", content=body, headers=hdrs)
        assert response.status_code == 401, name
        assert "Spelling error" not in response.text and "Codertocat" not in response.text
    assert stored_deliveries(svc) == []
    assert title_marker == 1


def test_githubs_test_vector_passes_the_signature_check_over_http(start_service):
    svc = start_service(workers=False, webhook_secret="It's a Secret to Everybody")
    response = svc.client.post(
        "/webhook",
        content=b"Hello, World!",
        headers={
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": "vector",
            "X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        },
    )
    # The signature is right, so the body is parsed: "Hello, World!" is not JSON.
    assert response.status_code == 400 and "not JSON" in response.json()["error"]


def test_malformed_json_and_missing_headers_are_400(start_service):
    svc = start_service(workers=False)
    body = b'{"action": "labeled", '
    assert svc.client.post("/webhook", content=body, headers=headers("issues", body)).status_code == 400
    good = json.dumps(labeled()).encode()
    no_delivery = {k: v for k, v in headers("issues", good).items() if k != "X-GitHub-Delivery"}
    assert svc.client.post("/webhook", content=good, headers=no_delivery).status_code == 400
    assert stored_deliveries(svc) == []


def _raw_request(url: str, head: str, first_bytes: bytes) -> tuple[socket.socket, bytes]:
    """Send a request head and part of a body, leave the socket open, return the server's answer."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(head.encode() + first_bytes)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return sock, answer


def test_over_25_mib_is_413_without_reading_the_body(start_service):
    svc = start_service(workers=False)
    # Declared too large: answered at once although only 1 KiB of the 30 MiB was ever sent.
    head = (
        "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: issues\r\nX-GitHub-Delivery: big\r\n"
        f"X-Hub-Signature-256: sha256=00\r\nContent-Length: {30 * 1024 * 1024}\r\n\r\n"
    )
    sock, answer = _raw_request(svc.url, head, b"x" * 1024)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413")
    # Streamed without a length: answered once 25 MiB + 1 byte arrived, before the body's end was sent.
    head = (
        "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: issues\r\nX-GitHub-Delivery: big2\r\n"
        "X-Hub-Signature-256: sha256=00\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"y" * (1024 * 1024)
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(26))
    sock, answer = _raw_request(svc.url, head, body)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413")
    assert stored_deliveries(svc) == []


def test_ping_is_200_and_unknown_events_are_recorded_and_ignored(start_service, database_url):
    svc = start_service(workers=False, database_url=database_url)
    assert deliver(svc.client, "ping", load_payload("ping/event"), delivery="p1").status_code == 200
    response = deliver(svc.client, "watch", load_payload("push/event"), delivery="watch-1")
    assert response.status_code == 202 and response.json()["outcome"] == "ignored"
    not_ours = deliver(svc.client, "issues", labeled(label="bug"), delivery="label-bug")
    assert not_ours.status_code == 202 and not_ours.json()["outcome"] == "ignored"
    rows = {r["id"]: r for r in stored_deliveries(svc)}
    assert rows["watch-1"]["outcome"] == "ignored" and "'watch' is not handled" in rows["watch-1"]["reason"]
    assert "not the trigger label" in rows["label-bug"]["reason"]
    assert rows["p1"]["outcome"] == "ping"
    assert svc.store.jobs.newest() == []


def test_concurrent_redeliveries_make_one_job(start_service, database_url):
    svc = start_service(workers=False, database_url=database_url)
    body = json.dumps(labeled(9)).encode()
    hdrs = headers("issues", body, delivery="same-delivery")
    barrier = threading.Barrier(16)
    answers: list[httpx.Response] = []

    def send() -> None:
        with httpx.Client(base_url=svc.url) as client:
            barrier.wait()
            answers.append(client.post("/webhook", content=body, headers=hdrs))

    threads = [threading.Thread(target=send) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in answers) == [200] * 15 + [202]
    # Whether or not it shared its batch with the redeliveries, the first copy's answer names the job made with it.
    outcomes = sorted(r.json()["outcome"] for r in answers)
    assert outcomes == ["duplicate"] * 15 + ["queued"]
    jobs = wait_until(svc.store.jobs.newest)
    assert len(jobs) == 1 and len(jobs[0].triggers) == 1
    assert len(stored_deliveries(svc)) == 1


def test_503_while_the_store_is_locked_then_the_redelivery_is_taken(start_service):
    svc = start_service(workers=False, busy_timeout=0.2)
    blocker = sqlite3.connect(svc.store.db.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    body = json.dumps(labeled(3)).encode()
    hdrs = headers("issues", body, delivery="during-outage")
    response = svc.client.post("/webhook", content=body, headers=hdrs)
    assert response.status_code == 503
    blocker.execute("ROLLBACK")
    blocker.close()
    assert svc.store.jobs.newest() == []
    again = svc.client.post("/webhook", content=body, headers=hdrs)  # GitHub's redelivery: same id
    assert again.status_code == 202 and len(svc.store.jobs.newest()) == 1


def test_503_and_unhealthy_when_the_database_is_gone(start_service, tmp_path):
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    svc = start_service(workers=False, database_url=f"sqlite:///{db_dir / 'ai-fix.db'}")
    assert svc.client.get("/healthz").status_code == 200
    for f in db_dir.iterdir():
        f.unlink()
    db_dir.rmdir()
    svc.store.close()  # drop open handles, as after a restart of the volume
    assert svc.client.get("/healthz").status_code == 503
    assert deliver(svc.client, "issues", labeled()).status_code == 503


def test_read_endpoints_need_the_admin_token(start_service, fake_github):
    svc = start_service()
    fake_github.add_issue("Codertocat/Hello-World", 4)
    fake_github.permissions[("Codertocat/Hello-World", "reader")] = "read"
    done = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    rejected = deliver(svc.client, "issues", labeled(4, sender="reader")).json()["job_id"]
    settled(svc.store, done)
    settled(svc.store, rejected)

    assert svc.client.get("/tasks").status_code == 401
    assert svc.client.get("/tasks", headers={"Authorization": "Bearer wrong"}).status_code == 401
    tasks = svc.admin("/tasks").json()["tasks"]
    assert [t["id"] for t in tasks] == [rejected, done]  # newest first
    assert {"id", "repo", "number", "kind", "status", "events"} <= set(tasks[0])
    assert tasks[0]["repo"] == "Codertocat/Hello-World" and tasks[0]["kind"] == "issue"
    assert [t["id"] for t in svc.admin("/tasks?status=rejected").json()["tasks"]] == [rejected]
    assert [t["id"] for t in svc.admin("/tasks?limit=1").json()["tasks"]] == [rejected]
    assert svc.admin("/tasks?status=nonsense").status_code == 400
    assert svc.admin("/tasks?limit=0").status_code == 400

    detail = svc.admin(f"/tasks/{done}").json()
    assert detail["status"] == "done" and detail["snapshot"]["title"] == "Spelling error in the README file"
    assert [e["event"] for e in detail["events"]][:3] == ["queued", "claimed", "trigger_checked"]
    assert svc.admin("/tasks/999").status_code == 404

    deliver(svc.client, "issues", labeled(1), secret="wrong")
    deliver(svc.client, "made_up_event", {"zen": "x"})
    metrics = svc.admin("/metrics").text
    assert 'aifix_deliveries_total{event="unverified",outcome="unauthorized"} 1' in metrics
    assert 'aifix_deliveries_total{event="other",outcome="ignored"} 1' in metrics and "made_up" not in metrics
    assert 'aifix_deliveries_total{event="issues",outcome="queued"} 2' in metrics
    assert 'aifix_jobs{kind="issue",status="done"} 1' in metrics
    assert 'aifix_jobs{kind="issue",status="rejected"} 1' in metrics
    assert 'aifix_ack_seconds_bucket{le="+Inf"} 4' in metrics and "aifix_ack_seconds_count 4" in metrics


def test_read_endpoints_are_disabled_without_an_admin_token(start_service):
    svc = start_service(workers=False, admin_token=None)
    for path in ("/tasks", "/tasks/1", "/metrics"):
        response = svc.client.get(path, headers={"Authorization": "Bearer anything"})
        assert response.status_code == 404 and "AIFIX_ADMIN_TOKEN" in response.json()["error"]
    assert svc.client.get("/healthz").json() == {"ok": True}
    assert ADMIN not in svc.client.get("/tasks").text


def test_signature_is_checked_on_the_exact_bytes_received(start_service):
    svc = start_service(workers=False)
    body = json.dumps(labeled(11), indent=4).encode()
    response = svc.client.post(
        "/webhook",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body, SECRET),
        },
    )
    assert response.status_code == 202


def test_unhealthy_once_the_database_file_is_moved_away_and_nothing_goes_into_the_moved_file(start_service, tmp_path):
    db_dir, moved = tmp_path / "db", tmp_path / "moved"
    db_dir.mkdir()
    moved.mkdir()
    svc = start_service(workers=False, database_url=f"sqlite:///{db_dir / 'ai-fix.db'}")
    assert deliver(svc.client, "issues", labeled(1)).status_code == 202
    assert svc.client.get("/healthz").status_code == 200
    for f in db_dir.iterdir():  # the volume re-mounted, a restore, an operator's mv: the open files live on
        f.rename(moved / f.name)
    health = svc.client.get("/healthz")
    assert health.status_code == 503 and "is not the file this process opened" in health.json()["error"]
    assert deliver(svc.client, "issues", labeled(2)).status_code == 503
    with pytest.raises(StoreUnavailable, match="not the file this process opened"):
        svc.store.work.cancel_target("Codertocat/Hello-World", 1, "a worker's write")
    errors: list[Exception] = []

    def first_read_of_a_new_thread() -> None:
        try:
            svc.store.jobs.newest()
        except StoreUnavailable as exc:
            errors.append(exc)

    fresh = threading.Thread(target=first_read_of_a_new_thread)
    fresh.start()
    fresh.join()
    assert "is not the file this process opened" in str(errors[0])
    assert list(db_dir.iterdir()) == []  # no empty database was left where the file was
    orphan = Store.from_url(f"sqlite:///{moved / 'ai-fix.db'}")
    assert [(j.number, j.status) for j in orphan.jobs.newest()] == [(1, "queued")]
    orphan.close()


def test_unhealthy_when_a_write_cannot_commit(start_service):
    svc = start_service(workers=False, busy_timeout=0.2)
    blocker = sqlite3.connect(svc.store.db.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # reads still answer (WAL); no write can commit
    try:
        health = svc.client.get("/healthz")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert health.status_code == 503 and "database is locked" in health.json()["error"]
    assert svc.client.get("/healthz").json() == {"ok": True}


def test_task_ids_are_plain_digits_in_range(start_service, database_url):
    svc = start_service(workers=False, database_url=database_url)
    job_id = deliver(svc.client, "issues", labeled(1)).json()["job_id"]
    assert svc.admin(f"/tasks/{job_id}").json()["number"] == 1
    for path in (
        f"/tasks/{job_id}%0a",
        "/tasks/99999999999999999999999",
        "/tasks/9223372036854775808",
        "/tasks/%C2%B9",
    ):
        response = svc.admin(path)
        assert (response.status_code, response.json()) == (404, {"error": "no such task"}), path
    assert svc.admin("/tasks?limit=%C2%B2").status_code == 400
