"""What ai-fix reads of a repository's CI (workflow runs, jobs, logs, check runs, annotations, statuses,
branch protection), plus re-running a workflow's failed jobs. Raw JSON out; `bot.ci` makes sense of it.
"""

from __future__ import annotations

import functools
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from bot.github.client import PER_PAGE, GitHubStatusError, RepoClient, calling
from bot.markdown import terminal_safe

MAX_LOG_BYTES = 4_000_000
"""A job's log is read up to this size (its last bytes: failures are at the end); larger logs are cut."""
MAX_LOG_READ = 2 << 30
"""Bytes of a log read at most, once decompressed (a log GitHub writes is far smaller; a gzip bomb is not)."""
LOG_SECONDS = 120.0
"""How long reading one log may take (a server trickling it in is left there)."""
INFLATE_STEP = 1 << 20
"""Bytes a compressed log is inflated by at a time."""
ACCEPTED = {"Accept-Encoding": "gzip, deflate"}
"""The encodings a log may come in: those `_inflated` inflates a step at a time."""
MAX_ERROR_BYTES = 4096
"""Bytes of an error answer's body read at most (its message is shown cut to 200 characters)."""
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

        GitHub answers with a redirect to a short-lived URL, or with the log itself; either way it is streamed
        (past githubkit's HTTP cache, which reads every body whole; the redirect's URL without the installation
        token) and only its tail is kept, so a log of any size costs a few MB of memory. At most MAX_LOG_READ
        bytes (once decompressed: a gzip bomb stops there) are read, for at most LOG_SECONDS (a log trickling in
        stops then); what was read is kept, with a line saying where it was cut. An error's body is read only
        as far as its message needs.
        """
        what = f"GET log of job {job_id}"
        path = f"/repos/{self.owner}/{self.name}/actions/jobs/{job_id}/logs"
        deadline = time.monotonic() + LOG_SECONDS
        config = self.core.config
        headers = {"User-Agent": config.user_agent, "Accept": config.accept, **ACCEPTED}
        with (
            httpx.Client(
                auth=self.core.auth.get_auth_flow(self.core),
                base_url=config.base_url,
                headers=headers,
                transport=config.transport,
                timeout=config.timeout,
            ) as api,
            api.stream("GET", path) as first,
        ):
            if first.status_code in (404, 410):  # logs past their retention, or deleted
                return ""
            location = first.headers.get("location") if first.is_redirect else None
            if location is None:  # served directly: streamed the same way
                return _tail(first, what, deadline)
        with (
            httpx.Client(
                headers=ACCEPTED, transport=config.transport, timeout=config.timeout, follow_redirects=True
            ) as plain,
            plain.stream("GET", location) as response,
        ):
            return _tail(response, what, deadline)

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


def _tail(response: httpx.Response, what: str, deadline: float) -> str:
    """The last MAX_LOG_BYTES of a response's body as text, read chunk by chunk up to MAX_LOG_READ bytes and the
    `deadline` (what was read then, and a line saying so); GitHubStatusError for an error status."""
    if response.status_code >= 400:
        start = b""
        for raw in response.iter_raw():  # as sent: a compressed error body is not inflated
            start += raw
            if len(start) >= MAX_ERROR_BYTES:
                break
        message = start[:200].decode("utf-8", "replace")
        raise GitHubStatusError(f"GitHub {what} answered {response.status_code}: {message!r}", response.status_code)
    kept, read, cut = bytearray(), 0, ""
    for chunk in _inflated(response, what):
        kept += chunk
        read += len(chunk)
        if len(kept) > 2 * MAX_LOG_BYTES:
            del kept[:-MAX_LOG_BYTES]
        if read >= MAX_LOG_READ:
            cut = f"after {MAX_LOG_READ >> 20} MiB"
        elif time.monotonic() > deadline:
            cut = f"after {LOG_SECONDS:.0f} s"
        if cut:
            break
    text = terminal_safe(bytes(kept[-MAX_LOG_BYTES:]).decode("utf-8", "replace"))
    return text + (f"\n[ai-fix: the log was read no further, {cut}]\n" if cut else "")


def _inflated(response: httpx.Response, what: str) -> Iterator[bytes]:
    """The body as sent, inflated (gzip or deflate, the encodings asked for) INFLATE_STEP bytes at a time: however
    much a compressed piece holds, no more than that is in memory at once."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        yield from response.iter_raw()
        return
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise GitHubStatusError(f"GitHub {what} answered in {encoding!r}, which ai-fix did not ask for", 415)
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or a zlib header
    try:
        for piece in response.iter_raw():
            while piece:
                yield inflate.decompress(piece, INFLATE_STEP)
                piece = inflate.unconsumed_tail
    except zlib.error as exc:
        raise GitHubStatusError(f"GitHub {what} answered with a body that does not inflate ({exc})", 502) from None
