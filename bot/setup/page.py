"""Setup mode's HTTP app: the page that registers the GitHub App from app.yml through GitHub's manifest flow.

`GET /` shows what will be registered; `POST /setup/register` makes a random `state`, kept here for the hour
GitHub allows, and sends the browser to GitHub's form with the manifest; GitHub sends it back to
`GET /setup/callback?code=…&state=…`, where a state this page did not make (or made over an hour ago, or
used already) is refused before the code is exchanged. The App's credentials go to the settings file and
nowhere else: no page shows them and no log line names them. Then `activate` (given by `ai-fix serve`)
starts the service proper with them.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from bot.errors import AiFixError
from bot.github.manifest import NewApp, convert_code, form_url, web_and_api
from bot.setup.envfile import refusal, write_settings
from bot.setup.manifest import NAME_LIMIT, AppManifest

log = logging.getLogger(__name__)

STATE_SECONDS = 3600.0
"""GitHub's limit on the whole flow; a state older than this is refused."""
MAX_PENDING = 64
"""States kept at most (the oldest goes first): a page reloaded many times cannot grow them without end."""
MAX_FORM = 16 * 1024
ORGANIZATION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
LOOPBACK = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|\[?::1\]?|0\.0\.0\.0)$")
DEFAULT_API = "https://api.github.com"


@dataclass(frozen=True)
class SetupConfig:
    manifest: AppManifest
    api_url: str
    """AIFIX_GITHUB_API_URL."""
    public_url: str | None
    settings_file: Path
    force: bool = False
    """`ai-fix serve --force`: replace an existing settings file."""
    trigger_label: str = "ai-fix"
    notes: tuple[str, ...] = ()
    """What the service will still lack once the App exists (a model key), said before registering."""


@dataclass(frozen=True)
class Pending:
    web: str
    api: str
    at: float


@dataclass
class Progress:
    pending: dict[str, Pending] = field(default_factory=dict)
    app: NewApp | None = None
    start_error: str = ""


def _environment() -> Environment:
    return Environment(
        # The setup page's own templates, then the run viewer's, whose frame and style they extend.
        loader=ChoiceLoader([PackageLoader("bot.setup", "templates"), PackageLoader("bot.viewer", "templates")]),
        autoescape=select_autoescape(["html"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def webhook_notes(webhook_url: str) -> list[str]:
    """What stops GitHub from delivering to `webhook_url`, in words; none when nothing does."""
    host = urlsplit(webhook_url).hostname or ""
    if LOOPBACK.match(host):
        return [
            f"GitHub cannot deliver webhooks to {webhook_url}: it is this machine's own address. Put the service "
            "behind an address GitHub reaches (a reverse proxy, a tunnel), set AIFIX_PUBLIC_URL to it, and register "
            "with that, or change the App's webhook URL on its settings page afterwards."
        ]
    return []


def save_app(app: NewApp, api: str, path: Path, *, force: bool) -> None:
    """The new App's credentials to the settings file (AIFIX_GITHUB_API_URL too, when it is not github.com's)."""
    values = {
        "AIFIX_APP_ID": str(app.id),
        "AIFIX_PRIVATE_KEY": app.pem.get_secret_value(),
        "AIFIX_CLIENT_ID": app.client_id,
        "AIFIX_CLIENT_SECRET": app.client_secret.get_secret_value(),
    }
    if app.webhook_secret is not None:
        values["AIFIX_WEBHOOK_SECRET"] = app.webhook_secret.get_secret_value()
    if api.rstrip("/") != DEFAULT_API:
        values["AIFIX_GITHUB_API_URL"] = api
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = (
        f"Written by ai-fix serve's setup page on {when} for the GitHub App {app.name} (id {app.id}, {app.html_url}).\n"
        "It holds the App's private key and secrets: keep it private (mode 600). The environment overrides it."
    )
    write_settings(path, values, header=header, force=force)


class SetupPage:
    """The setup page's routes and what they remember: the states made, and the App once registered."""

    def __init__(self, config: SetupConfig, activate: Callable[[], Awaitable[str]]) -> None:
        self.config, self.activate = config, activate
        self.progress = Progress()
        self.templates = _environment()

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        nonce = secrets.token_urlsafe(16)
        body = self.templates.get_template(template).render(nonce=nonce, **values)
        web = web_and_api(self.config.api_url)[0]
        policy = (
            f"default-src 'none'; img-src data:; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; base-uri 'none'; "
            f"frame-ancestors 'none'; form-action 'self' {values.get('form_origin', web)}"
        )
        headers = {"Content-Security-Policy": policy, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        return HTMLResponse(body, status_code=status, headers=headers)

    def message(self, title: str, message: str, status: int) -> HTMLResponse:
        return self.render("message.html", status, title=title, message=message)

    def webhook_url(self, request: Request) -> tuple[str, str]:
        if self.config.public_url:
            return f"{self.config.public_url}/webhook", "AIFIX_PUBLIC_URL"
        return (
            f"{str(request.base_url).rstrip('/')}/webhook",
            "this page's address; set AIFIX_PUBLIC_URL to use another",
        )

    async def home(self, request: Request) -> Response:
        if self.progress.app is not None:
            return self.done(request)
        c, webhook = self.config, self.webhook_url(request)
        problem = refusal(c.settings_file, force=c.force)
        return self.render(
            "setup.html",
            name=c.manifest.name,
            name_limit=NAME_LIMIT,
            webhook_url=webhook[0],
            webhook_source=webhook[1],
            homepage=c.manifest.fields.get("url", ""),
            public=bool(c.manifest.fields.get("public")),
            permissions=c.manifest.permissions,
            events=c.manifest.events,
            settings_file=c.settings_file,
            github_web=web_and_api(c.api_url)[0],
            problems=[problem] if problem else [],
            notes=[*webhook_notes(webhook[0]), *c.notes],
        )

    async def register(self, request: Request) -> Response:
        if self.progress.app is not None:
            return self.message("Already registered", f"{self.progress.app.name} is registered already.", 409)
        if problem := refusal(self.config.settings_file, force=self.config.force):
            return self.message("Settings file exists", problem, 409)
        body = await request.body()
        form = {k: v[0].strip() for k, v in parse_qs(body[:MAX_FORM].decode("utf-8", "replace")).items()}
        name, org = form.get("name", ""), form.get("org", "") if form.get("account") == "organization" else ""
        if not 0 < len(name) <= NAME_LIMIT:
            return self.message("Name needed", f"Give the App a name of 1 to {NAME_LIMIT} characters.", 400)
        if form.get("account") == "organization" and not ORGANIZATION.match(org):
            return self.message("Organisation needed", "Give the organisation's login (letters, digits, -).", 400)
        enterprise = form.get("enterprise", "")
        if enterprise and urlsplit(enterprise).scheme not in ("https", "http"):
            return self.message("Address needed", "Give the GitHub Enterprise Server's address as https://host.", 400)
        web, api = web_and_api(self.config.api_url, enterprise)
        state = secrets.token_urlsafe(32)
        pending = self.progress.pending
        pending[state] = Pending(web, api, time.time())
        while len(pending) > MAX_PENDING:
            pending.pop(next(iter(pending)))
        manifest = self.config.manifest.for_github(
            name=name,
            webhook_url=self.webhook_url(request)[0],
            redirect_url=f"{str(request.base_url).rstrip('/')}/setup/callback",
        )
        log.info("setup: sending the browser to register %r on %s", name, form_url(web, org, "…"))
        return self.render(
            "register.html",
            action=form_url(web, org, state),
            manifest=orjson.dumps(manifest).decode(),
            form_origin=web,
        )

    async def callback(self, request: Request) -> Response:
        if self.progress.app is not None:
            return self.message("Already registered", f"{self.progress.app.name} is registered already.", 409)
        state, code = request.query_params.get("state", ""), request.query_params.get("code", "")
        pending = self.progress.pending.pop(state, None) if state else None
        if pending is None or time.time() - pending.at > STATE_SECONDS:
            log.warning("setup: refused a registration callback whose state this page did not make (or is too old)")
            return self.message(
                "Registration not started here",
                "This callback does not carry a state this page made in the last hour, so its code is not used. "
                "Start again from the setup page.",
                400,
            )
        if not code:
            return self.message("No code", "GitHub sent no code back; start again from the setup page.", 400)
        if problem := refusal(self.config.settings_file, force=self.config.force):
            return self.message("Settings file exists", problem, 409)
        try:
            app = await run_in_threadpool(convert_code, pending.api, code)
            await run_in_threadpool(save_app, app, pending.api, self.config.settings_file, force=self.config.force)
        except AiFixError as exc:
            log.error("setup: the registration did not complete: %s", exc)
            return self.message("Registration did not complete", str(exc), 502)
        self.progress.pending.clear()
        self.progress.app = app
        log.info(
            "setup: registered the GitHub App %r (id %d) on %s; settings in %s",
            app.name,
            app.id,
            app.owner,
            self.config.settings_file,
        )
        self.progress.start_error = await self.activate()
        return self.done(request)

    def done(self, request: Request) -> HTMLResponse:
        app = self.progress.app
        assert app is not None
        webhook = self.webhook_url(request)[0]
        return self.render(
            "done.html",
            app=app,
            settings_file=self.config.settings_file,
            start_error=self.progress.start_error,
            webhook_url=webhook,
            notes=webhook_notes(webhook),
            trigger_label=self.config.trigger_label,
        )

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home, methods=["GET"]),
            Route("/setup/register", self.register, methods=["POST"]),
            Route("/setup/callback", self.callback, methods=["GET"]),
        ]


SETUP_PATHS = ("/", "/setup/register", "/setup/callback")
"""What the setup page keeps answering once the service proper has started in the same process."""


def setup_app(config: SetupConfig, activate: Callable[[], Awaitable[str]]) -> Starlette:
    """The app `ai-fix serve` runs while no App is configured: the page, and refusals on the service's endpoints."""
    page = SetupPage(config, activate)
    waiting = "no GitHub App is configured yet: open this service's / page to register one"

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": False, "error": f"setup mode: {waiting}"}, status_code=503)

    async def webhook(request: Request) -> Response:
        return JSONResponse({"error": waiting}, status_code=503)

    return Starlette(
        routes=[
            *page.routes(),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/webhook", webhook, methods=["POST"]),
        ]
    )
