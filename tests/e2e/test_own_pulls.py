"""A pull request is ai-fix's only when the App opened it from a branch of the repository: the real worker
(in-process) running the delivery pipeline against the fake GitHub, with a stranger's PR that copies ai-fix's
branch name and marker. And a job that fails on every attempt says so in the comment that said "in progress".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.markers import PR_KIND, PROGRESS_KIND, find_marker, marker
from bot.model.scripted import ScriptedModel
from bot.queue.models import MAX_ATTEMPTS
from bot.workspace.branch import branch_name
from tests.support.webhooks import REPO
from tests.support.worker import Worker, open_worker
from tests.support.world import FIX_SCRIPT

TITLE = "add() subtracts instead of adding"
BODY = (
    "## Goal\n`add(a, b)` returns the sum.\n\n## Acceptance criteria\n- `add(2, 3)` returns 5\n\n## Checks\n- tests\n"
)


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    with open_worker(tmp_path, monkeypatch, issues={7: (TITLE, BODY)}) as worker:
        worker.model_api.scripted = ScriptedModel(list(FIX_SCRIPT))
        worker.enqueue(7)
        yield worker


def progress_of(worker: Worker, number: int) -> str:
    [comment] = [c for c in worker.github.bot_comments(REPO, number) if find_marker(c["body"], PROGRESS_KIND)]
    return str(comment["body"])


def test_a_strangers_pr_on_the_issues_branch_is_left_alone_and_ai_fix_opens_its_own(worker: Worker) -> None:
    branch = branch_name(7, TITLE)
    theirs = worker.github.add_pull(
        REPO,
        8,
        f"{marker(PR_KIND, 7)}\nFixes #7 (copied from an ai-fix PR)",
        author="mallory",
        head_repo="mallory/Hello-World",
        head_ref=branch,
    )
    before = {key: theirs[key] for key in ("title", "body", "draft", "requested_reviewers")}

    worker.attempt()

    assert worker.job()["status"] == "done", worker.job()["reason"]
    [ours] = [p for p in worker.github.pulls_of(REPO) if p["number"] != 8]
    assert ours["user"]["login"] == worker.github.bot_login and ours["head"]["label"] == f"Codertocat:{branch}"
    assert {key: theirs[key] for key in before} == before
    assert (REPO, 8) not in worker.github.labels
    written = [c for c in worker.github.calls if "/pulls/8" in c.path or "/issues/8/" in c.path]
    assert [c.method for c in written if c.method != "GET"] == [], "nothing written to the stranger's PR"
    progress = progress_of(worker, 7)
    assert ours["html_url"] in progress and theirs["html_url"] not in progress


def test_a_job_that_fails_on_every_attempt_says_so_in_its_progress_comment(worker: Worker) -> None:
    refused = httpx.Response(403, json={"message": "Resource not accessible by integration"})
    worker.github.script("POST", r"/pulls$", *[refused for _ in range(MAX_ATTEMPTS)])
    for attempt in range(1, MAX_ATTEMPTS + 1):
        worker.attempt()
        if attempt < MAX_ATTEMPTS:
            assert worker.job()["status"] == "queued"
            assert "Failed" not in progress_of(worker, 7), "a retry is still coming"

    assert worker.job()["status"] == "failed"
    progress = progress_of(worker, 7)
    assert "💥 **Failed**" in progress and "⏳" not in progress
    assert f"Why: failed on all {MAX_ATTEMPTS} attempts; last error: GitHubStatusError: GitHub POST" in progress
    assert "Resource not accessible by integration" in progress
