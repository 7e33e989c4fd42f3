"""What ai-fix reads of a repository's CI (workflow runs, jobs, logs, check runs, annotations, statuses,
branch protection), plus re-running a workflow's failed jobs. Raw JSON out; `bot.ci` makes sense of it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import httpx

from bot.github.client import PER_PAGE, GitHubStatusError, RepoClient, calling
from bot.markdown import terminal_safe

MAX_LOG_BYTES = 4_000_000
"""A job's log is read up to this size (its last bytes: failures are at the end); larger logs are cut."""
MAX_PAGES = 10


class CiApi:
    """One repository's CI through the job's installation client (calls retried by the client's policy)."""

    def __init__(self, client: RepoClient) -> None:
        self.client = client
        self.gh = client.rest.rest
        self.core = client.rest
        self.owner, self.name = client.owner, client.name

    def _json(self, what: str, call: Callable[[], Any]) -> Any:
        with calling(what):
            return call().json()

    def _listed(self, what: str, key: str, call: Callable[[int], Any]) -> list[dict[str, Any]]:
        """Every item of a paged listing whose answer keeps them under `key` (up to MAX_PAGES pages)."""
        items: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            data = self._json(what, functools.partial(call, page))
            batch = data.get(key, []) if isinstance(data, dict) else data
            items.extend(batch)
            if len(batch) < PER_PAGE:
                break
        return items

    def workflow_runs(self, head_sha: str) -> list[dict[str, Any]]:
        """The GitHub Actions workflow runs of a commit (their latest attempts)."""
        return self._listed(
            f"GET workflow runs of {head_sha[:12]}",
            "workflow_runs",
            lambda page: self.gh.actions.list_workflow_runs_for_repo(
                self.owner, self.name, head_sha=head_sha, per_page=PER_PAGE, page=page
            ),
        )

    def jobs(self, run_id: int) -> list[dict[str, Any]]:
        """The jobs of a workflow run's latest attempt, with their steps."""
        return self._listed(
            f"GET jobs of workflow run {run_id}",
            "jobs",
            lambda page: self.gh.actions.list_jobs_for_workflow_run(
                self.owner, self.name, run_id, filter_="latest", per_page=PER_PAGE, page=page
            ),
        )

    def job_log(self, job_id: int) -> str:
        """The last MAX_LOG_BYTES of a job's plain-text log; "" when gone.

        GitHub answers with a redirect to a short-lived URL; the log is streamed from there (without the
        installation token) and only its tail is kept, so a log of any size costs a few MB of memory.
        """
        what = f"GET log of job {job_id}"
        path = f"/repos/{self.owner}/{self.name}/actions/jobs/{job_id}/logs"
        with self.core.get_sync_client() as client:
            first = client.send(client.build_request("GET", path), follow_redirects=False, stream=True)
            try:
                if first.status_code in (404, 410):  # logs past their retention, or deleted
                    return ""
                location = first.headers.get("location") if first.is_redirect else None
                if location is None:  # served directly: streamed the same way
                    return terminal_safe(_tail(first, what).decode("utf-8", "replace"))
            finally:
                first.close()
        config = self.core.config
        with httpx.Client(transport=config.transport, timeout=config.timeout, follow_redirects=True) as plain:
            with plain.stream("GET", location) as response:
                return terminal_safe(_tail(response, what).decode("utf-8", "replace"))

    def rerun_failed_jobs(self, run_id: int) -> None:
        """Re-run a workflow run's failed jobs and those that depend on them (needs `actions: write`)."""
        self._json(
            f"POST re-run of the failed jobs of workflow run {run_id}",
            lambda: self.gh.actions.re_run_workflow_failed_jobs(self.owner, self.name, run_id),
        )

    def check_runs(self, ref: str) -> list[dict[str, Any]]:
        """Every check run on a commit (each app's latest), ai-fix's own included."""
        return self._listed(
            f"GET check runs of {ref[:12]}",
            "check_runs",
            lambda page: self.gh.checks.list_for_ref(self.owner, self.name, ref, per_page=PER_PAGE, page=page),
        )

    def annotations(self, check_run_id: int) -> list[dict[str, Any]]:
        return self._listed(
            f"GET annotations of check run {check_run_id}",
            "",
            lambda page: self.gh.checks.list_annotations(
                self.owner, self.name, check_run_id, per_page=PER_PAGE, page=page
            ),
        )

    def combined_status(self, ref: str) -> dict[str, Any]:
        """The commit statuses of a commit (each context's latest) and their combined state."""
        data = self._json(
            f"GET combined status of {ref[:12]}",
            lambda: self.gh.repos.get_combined_status_for_ref(self.owner, self.name, ref, per_page=PER_PAGE),
        )
        return data if isinstance(data, dict) else {}

    def required_checks(self, branch: str) -> list[str] | None:
        """The check and status names the branch's protection requires; None when it requires none (or is unprotected)."""
        data = self._json(f"GET branch {branch}", lambda: self.gh.repos.get_branch(self.owner, self.name, branch))
        required = ((data.get("protection") or {}).get("required_status_checks") or {}) if data.get("protected") else {}
        names = list(required.get("contexts") or []) + [c.get("context", "") for c in required.get("checks") or []]
        return sorted({n for n in names if n}) or None

    def open_pulls(self, base: str | None = None) -> list[dict[str, Any]]:
        """The open pull requests (into `base`, when given)."""

        def listing(page: int) -> Any:
            if base:
                return self.gh.pulls.list(self.owner, self.name, state="open", base=base, per_page=PER_PAGE, page=page)
            return self.gh.pulls.list(self.owner, self.name, state="open", per_page=PER_PAGE, page=page)

        return self._listed(f"GET open pull requests{f' into {base}' if base else ''}", "", listing)


def _tail(response: httpx.Response, what: str) -> bytes:
    """The last MAX_LOG_BYTES of a response's body, read chunk by chunk; GitHubStatusError for an error status."""
    if response.status_code >= 400:
        response.read()
        raise GitHubStatusError(
            f"GitHub {what} answered {response.status_code}: {response.text[:200]!r}", response.status_code
        )
    kept = bytearray()
    for chunk in response.iter_bytes():
        kept += chunk
        if len(kept) > 2 * MAX_LOG_BYTES:
            del kept[:-MAX_LOG_BYTES]
    return bytes(kept[-MAX_LOG_BYTES:])
