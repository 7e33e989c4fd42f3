"""The service's HTTP app: POST /webhook (bot.intake.webhook), /healthz, /tasks, /metrics and the run viewer (/runs).

`create_app` takes every adapter as a parameter: the store, and the background services whose
life the app's lifespan owns (the worker pool), so tests and later subsystems swap them without patching.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol, get_args

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot.errors import StoreUnavailable
from bot.intake.body_budget import BodyBudget
from bot.intake.metrics import CiCounts, Metrics
from bot.intake.webhook import MAX_BODY, WebhookEndpoint, WebhookFirst
from bot.intake.writer import IntakeWriter
from bot.queue.health import BACKLOG_SECONDS, delivery_backlog, event_counts, job_counts, queue_figures
from bot.queue.models import Job
from bot.queue.store import Store
from bot.secrets import held_secrets
from bot.settings import Settings
from bot.viewer.links import admin_ok
from bot.viewer.pages import Pages
from bot.viewer.routes import run_routes
from bot.vocabulary import JobStatus

_TASK_ID = re.compile(r"[0-9]{1,18}")
"""A task id as the path gives it: ASCII digits only, within the database's 64-bit integers."""
_LIMIT = re.compile(r"[0-9]{1,4}")


class BackgroundService(Protocol):
    """Something the app starts with its lifespan and stops (blocking, in a thread) when it shuts down."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


def _task_json(job: Job, *, full: bool) -> dict[str, Any]:
    data = job.model_dump(exclude=None if full else {"snapshot", "state"})
    data["events"] = [e.model_dump() for e in job.events]
    return data


def _ci_counts(store: Store) -> CiCounts:
    """CI rounds by outcome and re-runs, counted from the events the `ci` jobs recorded."""
    return CiCounts(
        rounds=event_counts(store, "ci_round", "outcome"),
        reruns=sum(event_counts(store, "ci_rerun", "check").values()),
        flaky=sum(event_counts(store, "ci_flaky", "head").values()),
    )


def _authorized(request: Request) -> Response | None:
    """None when the request carries the admin token; else the answer (the endpoint off, or the token wanted)."""
    admin: str = request.app.state.admin
    if not admin:
        return JSONResponse({"error": "disabled: set AIFIX_ADMIN_TOKEN to enable this endpoint"}, status_code=404)
    if not admin_ok(request.headers.get("authorization", ""), admin):
        return JSONResponse({"error": "send Authorization: Bearer $AIFIX_ADMIN_TOKEN"}, status_code=401)
    return None


async def healthz(request: Request) -> Response:
    state = request.app.state
    await run_in_threadpool(state.writer.check_write)
    backlog = await run_in_threadpool(delivery_backlog, state.store)
    if backlog:
        error = (
            f"{backlog} stored deliveries are still not processed {BACKLOG_SECONDS:g} s after they arrived; "
            "the log says why"
        )
        return JSONResponse({"ok": False, "error": error}, status_code=503)
    return JSONResponse({"ok": True})


async def tasks(request: Request) -> Response:
    if (refused := _authorized(request)) is not None:
        return refused
    status = request.query_params.get("status") or None
    if status is not None and status not in get_args(JobStatus):
        return JSONResponse({"error": f"status must be one of {', '.join(get_args(JobStatus))}"}, status_code=400)
    limit_text = request.query_params.get("limit", "50")
    if not _LIMIT.fullmatch(limit_text) or not 1 <= int(limit_text) <= 1000:
        return JSONResponse({"error": "limit must be a number from 1 to 1000"}, status_code=400)
    jobs = await run_in_threadpool(request.app.state.store.jobs.newest, status, int(limit_text))
    return JSONResponse({"tasks": [_task_json(job, full=False) for job in jobs]})


async def task(request: Request) -> Response:
    if (refused := _authorized(request)) is not None:
        return refused
    task_id = request.path_params["task_id"]
    if not _TASK_ID.fullmatch(task_id):
        return JSONResponse({"error": "no such task"}, status_code=404)
    job = await run_in_threadpool(request.app.state.store.jobs.get, int(task_id))
    if job is None:
        return JSONResponse({"error": "no such task"}, status_code=404)
    return JSONResponse(_task_json(job, full=True))


async def metrics_endpoint(request: Request) -> Response:
    if (refused := _authorized(request)) is not None:
        return refused
    store = request.app.state.store
    jobs = await run_in_threadpool(job_counts, store)
    figures = await run_in_threadpool(queue_figures, store)
    ci = await run_in_threadpool(_ci_counts, store)
    return PlainTextResponse(
        request.app.state.metrics.render(jobs, figures, ci), media_type="text/plain; version=0.0.4"
    )


async def store_unavailable(request: Request, exc: Exception) -> Response:
    """The one answer to a job store that does not answer: 503, as a page for the run viewer, else as JSON."""
    if request.url.path.startswith("/runs"):
        page: Response = request.app.state.pages.message(request, 503, "The job store does not answer", str(exc))
        return page
    return JSONResponse({"ok": False, "error": str(exc)}, status_code=503)


def create_app(
    settings: Settings,
    *,
    store: Store,
    bot_login: str,
    services: Sequence[BackgroundService] = (),
    max_body: int = MAX_BODY,
    closing: threading.Event | None = None,
) -> Starlette:
    """The ASGI app. Without `services` it only takes deliveries in (no workers run in this process).

    `bot_login` is this App's bot user (`<slug>[bot]`, from GET /app): only its PRs are ai-fix PRs.
    `closing`: set by the server when it begins to shut down, so long-lived responses (the run viewer's
    event streams) end rather than hold up the drain.
    """
    admin = settings.admin_token.get_secret_value() if settings.admin_token else ""
    metrics = Metrics()
    writer = IntakeWriter(store)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(store.init_schema)
        writer.start()
        for service in services:
            service.start()
        try:
            yield
        finally:
            writer.stop()
            for service in services:
                await run_in_threadpool(service.stop)

    endpoint = WebhookEndpoint(
        settings,
        writer,
        metrics,
        bot_login=bot_login,
        budget=BodyBudget(settings.body_budget_mb << 20),
        max_body=max_body,
    )
    link_secret = settings.viewer_secret.get_secret_value() if settings.viewer_secret else ""
    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/tasks", tasks, methods=["GET"]),
            Route("/tasks/{task_id}", task, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
            *run_routes(
                store, admin_token=admin, link_secret=link_secret, secrets=held_secrets(settings), closing=closing
            ),
        ],
        middleware=[Middleware(WebhookFirst, endpoint=endpoint)],
        exception_handlers={StoreUnavailable: store_unavailable},
        lifespan=lifespan,
    )
    app.state.store, app.state.writer, app.state.metrics, app.state.admin = store, writer, metrics, admin
    app.state.pages = Pages()
    return app
