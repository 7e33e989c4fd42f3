"""Every work kind has its job and its typed state, by table; and the `ci` job on the fakes (the real worker and job
code, the fake GitHub with GitHub Actions, a bare repository): a failed workflow on an ai-fix pull request's head is
re-run once before any round."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import get_args

import pytest

from bot.job.kinds import JOBS
from bot.job.state import STATES
from bot.markers import PR_KIND, marker, replace_hidden_record
from bot.publish.models import ROUNDS_RECORD, RoundRecord
from bot.queue.models import CheckSignal
from bot.vocabulary import WORK_KINDS, WorkKind
from tests.support.fake_ci import CiGitHub, FakeJob
from tests.support.webhooks import REPO
from tests.support.worker import open_worker

BRANCH = "ai-fix/1-add-subtracts-instead-of-adding"


def test_every_work_kind_has_a_job_and_a_typed_state() -> None:
    assert set(JOBS) == set(WORK_KINDS) == set(get_args(WorkKind))
    assert set(STATES) == set(WORK_KINDS)


def test_a_ci_job_reruns_a_failed_workflow_once_before_any_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    issue = ("add() subtracts instead of adding", "## Acceptance criteria\n- `add(2, 3)` returns 5\n")
    with open_worker(tmp_path, monkeypatch, issues={1: issue}, github_kind=CiGitHub) as worker:
        subprocess.run(["git", f"--git-dir={worker.bare}", "branch", BRANCH, "main"], check=True)
        github = worker.github
        assert isinstance(github, CiGitHub)
        head = subprocess.run(
            ["git", f"--git-dir={worker.bare}", "rev-parse", BRANCH], capture_output=True, text=True, check=True
        ).stdout.strip()
        pushed = RoundRecord(n=1, kind="issue", outcome="accepted", reason="fixed", head_sha=head, base_sha=head)
        body = replace_hidden_record(ROUNDS_RECORD, f"{marker(PR_KIND, 1)}\nFixes #1", [pushed.model_dump(mode="json")])
        pull = github.new_pull(REPO, BRANCH, "main", "ai-fix: add()", body, False)
        github.refresh(REPO, pull)
        run = github.add_run(REPO, pull, "CI", [FakeJob("lint", "Run ruff check", "E501 line too long")])
        signal = CheckSignal(source="workflow_run", name="CI", conclusion="failure", run_id=run["id"])
        worker.enqueue(int(pull["number"]), kind="ci", head_sha=pull["head"]["sha"], checks=[signal], origin="github")
        worker.attempt()

        job = worker.job()
        assert job["status"] == "done", job["reason"]
        assert github.reruns == [run["id"]] and worker.model_api.bodies == [], "a re-run first, no model call"
