"""The viewer's HTTP endpoints: `GET /runs`, `GET /runs/{job_id}` and its event stream in the service; `/` locally.

In the service a page opens with a signed link (`?exp=&sig=`, made by `links.run_url`) or the admin
token (`Authorization: Bearer`, or Basic with the token as password so a browser can log in); a wrong
or expired signature is answered 403. What a page shows comes from the job's redacted trace (redacted
once more with the secrets this process holds); the store only says where the trace is and the job's
repository, number and status.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from bot.job.state import job_trace
from bot.queue.models import Job
from bot.queue.store import Store
from bot.viewer.links import admin_ok, check_link
from bot.viewer.pages import Pages, page_headers
from bot.viewer.stream import Follow, RunSource, follow
from bot.viewer.tracefile import Record, TraceReader
from bot.viewer.view import build_view
from bot.vocabulary import FINAL_STATUSES, JobStatus

STREAM_HEADERS = {**page_headers(), "X-Accel-Buffering": "no"}
"""Proxies must not buffer the event stream."""

MAX_JOB_ID = 2**63 - 1
"""The largest job id a store can hold."""


class JobSource:
    """A job in the store: its trace is beside its current job directory."""

    def __init__(self, store: Store, job: Job) -> None:
        self.store, self.job = store, job

    def refresh(self) -> None:
        self.job = self.store.jobs.get(self.job.id) or self.job

    def trace_path(self) -> Path | None:
        return job_trace(self.job.kind, self.job.state)

    def finished(self, ended: bool) -> bool:
        """Once the job has left `running`: its status, and a trace that will not grow (the delivery follows the end record)."""
        return self.job.status in FINAL_STATUSES

    def meta(self) -> dict[str, Any]:
        j = self.job
        facts = [("job", str(j.id)), ("repository", f"{j.repo}#{j.number}"), ("kind", j.kind), ("job status", j.status)]
        return {"title": f"{j.repo}#{j.number}", "facts": facts}


@dataclass(frozen=True)
class FileSource:
    """A trace file named on the command line (`ai-fix view`)."""

    path: Path

    def refresh(self) -> None:
        return None

    def trace_path(self) -> Path | None:
        return self.path

    def finished(self, ended: bool) -> bool:
        return ended

    def meta(self) -> dict[str, Any]:
        return {"title": self.path.name, "facts": [("trace", str(self.path))]}


def read_records(path: Path | None, secrets: Sequence[str]) -> list[Record]:
    return TraceReader(path, secrets).read() if path else []


def stream_start(request: Request) -> int:
    """How many records the client's page shows: the browser's Last-Event-ID on a reconnect, else `from`."""
    given = request.headers.get("last-event-id") or request.query_params.get("from", "0")
    return int(given) if given.isdigit() else 0


class Viewer:
    """The pages of one process; `secrets` are removed once more from everything read from a trace."""

    def __init__(self, secrets: Sequence[str], closing: threading.Event | None = None) -> None:
        self.secrets = list(secrets)
        self.pages = Pages()
        self.closing = closing

    async def page(self, request: Request, source: RunSource, events_path: str) -> Response:
        await run_in_threadpool(source.refresh)
        view = await run_in_threadpool(lambda: build_view(read_records(source.trace_path(), self.secrets)))
        finished = source.finished(view.end is not None)
        query = {k: v for k, v in request.query_params.items() if k in ("exp", "sig")}
        query["from"] = str(view.records)
        context = {
            "view": view,
            "meta": source.meta(),
            "events_url": "" if finished else f"{events_path}?{urllib.parse.urlencode(query)}",
        }
        return self.pages.page(request, "run.html", context)

    def events(self, request: Request, source: RunSource) -> Response:
        stream = follow(Follow(source, self.pages, self.secrets), stream_start(request), closing=self.closing)
        return StreamingResponse(stream, media_type="text/event-stream", headers=STREAM_HEADERS)


class RunRoutes:
    """`/runs` (admin only) and `/runs/{job_id}` with its `/events`, for the service's app; each request is let in by
    the admin token or a signed link, else answered with why not."""

    def __init__(
        self,
        store: Store,
        *,
        admin_token: str,
        link_secret: str,
        secrets: Sequence[str],
        closing: threading.Event | None,
        clock: Callable[[], float],
    ) -> None:
        self.store, self.admin_token, self.link_secret, self.clock = store, admin_token, link_secret, clock
        self.viewer = Viewer(secrets, closing)
        self.pages = self.viewer.pages

    def routes(self) -> list[Route]:
        return [
            Route("/runs", self.run_list, methods=["GET"]),
            Route("/runs/{job_id:int}", self.run_page, methods=["GET"]),
            Route("/runs/{job_id:int}/events", self.run_events, methods=["GET"]),
        ]

    def refused(self, request: Request, job_id: int | None, store_id: str = "") -> Response | None:
        """None when the request may see job `job_id` of the database `store_id` (None: the list), else the answer
        saying why not."""
        pages = self.pages
        if not self.admin_token and not self.link_secret:
            message = "The run viewer is disabled: set AIFIX_VIEWER_SECRET (signed links) or AIFIX_ADMIN_TOKEN."
            return pages.message(request, 404, "Run viewer disabled", message)
        if admin_ok(request.headers.get("authorization", ""), self.admin_token):
            return None
        q = request.query_params
        if job_id is not None and ("sig" in q or "exp" in q):
            verdict = check_link(self.link_secret, store_id, job_id, q.get("exp", ""), q.get("sig", ""), self.clock())
            if verdict == "ok":
                return None
            return pages.message(
                request, 403, "This link does not open the run", link_problem(verdict, q.get("exp", ""))
            )
        if self.admin_token:
            message = "Log in with the admin token (AIFIX_ADMIN_TOKEN) as the password, or open the signed link from the pull request."
            return pages.message(
                request, 401, "Log in to see runs", message, **{"WWW-Authenticate": 'Basic realm="ai-fix runs"'}
            )
        return pages.message(
            request,
            403,
            "This page needs a signed link",
            "Open the link from the pull request, the check run or the issue comment.",
        )

    async def job_or_answer(self, request: Request) -> Job | Response:
        job_id = int(request.path_params["job_id"])
        store_id = await run_in_threadpool(self.store.identity)  # StoreUnavailable: the app's one 503
        if (answer := self.refused(request, job_id, store_id)) is not None:
            return answer
        missing = self.pages.message(request, 404, "No such run", f"There is no job {job_id}.")
        if job_id > MAX_JOB_ID:  # no store holds it (SQLite's and PostgreSQL's integers are 64-bit)
            return missing
        job = await run_in_threadpool(self.store.jobs.get, job_id)
        return job if job is not None else missing

    async def run_page(self, request: Request) -> Response:
        job = await self.job_or_answer(request)
        if isinstance(job, Response):
            return job
        return await self.viewer.page(request, JobSource(self.store, job), f"{job.id}/events")

    async def run_events(self, request: Request) -> Response:
        job = await self.job_or_answer(request)
        if isinstance(job, Response):
            return job
        return self.viewer.events(request, JobSource(self.store, job))

    async def run_list(self, request: Request) -> Response:
        if (answer := self.refused(request, None)) is not None:
            return answer
        q, pages = request.query_params, self.pages
        status, repo = q.get("status") or None, (q.get("repo") or "").strip() or None
        statuses = get_args(JobStatus)
        if status is not None and status not in statuses:
            return pages.message(request, 400, "Unknown status", f"status must be one of {', '.join(statuses)}.")
        limit = q.get("limit", "100")
        if not limit.isdigit() or not 1 <= int(limit) <= 1000:
            return pages.message(request, 400, "Bad limit", "limit must be a number from 1 to 1000.")
        jobs = await run_in_threadpool(self.store.jobs.newest, status, int(limit), repo)
        context = {"jobs": jobs, "repo": repo or "", "status": status or "", "statuses": statuses}
        return pages.page(request, "runs.html", context)


def run_routes(
    store: Store,
    *,
    admin_token: str,
    link_secret: str,
    secrets: Sequence[str],
    closing: threading.Event | None = None,
    clock: Callable[[], float] = time.time,
) -> list[Route]:
    """The run viewer's routes for the service's app (`closing` is set when the server begins to shut down: open
    event streams end then)."""
    routes = RunRoutes(
        store, admin_token=admin_token, link_secret=link_secret, secrets=secrets, closing=closing, clock=clock
    )
    return routes.routes()


def link_problem(verdict: str, exp: str) -> str:
    if verdict == "expired":
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(int(exp)))
        return (
            f"This link expired on {when}. A new round of the job (`/agent retry`) posts a fresh link; "
            "an operator can open the run with the admin token."
        )
    if verdict == "disabled":
        return "Signed links are disabled on this server (AIFIX_VIEWER_SECRET is not set); use the admin token."
    return (
        "The link's signature does not match this run of this server's job store. Open the link exactly as it was "
        "posted on GitHub; a link made before the job store was replaced opens nothing now (a new round posts a "
        "fresh one, and an operator can open the run with the admin token)."
    )


def local_app(path: Path, secrets: Sequence[str]) -> Starlette:
    """`ai-fix view`: the page of one trace file at `/`, with its event stream, for a run on this machine."""
    viewer = Viewer(secrets)
    source = FileSource(path)

    async def page(request: Request) -> Response:
        return await viewer.page(request, source, "events")

    async def events(request: Request) -> Response:
        return viewer.events(request, source)

    return Starlette(routes=[Route("/", page, methods=["GET"]), Route("/events", events, methods=["GET"])])
