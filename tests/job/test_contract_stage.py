"""A job of kind `issue` through the real service (webhook → queue → worker → ContractStage) against the fake GitHub."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from bot.job.checkpoint import Checkpoint
from bot.job.contract_stage import ContractDecision, ContractStage
from bot.markers import PROGRESS_KIND, marker
from bot.queue.models import Job
from bot.queue.pipeline import JobContext, JobOutcome
from bot.snapshot import Snapshot
from bot.vocabulary import FINAL_STATUSES
from tests.support.fake_github import FakeGitHub
from tests.support.github_files import serve_files
from tests.support.pipelines import ContractOnly, issue_comment
from tests.support.service import Service
from tests.support.webhooks import REPO, deliver, labeled


def run_job(svc: Service) -> Job:
    payload = labeled()
    issue = svc.fake.issues[(REPO, 1)]
    payload["issue"].update(title=issue["title"], body=issue["body"])  # labelled as it reads on GitHub now
    response = deliver(svc.client, "issues", payload)
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        job = svc.store.jobs.get(job_id)
        if job.status in FINAL_STATUSES:
            return job
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} did not finish: {svc.store.jobs.get(job_id)}")


def test_issue_job_asks_for_clarification_then_posts_the_contract_in_the_same_comment(
    start_service: Callable[..., Service], fake_github: FakeGitHub
) -> None:
    refs = serve_files(
        fake_github,
        REPO,
        {"pyproject.toml": "[tool.pytest.ini_options]\n", "AGENTS.md": "Keep it small."},
        branch="master",
    )
    fake_github.keeps_comments = True
    svc = start_service(pipeline=ContractOnly())

    vague = run_job(svc)  # the fixture issue: "It looks like you accidently spelled 'commit' with two 't's."
    assert vague.status == "needs_clarification"
    assert vague.reason.startswith("acceptance criteria or reproducible evidence")
    [(repo, number, first)] = fake_github.created_comments
    assert (repo, number) == (REPO, 1)
    assert first.startswith(marker(PROGRESS_KIND, 1)) and "ai-fix needs more before it starts" in first
    assert set(refs) == {"master"}  # the default branch of the payload's repository, nothing else

    fake_github.issues[(REPO, 1)]["body"] = "## Acceptance criteria\n- README says `commit`\n\n## Scope\n- README.md"
    ready = run_job(svc)
    assert ready.status == "done"
    assert len(fake_github.created_comments) == 1  # no comment spam: the same comment was edited
    [(_, second)] = fake_github.edited_comments
    assert second.startswith(marker(PROGRESS_KIND, 1)) and "#### ai-fix: what I am going to do" in second
    assert "README says `commit`" in second and "may change `README.md`" in second
    assert ready.state["contract"]["status"] == "ready"
    assert ready.state["contract"]["conventions"]["files"] == {"AGENTS.md": "Keep it small."}
    assert [e.data["status"] for e in ready.events if e.event == "contract"] == ["ready"]


def test_broken_config_is_posted_on_the_issue_and_fails_the_job(
    start_service: Callable[..., Service], fake_github: FakeGitHub
) -> None:
    serve_files(fake_github, REPO, {".github/ai-fix.yml": "checks:\n  - name: t\n    rn: pytest\n"}, branch="master")
    fake_github.keeps_comments = True
    svc = start_service(pipeline=ContractOnly())
    job = run_job(svc)
    assert job.status == "failed"
    assert "line 3: checks[0].rn: unknown key" in job.reason
    [(_, _, body)] = fake_github.created_comments
    assert "ai-fix cannot read `.github/ai-fix.yml`" in body and "line 3: checks[0].rn: unknown key" in body


class CrashesOnceAfterTheContract:
    """A pipeline whose later stage fails on the first attempt; the worker retries the job."""

    def __init__(self, files: dict[str, str]) -> None:
        self.stage = ContractStage()
        self.decisions: list[ContractDecision] = []
        self.files = files

    def run(self, snapshot: Snapshot, ctx: JobContext) -> JobOutcome:
        decision = self.stage.prepare(snapshot, Checkpoint(ctx), issue_comment(snapshot, ctx))
        self.decisions.append(decision)
        if len(self.decisions) == 1:
            self.files["AGENTS.md"] = "changed on the default branch between attempts"
            raise RuntimeError("the execution loop crashed")
        return decision.outcome() or JobOutcome(status="done", reason="worked")


def test_a_resumed_attempt_keeps_the_contract_it_started_with(
    start_service: Callable[..., Service], fake_github: FakeGitHub
) -> None:
    pipeline = CrashesOnceAfterTheContract({"pyproject.toml": "[tool.pytest.ini_options]\n"})
    serve_files(fake_github, REPO, pipeline.files, branch="master")
    fake_github.keeps_comments = True
    fake_github.issues[(REPO, 1)]["body"] = "## Acceptance criteria\n- README says `commit`"
    svc = start_service(pipeline=pipeline)
    job = run_job(svc)
    assert job.status == "done" and job.attempts == 2
    first, second = pipeline.decisions
    assert second.contract == first.contract and second.contract is not None
    assert second.contract.conventions.files == {}
    assert second.comment_url == first.comment_url
    assert len(fake_github.created_comments) == 1


def test_the_contract_comment_is_redacted_and_quotes_the_issue_inertly(
    start_service: Callable[..., Service], fake_github: FakeGitHub
) -> None:
    canary = "canary-contract-5d1f0b27"
    serve_files(fake_github, REPO, {"pyproject.toml": "[tool.pytest.ini_options]\n"}, branch="master")
    fake_github.keeps_comments = True
    fake_github.issues[(REPO, 1)]["body"] = (
        f"## Goal\nParse empty files (my key {canary} leaked here), cc @octocat\n"
        f"![x](https://evil.example/pixel.png?k={canary}) and [docs](https://evil.example/docs)\n\n"
        "## Acceptance criteria\n- `parse('')` is `[]`; fixes #2; see https://evil.example/a.png\n"
    )
    svc = start_service(pipeline=ContractOnly(), anthropic_api_key=canary)
    job = run_job(svc)
    assert job.status == "done"
    [(_, _, body)] = fake_github.created_comments
    assert "#### ai-fix: what I am going to do" in body and "Parse empty files" in body
    assert canary not in body and canary[3:15] not in body
    assert not any(canary[3:15] in json.dumps(c.json) for c in fake_github.calls if c.json)
    # The issue's image, links, mention and closing keyword are shown, not followed or acted on.
    assert "](" not in body and "`https://evil.example/a.png`" in body
    assert "`@octocat`" in body and "`fixes` `#2`" in body
    assert "`parse('')` is `[]`" in body
