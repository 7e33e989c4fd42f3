"""Labels on install: `installation.created` and `installation_repositories.added` make a `labels` job per repository,
which creates the labels ai-fix uses, skips those there, and logs (not fails) a repository that refuses."""

from __future__ import annotations

import logging

import httpx

from tests.support.fake_github import load_payload
from tests.support.service import settled, wait_until
from tests.support.webhooks import INSTALLATION, REPO, deliver

LABELS = {"ai-fix", "ai-fix:plan", "ai-fix:handoff", "ai-fix:unverified", "ai-fix:no-ci-fix"}


def installation_created(*repos: tuple[int, str]) -> dict:
    payload = load_payload("installation/created")
    payload["installation"]["id"] = INSTALLATION
    payload["repositories"] = [
        {"id": repo_id, "node_id": "x", "name": name.split("/")[1], "full_name": name, "private": False}
        for repo_id, name in repos
    ]
    return payload


def labels_jobs(svc) -> list:
    return [job for job in svc.store.jobs.newest(None, 50) if job.kind == "labels"]


def test_installing_the_app_creates_its_labels_in_each_repository(start_service, fake_github):
    svc = start_service(trigger_label="fix-me")
    assert (
        deliver(svc.client, "installation", installation_created((10, REPO), (11, "Codertocat/Other"))).status_code
        == 202
    )
    jobs = wait_until(lambda: (found := labels_jobs(svc)) and len(found) == 2 and found)
    for job in jobs:
        assert settled(svc.store, job.id).status == "done"
    assert {(job.repo, job.number) for job in jobs} == {(REPO, 10), ("Codertocat/Other", 11)}
    for repo in (REPO, "Codertocat/Other"):
        made = {label["name"]: label for label in fake_github.labels[repo]}
        assert set(made) == LABELS - {"ai-fix"} | {"fix-me"}  # the trigger label is AIFIX_TRIGGER_LABEL
        assert all(len(label["description"]) <= 100 and len(label["color"]) == 6 for label in made.values())
    # Each job's token reached its one repository only, and no person's permission was asked for.
    assert sorted(c.json["repositories"] for c in fake_github.calls_to("apps/create-installation-access-token")) == [
        ["Hello-World"],
        ["Other"],
    ]
    assert fake_github.calls_to("repos/get-collaborator-permission-level") == []
    assert fake_github.reactions == []
    for name in ("installation/suspend", "installation/deleted"):  # other installation changes make no labels job
        payload = load_payload(name)
        payload["installation"]["id"] = INSTALLATION
        payload.setdefault("repositories", [{"id": 12, "full_name": "Codertocat/Third"}])
        assert deliver(svc.client, "installation", payload).status_code == 202
    assert len(labels_jobs(svc)) == 2


def test_labels_there_already_are_left_and_a_repository_that_refuses_is_logged(start_service, fake_github, caplog):
    fake_github.labels[REPO] = [{"name": "AI-FIX:Plan", "color": "000000", "description": "ours"}]
    forbidden = {"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com"}
    fake_github.script("POST", r"/repos/Codertocat/Other/labels$", *[httpx.Response(403, json=forbidden)] * 5)
    svc = start_service()
    added = load_payload("installation_repositories/added")
    added["installation"]["id"] = INSTALLATION
    added["repositories_added"] = [
        {"id": 10, "node_id": "x", "name": "Hello-World", "full_name": REPO, "private": False},
        {"id": 11, "node_id": "y", "name": "Other", "full_name": "Codertocat/Other", "private": False},
    ]
    with caplog.at_level(logging.WARNING, logger="bot.queue.chores"):
        assert deliver(svc.client, "installation_repositories", added).status_code == 202
        jobs = {
            job.repo: settled(svc.store, job.id)
            for job in wait_until(lambda: len(labels_jobs(svc)) == 2 and labels_jobs(svc))
        }
    hello, other = jobs[REPO], jobs["Codertocat/Other"]
    assert hello.status == "done" and hello.reason.endswith("; 1 were there")
    assert fake_github.labels[REPO][0]["description"] == "ours"  # not replaced
    assert other.status == "done" and "refused: ai-fix (403 Resource not accessible by integration)" in other.reason
    assert "Codertocat/Other: GitHub refused to create the labels" in caplog.text
    assert fake_github.pending_scripts() == 0
