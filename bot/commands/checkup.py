"""What `ai-fix doctor` checks, one function each, in the order a new operator fixes things in.

Each check returns a `Finding`: what it saw and, when it failed, what to do. A check that needs what an
earlier one failed to give (the settings, the App) is skipped with the reason. `ai-fix serve` runs the
cheap ones (no network, no sandbox) at start and logs what fails.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx

from bot.commands.services import github_app
from bot.commands.toolkit import default_models, model_opener, toolkit
from bot.contract.models import SandboxConfig
from bot.errors import AiFixError, ConfigError, GitHubError, ModelError, SandboxUnavailable
from bot.github.client import GitHubApp, GitHubStatusError
from bot.model.base import ModelRequest
from bot.model.routing import small_for
from bot.queue.migrate import pending, unknown_versions
from bot.queue.sqlite_db import parse_sqlite_url
from bot.queue.store import open_database
from bot.sandbox.base import SandboxJob
from bot.sandbox.pull import ImageUnavailable
from bot.settings import SQLITE_PREFIX, Settings, load_settings, settings_file, weak_secret

Status = Literal["ok", "fail", "skip"]
MIN_FREE_BYTES = 2 << 30
"""Free space a job directory needs at least: a clone, its environment and the checks' output."""
SHOWN_REPOS = 5


@dataclass(frozen=True)
class Finding:
    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass
class Checkup:
    """What the checks found so far, and what later checks take from earlier ones."""

    progress: Callable[[str], None] = print
    """Where long work (an image pull) says how it goes."""
    settings: Settings | None = None
    app: GitHubApp | None = None
    findings: list[Finding] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)


def check_settings(c: Checkup) -> Finding:
    try:
        c.settings = load_settings()
    except ConfigError as exc:
        return Finding(
            "settings", "fail", str(exc), "fix the variable it names, in the environment or the settings file"
        )
    path = settings_file(c.settings)
    where = f"the environment and {path}" if path.is_file() else f"the environment (no settings file at {path})"
    return Finding("settings", "ok", f"read from {where}")


def check_app(c: Checkup) -> Finding:
    s = c.settings
    if s is None:
        return Finding("app", "skip", "the settings do not parse")
    if s.app_id is None:
        return Finding(
            "app",
            "fail",
            "no GitHub App is configured (AIFIX_APP_ID is not set)",
            "start `ai-fix serve` and register one on its setup page, or set AIFIX_APP_ID and the key",
        )
    try:
        app = github_app(s)
        about = app.about()
    except GitHubStatusError as exc:
        fix = (
            "the key is not this App's: generate a private key on the App's settings page and set AIFIX_PRIVATE_KEY "
            "or AIFIX_PRIVATE_KEY_PATH to it (and check AIFIX_APP_ID)"
            if exc.status == 401
            else "check AIFIX_APP_ID, AIFIX_GITHUB_API_URL and the network"
        )
        return Finding("app", "fail", str(exc), fix)
    except AiFixError as exc:
        return Finding("app", "fail", str(exc), "check AIFIX_PRIVATE_KEY(_PATH), AIFIX_GITHUB_API_URL and the network")
    c.app = app
    return Finding("app", "ok", f"{about.get('name', about['slug'])} (id {s.app_id}): GitHub accepts its key")


def check_installations(c: Checkup) -> Finding:
    if c.app is None:
        return Finding("installations", "skip", "the App is not reachable with its key")
    install = f"{str(c.app.about().get('html_url', '')).rstrip('/')}/installations/new"
    try:
        found = c.app.installations()
        if not found:
            return Finding("installations", "fail", "the App is installed nowhere", f"install it: {install}")
        said = []
        for installation in found:
            repos = c.app.installation_repos(int(installation["id"]))
            shown = ", ".join(repos[:SHOWN_REPOS]) + (
                f" and {len(repos) - SHOWN_REPOS} more" if len(repos) > SHOWN_REPOS else ""
            )
            account = (installation.get("account") or {}).get("login", "?")
            said.append(f"{account} ({len(repos)} repositories{': ' + shown if repos else ''})")
    except GitHubError as exc:
        return Finding("installations", "fail", str(exc), "check the App's installations on GitHub")
    return Finding("installations", "ok", "; ".join(said))


def check_webhook_secret(c: Checkup) -> Finding:
    if c.settings is None:
        return Finding("webhook secret", "skip", "the settings do not parse")
    fix = (
        "make one with `openssl rand -hex 32`, enter it as the webhook secret on the App's settings page and set "
        "AIFIX_WEBHOOK_SECRET to it"
    )
    if c.settings.webhook_secret is None:
        return Finding("webhook secret", "fail", "AIFIX_WEBHOOK_SECRET is not set: no delivery can be checked", fix)
    if problem := weak_secret(c.settings.webhook_secret.get_secret_value()):
        return Finding("webhook secret", "fail", f"AIFIX_WEBHOOK_SECRET is too weak: {problem}", fix)
    return Finding("webhook secret", "ok", "strong enough")


def check_database(c: Checkup) -> Finding:
    if c.settings is None:
        return Finding("database", "skip", "the settings do not parse")
    url = c.settings.database_url
    migrate = "run `ai-fix migrate` (`ai-fix serve` migrates at start too)"
    if url.startswith(SQLITE_PREFIX):
        try:
            path = parse_sqlite_url(url)[0]
        except ConfigError as exc:
            return Finding("database", "fail", str(exc), "fix AIFIX_DATABASE_URL")
        if not path.is_file():  # never made here: looking must not create an empty database
            return Finding("database", "fail", f"the SQLite file {path} does not exist yet", migrate)
    try:
        db = open_database(url)
        try:
            missing = pending(db)
            newer = [] if missing else unknown_versions(db)
        finally:
            db.close()
    except AiFixError as exc:
        return Finding(
            "database", "fail", f"unreachable: {exc}", "check AIFIX_DATABASE_URL and that the database server is up"
        )
    if missing:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in missing)
        return Finding("database", "fail", f"reachable, not migrated: {len(missing)} to apply ({names})", migrate)
    if newer:
        return Finding("database", "fail", f"migrated by a newer ai-fix (versions {newer})", "run that version")
    return Finding("database", "ok", f"reachable and migrated ({url.partition('://')[0]})")


def check_sandbox(c: Checkup) -> Finding:
    s = c.settings
    if s is None:
        return Finding("sandbox", "skip", "the settings do not parse")
    kit = toolkit(s, model=model_opener(None, s))
    with tempfile.TemporaryDirectory(prefix="ai-fix-doctor-") as tree:
        job = SandboxJob(repo="ai-fix-doctor", commands=("echo",), progress=c.progress)
        try:
            box = kit.open_sandbox(Path(tree), SandboxConfig(), job)
        except ImageUnavailable as exc:
            return Finding(
                "sandbox",
                "fail",
                str(exc),
                f"make {s.sandbox_image} available on this host (pull, load or build it), or set AIFIX_SANDBOX_IMAGE "
                "to an image it has",
            )
        except SandboxUnavailable as exc:
            return Finding(
                "sandbox", "fail", str(exc), "run ./scripts/setup.sh (podman, bubblewrap), or set AIFIX_SANDBOX"
            )
        try:
            ran = box.exec("echo ai-fix-doctor", timeout=120)
        finally:
            box.close()
    if ran.exit_code != 0 or "ai-fix-doctor" not in ran.output:
        return Finding(
            "sandbox", "fail", f"{box.name} ran `echo` and it failed: {ran.output[-300:]!r}", "see the engine's log"
        )
    image = f" in {box.config.image}" if box.name in ("podman", "docker") else ""
    return Finding("sandbox", "ok", f"{box.name} ran a command{image} ({ran.duration_s:.1f} s)")


def check_model(c: Checkup) -> Finding:
    s = c.settings
    if s is None:
        return Finding("model", "skip", "the settings do not parse")
    specs = list(dict.fromkeys([s.model, small_for(s.model, s.small_model)]))
    try:
        models = default_models(s)
    except ConfigError as exc:
        return Finding("model", "fail", str(exc), "set the key it names, in the environment or the settings file")
    try:
        said = []
        for spec in specs:
            started = time.monotonic()
            request = ModelRequest(
                model=spec,
                system="ai-fix doctor checks that this model answers. Answer with one word.",
                messages=[{"role": "user", "content": "ping"}],
                max_tokens=16,
                timeout_s=60.0,
            )
            models.complete(request)
            said.append(f"{spec} answered in {time.monotonic() - started:.1f} s")
    except ModelError as exc:
        return Finding(
            "model",
            "fail",
            f"{spec}: {exc}",
            "check the provider's key (AIFIX_ANTHROPIC_API_KEY, AIFIX_OPENAI_API_KEY, ...), its base URL and the model's name",
        )
    finally:
        models.close()
    return Finding("model", "ok", "; ".join(said))


def check_public_url(c: Checkup) -> Finding:
    s = c.settings
    if s is None:
        return Finding("public URL", "skip", "the settings do not parse")
    if not s.public_url:
        return Finding("public URL", "skip", "AIFIX_PUBLIC_URL is not set (run-viewer links are off)")
    url = f"{s.public_url}/healthz"
    fix = "check its DNS, the proxy or tunnel in front of ai-fix, and that `ai-fix serve` runs behind it"
    try:
        answer = httpx.get(url, timeout=10.0, follow_redirects=False)
        data = answer.json()
    except httpx.HTTPError as exc:
        return Finding("public URL", "fail", f"{url} is not reachable from here: {type(exc).__name__}: {exc}", fix)
    except ValueError:
        return Finding("public URL", "fail", f"{url} answered HTTP {answer.status_code}, and not as ai-fix does", fix)
    if not isinstance(data, dict) or "ok" not in data:
        return Finding("public URL", "fail", f"{url} answered HTTP {answer.status_code}, and not as ai-fix does", fix)
    return Finding("public URL", "ok", f"{url} answers (HTTP {answer.status_code})")


def check_disk(c: Checkup) -> Finding:
    if c.settings is None:
        return Finding("disk", "skip", "the settings do not parse")
    where = c.settings.work_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    said = f"{free / 2**30:.1f} GiB free for job directories at {c.settings.work_dir}"
    if free < MIN_FREE_BYTES:
        return Finding(
            "disk",
            "fail",
            f"only {said} (a job needs up to {MIN_FREE_BYTES >> 30} GiB)",
            "free space there, or point AIFIX_WORK_DIR at a larger disk",
        )
    return Finding("disk", "ok", said)


CHECKS: tuple[Callable[[Checkup], Finding], ...] = (
    check_settings,
    check_app,
    check_installations,
    check_webhook_secret,
    check_database,
    check_sandbox,
    check_model,
    check_public_url,
    check_disk,
)
"""In the order the issue of a new installation is best fixed in."""
CHEAP: tuple[Callable[[Checkup], Finding], ...] = (check_webhook_secret, check_database, check_disk)
"""No network, no sandbox: what `ai-fix serve` checks at start, with the settings it runs with."""


def start_problems(settings: Settings) -> list[Finding]:
    """What the cheap checks find wrong with the settings a service starts with."""
    checkup = Checkup(settings=settings)
    return [finding for check in CHEAP if (finding := check(checkup)).status == "fail"]
