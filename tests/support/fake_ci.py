"""The fake GitHub with the project's own CI: workflow runs, their jobs and logs, re-runs, annotations, commit
statuses, branch protection, and `mergeable` on pull requests computed by real git from the repository on disk.

Every REST request is still checked by `FakeGitHub` against the OpenAPI operations. A job's log is served
the way GitHub serves it: `actions/download-job-logs-for-workflow-run` answers 302 to a short-lived URL on
another host (`localhost` for a fake on `127.0.0.1`), which is not a REST operation; this fake answers it
itself and counts a violation when the installation token reaches it.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import respx

from tests.support.fake_github import Call, load_payload
from tests.support.fake_pulls import PullsGitHub

LOG_PATH = "/_signed-logs/"


@dataclass
class FakeJob:
    """One job of a workflow run: its name, the step that fails (None: it passes) and its log."""

    name: str
    failing_step: str | None = None
    log: str = ""


class CiGitHub(PullsGitHub):
    """PullsGitHub plus GitHub Actions, commit statuses, branch protection and `mergeable`."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.runs: dict[int, dict[str, Any]] = {}
        self.jobs: dict[int, list[dict[str, Any]]] = {}
        self.logs: dict[int, str] = {}
        self.statuses: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.required: dict[tuple[str, str], list[str]] = {}
        """(repo, branch) -> the checks its protection requires (none: the branch is not protected)."""
        self.computing: dict[tuple[str, int], int] = {}
        """(repo, PR number) -> how many more reads answer `mergeable: null` (GitHub still computing it)."""
        self.reruns: list[int] = []
        self.rerun_refusal: str | None = None
        """When set, a re-run is answered 403 with this message (the App without `actions: write`)."""
        self.log_reads: list[int] = []
        self._run_ids = itertools.count(30_000_001)
        for op_id, handler in {
            "actions/list-workflow-runs-for-repo": self._list_runs,
            "actions/list-jobs-for-workflow-run": self._list_jobs,
            "actions/download-job-logs-for-workflow-run": self._log_redirect,
            "actions/re-run-workflow-failed-jobs": self._rerun,
            "checks/list-annotations": lambda call: httpx.Response(200, json=[]),
            "repos/get-combined-status-for-ref": self._combined,
            "repos/get-branch": self._branch,
            "pulls/get": self._get_pull_live,
            "pulls/list": self._list_pulls_live,
        }.items():
            self.on(op_id, handler)

    # -- set-up helpers ---------------------------------------------------------------------------

    @property
    def log_base(self) -> str:
        url = httpx.URL(self.served_at or self.base_url)
        host = "localhost" if url.host == "127.0.0.1" else f"logs.{url.host}"
        return str(url.copy_with(host=host, path=LOG_PATH))

    def add_run(self, repo: str, pull: dict[str, Any], name: str, jobs: list[FakeJob]) -> dict[str, Any]:
        """A completed workflow run on the pull request's head, as GitHub keeps it (failed when a job fails)."""
        example = self._example("actions/list-workflow-runs-for-repo", "200")["workflow_runs"][0]
        run_id = next(self._run_ids)
        example.update(
            id=run_id,
            name=name,
            head_sha=pull["head"]["sha"],
            head_branch=pull["head"]["ref"],
            event="pull_request",
            run_attempt=1,
            check_suite_id=run_id + 1,
            html_url=f"https://github.com/{repo}/actions/runs/{run_id}",
            pull_requests=[],
        )
        example["repo"] = repo
        self.runs[run_id] = example
        self.complete(run_id, jobs)
        return example

    def complete(self, run_id: int, jobs: list[FakeJob]) -> dict[str, Any]:
        """The run's (latest attempt's) jobs finished as `jobs` say."""
        run = self.runs[run_id]
        made = []
        for job in jobs:
            data = self._example("actions/list-jobs-for-workflow-run", "200")["jobs"][0]
            job_id = next(self._ids)
            failed = job.failing_step is not None
            steps = [{**data["steps"][0], "name": "Set up job", "number": 1}]
            steps.append(
                {
                    **data["steps"][0],
                    "name": job.failing_step or "Run tests",
                    "number": 2,
                    "conclusion": "failure" if failed else "success",
                }
            )
            data.update(
                id=job_id,
                run_id=run_id,
                name=job.name,
                head_sha=run["head_sha"],
                run_attempt=run["run_attempt"],
                status="completed",
                conclusion="failure" if failed else "success",
                steps=steps,
                created_at=data.get("created_at") or data["started_at"],
                check_run_url=f"{self.base_url}repos/{run['repo']}/check-runs/{job_id}",
            )
            self.logs[job_id] = job.log
            made.append(data)
        self.jobs[run_id] = made
        run.update(status="completed", conclusion="failure" if any(j.failing_step for j in jobs) else "success")
        return run

    def workflow_run_payload(self, run_id: int, pull: dict[str, Any]) -> dict[str, Any]:
        """The `workflow_run.completed` delivery for the run, naming its pull request as GitHub does."""
        run = self.runs[run_id]
        payload = copy.deepcopy(load_payload("workflow_run/completed.with-pull-requests"))
        payload["repository"] = copy.deepcopy(load_payload("issues/labeled")["repository"])  # Codertocat/Hello-World
        assert payload["repository"]["full_name"] == run["repo"], "the fixtures' repository is the only one"
        pr = {
            "url": pull["url"],
            "id": pull["id"],
            "number": pull["number"],
            "head": {"ref": pull["head"]["ref"], "sha": pull["head"]["sha"], "repo": payload["repository"]},
            "base": {"ref": pull["base"]["ref"], "sha": pull["base"]["sha"], "repo": payload["repository"]},
        }
        payload["workflow_run"].update({k: run[k] for k in ("id", "name", "head_sha", "head_branch", "run_attempt")})
        payload["workflow_run"].update(status=run["status"], conclusion=run["conclusion"], pull_requests=[pr])
        payload["workflow"]["name"] = run["name"]
        return payload

    # -- transports -------------------------------------------------------------------------------

    @contextmanager
    def mock(self) -> Iterator[respx.MockRouter]:
        with super().mock() as router:
            router.route(host=httpx.URL(self.log_base).host).mock(side_effect=self.handle)
            yield router

    def _handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith(LOG_PATH):
            if request.headers.get("authorization"):
                return self._violation("the signed log URL was sent the installation token")
            job_id = int(request.url.path.removeprefix(LOG_PATH))
            self.log_reads.append(job_id)
            return httpx.Response(200, text=self.logs.get(job_id, ""), headers={"content-type": "text/plain"})
        return super()._handle(request)

    # -- operations -------------------------------------------------------------------------------

    def _list_runs(self, call: Call) -> httpx.Response:
        repo, sha = self._repo(call), call.query.get("head_sha")
        found = [
            {k: v for k, v in r.items() if k != "repo"}
            for r in self.runs.values()
            if r["repo"] == repo and (sha is None or r["head_sha"] == sha)
        ]
        per_page, page = int(call.query.get("per_page", 30)), int(call.query.get("page", 1))
        return httpx.Response(
            200, json={"total_count": len(found), "workflow_runs": found[(page - 1) * per_page : page * per_page]}
        )

    def _list_jobs(self, call: Call) -> httpx.Response:
        jobs = self.jobs.get(int(call.params["run_id"]), [])
        return httpx.Response(200, json={"total_count": len(jobs), "jobs": jobs})

    def _log_redirect(self, call: Call) -> httpx.Response:
        job_id = int(call.params["job_id"])
        if job_id not in self.logs:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(302, headers={"location": f"{self.log_base}{job_id}"})

    def _rerun(self, call: Call) -> httpx.Response:
        run = self.runs.get(int(call.params["run_id"]))
        if run is None or run["repo"] != self._repo(call):
            return httpx.Response(404, json={"message": "Not Found"})
        if self.rerun_refusal is not None:
            return httpx.Response(403, json={"message": self.rerun_refusal})
        if run["status"] != "completed" or run["conclusion"] == "success":
            return httpx.Response(403, json={"message": "This workflow run has no failed jobs to re-run"})
        self.reruns.append(run["id"])
        run.update(status="queued", conclusion=None, run_attempt=run["run_attempt"] + 1)
        return httpx.Response(201, json={})

    def _combined(self, call: Call) -> httpx.Response:
        body = self._example(call.op_id, "200")
        statuses = self.statuses.get((self._repo(call), call.params["ref"]), [])
        states = {s["state"] for s in statuses}
        state = "failure" if states & {"failure", "error"} else "pending" if "pending" in states else "success"
        body.update(state=state, statuses=statuses, sha=call.params["ref"], total_count=len(statuses))
        return httpx.Response(200, json=body)

    def _branch(self, call: Call) -> httpx.Response:
        body = self._example(call.op_id, "200")
        required = self.required.get((self._repo(call), call.params["branch"]))
        body.update(name=call.params["branch"], protected=bool(required))
        body["protection"]["required_status_checks"].update(contexts=required or [], checks=[])
        return httpx.Response(200, json=body)

    def _get_pull_live(self, call: Call) -> httpx.Response:
        """The pull request with its head and base as the repository on disk has them, and `mergeable`."""
        key = (self._repo(call), int(call.params["pull_number"]))
        pull = self.pulls.get(key)
        if pull is None:
            return httpx.Response(404, json={"message": "Not Found"})
        self.refresh(key[0], pull)
        if self.computing.get(key, 0) > 0:
            self.computing[key] -= 1
            return httpx.Response(200, json={**pull, "mergeable": None, "mergeable_state": "unknown"})
        return httpx.Response(200, json=pull)

    def _list_pulls_live(self, call: Call) -> httpx.Response:
        for pull in self.pulls_of(self._repo(call)):
            self.refresh(self._repo(call), pull)
        listed = self._list_pulls(call)
        base = call.query.get("base")
        return httpx.Response(200, json=[p for p in listed.json() if base is None or p["base"]["ref"] == base])

    def refresh(self, repo: str, pull: dict[str, Any]) -> None:
        """Head and base from the branches on disk; `mergeable` from `git merge-tree` (what GitHub computes)."""
        if repo not in self.git_dirs:
            return
        for side in ("head", "base"):
            sha = self._git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{pull[side]['ref']}").stdout
            if sha.strip():
                pull[side]["sha"] = sha.decode().strip()
        merged = self._git(repo, "merge-tree", "--write-tree", pull["base"]["sha"], pull["head"]["sha"])
        pull.update(mergeable=merged.returncode == 0, mergeable_state="clean" if merged.returncode == 0 else "dirty")
