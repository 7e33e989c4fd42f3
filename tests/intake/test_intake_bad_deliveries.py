"""Bad deliveries must not stop the intake: refused or recorded at the edge, quarantined if they fail later, seen by /healthz."""

import json
import sqlite3
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bot.queue.store import Store
from tests.support.fake_github import load_payload
from tests.support.service import ADMIN, wait_until
from tests.support.webhooks import deliver, labeled, pr_comment


def send_all(url: str, payloads: list[dict], concurrency: int) -> list[httpx.Response]:
    """Each payload as an `issues` delivery, `concurrency` at a time, each connection keeping alive."""
    clients = [httpx.Client(base_url=url, timeout=30) for _ in range(concurrency)]
    try:
        with ThreadPoolExecutor(concurrency) as pool:
            return list(
                pool.map(lambda i: deliver(clients[i % concurrency], "issues", payloads[i]), range(len(payloads)))
            )
    finally:
        for client in clients:
            client.close()


def count(store: Store, sql: str) -> int:
    with store.reading() as conn:
        return int(conn.execute(sql).fetchone()[0])


def good_and_bad() -> list[dict]:
    good = [labeled(100 + n) for n in range(60)]
    huge_number = labeled(7)
    huge_number["issue"]["number"] = 2**63
    huge_installation = labeled(8)
    huge_installation["installation"]["id"] = 2**64 - 1
    return [*good[:20], huge_number, *good[20:40], huge_installation, *good[40:]]


def test_60_good_deliveries_and_2_out_of_range_at_concurrency_30_make_60_jobs(start_service, database_url):
    svc = start_service(workers=False, database_url=database_url)
    answers = send_all(svc.url, good_and_bad(), concurrency=30)
    assert sorted(r.status_code for r in answers) == [202] * 62
    refused = [r.json() for r in answers if r.json()["outcome"] == "ignored"]
    assert sorted(a["reason"].split(":")[1].strip() for a in refused) == ["installation_id", "number"]
    jobs = wait_until(lambda: len(svc.store.jobs.newest(limit=100)) == 60 and svc.store.jobs.newest(limit=100))
    assert sorted(j.number for j in jobs) == list(range(100, 160))
    assert count(svc.store, "SELECT COUNT(*) FROM deliveries WHERE processed = 0") == 0
    assert svc.client.get("/healthz").json() == {"ok": True}


def store_poison(path: Path) -> str:
    """A delivery an earlier version acknowledged and could never process (its job's number is 2**63)."""
    store = Store.from_url(f"sqlite:///{path}")
    store.init_schema()
    payload = labeled(7)
    work = {"kind": "issue", "repo": "Codertocat/Hello-World", "number": 2**63, "installation_id": 1, "sender": "x"}
    delivery = str(uuid.uuid4())
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO deliveries (id, event, action, outcome, reason, payload, received_at, work, processed) "
            "VALUES (?, 'issues', 'labeled', 'trigger', '', ?, ?, ?, 0)",
            (delivery, json.dumps(payload), time.time(), json.dumps(work)),
        )
    store.close()
    return delivery


def test_a_stored_delivery_that_cannot_be_processed_is_quarantined_and_the_rest_go_on(start_service, tmp_path):
    poison = store_poison(tmp_path / "ai-fix.db")
    svc = start_service(workers=False)  # the restart after the upgrade: it processes what is stored first
    answers = send_all(svc.url, [labeled(100 + n) for n in range(60)], concurrency=30)
    assert {r.status_code for r in answers} == {202}
    wait_until(lambda: len(svc.store.jobs.newest(limit=100)) == 60)
    with svc.store.reading() as conn:
        failures, processed, error = conn.execute(
            f"SELECT failures, processed, error FROM deliveries WHERE id = '{poison}'"
        ).fetchone()
    assert (failures, processed) == (3, 1)
    assert error.startswith("ValidationError: 1 validation error for Trigger number Input should be less than")
    assert "aifix_deliveries_quarantined 1" in svc.admin("/metrics").text
    assert svc.client.get("/healthz").json() == {"ok": True}  # set aside, it is no backlog


def test_healthz_is_unhealthy_while_stored_deliveries_wait_over_a_minute(start_service):
    svc = start_service(workers=False)
    assert svc.client.get("/healthz").json() == {"ok": True}
    with sqlite3.connect(svc.store.db.path, isolation_level=None) as conn:
        # Processing fails for a reason of the store's, not the delivery's (a table is missing), so
        # nothing is quarantined: a delivery stored two minutes ago waits.
        conn.execute("ALTER TABLE events RENAME TO events_gone")
        conn.execute(
            "INSERT INTO deliveries (id, event, action, outcome, payload, received_at, work, processed) "
            "VALUES ('waiting', 'issues', 'labeled', 'trigger', '{}', ?, ?, 0)",
            (
                time.time() - 120,
                json.dumps({"kind": "issue", "repo": "o/r", "number": 1, "installation_id": 1, "sender": "x"}),
            ),
        )
    unhealthy = svc.client.get("/healthz")
    assert unhealthy.status_code == 503
    assert unhealthy.json()["error"].startswith("1 stored deliveries are still not processed 60 s after they arrived")
    with sqlite3.connect(svc.store.db.path, isolation_level=None) as conn:
        conn.execute("ALTER TABLE events_gone RENAME TO events")
    wait_until(lambda: svc.client.get("/healthz").status_code == 200, timeout=10)
    assert [j.number for j in svc.store.jobs.newest()] == [1]
    assert count(svc.store, "SELECT failures FROM deliveries WHERE id = 'waiting'") == 0
    assert (
        "aifix_deliveries_quarantined 0"
        in svc.client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"}).text
    )


def test_a_field_of_the_wrong_json_type_is_answered_202_ignored_never_500(start_service, database_url):
    svc = start_service(workers=False, database_url=database_url)
    label_list = labeled(9)
    label_list["label"]["name"] = ["ai-fix"]
    body_list = pr_comment("/agent stop")
    body_list["comment"]["body"] = ["/agent stop"]
    with httpx.Client(base_url=svc.url, timeout=30) as client:
        answers = [deliver(client, "issues", label_list), deliver(client, "issue_comment", body_list)]
    assert [r.status_code for r in answers] == [202, 202]
    assert [(r.json()["outcome"], r.json()["reason"]) for r in answers] == [
        ("ignored", "issues.labeled payload is unusable: label.name: must be text, not list"),
        ("ignored", "issue_comment.created payload is unusable: comment.body: must be text, not list"),
    ]
    assert svc.store.jobs.newest(limit=10) == []


def test_lists_and_text_of_the_wrong_json_type_are_answered_202_ignored_never_500(start_service):
    svc = start_service(workers=False)
    status = load_payload("status/with-installation")
    status["state"], status["branches"] = "failure", 5
    added = load_payload("installation/created")
    added["repositories_added"] = 7
    labels = labeled(9)
    labels["issue"]["labels"] = "ai-fix"
    retry = pr_comment("/agent retry")
    retry["issue"]["body"] = ["<!-- ai-fix:pr issue=1 -->"]
    review = load_payload("pull_request_review/submitted")
    review["review"]["state"], review["pull_request"]["body"] = "changes_requested", {"marker": 1}
    sent = [
        ("status", status),
        ("installation_repositories", added | {"action": "added"}),
        ("issues", labels),
        ("issue_comment", retry),
        ("pull_request_review", review),
    ]
    with httpx.Client(base_url=svc.url, timeout=30) as client:
        answers = [deliver(client, event, payload) for event, payload in sent]
    assert [(r.status_code, r.json()["outcome"]) for r in answers] == [(202, "ignored")] * 5
    assert [r.json()["reason"].split(" payload is unusable: ")[1] for r in answers] == [
        "branches: must be a list, not int",
        "repositories_added: must be a list, not int",
        "issue.labels: must be a list, not str",
        "issue.body: must be text, not list",
        "pull_request.body: must be text, not dict",
    ]
    assert svc.store.jobs.newest(limit=10) == []
