"""Fixtures shared by the intake and queue tests: the fake GitHub, settings, the store, a live service."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.commands.services import github_app
from bot.github.client import GitHubApp
from bot.github.retry import RetryPolicy
from bot.intake.app import create_app
from bot.queue.models import Job
from bot.queue.pipeline import Pipeline
from bot.queue.store import Store
from bot.queue.worker import WorkerConfig, WorkerPool
from bot.settings import Settings

from .fake_github import FakeGitHub
from .pipelines import SnapshotOnly
from .server import serve
from .webhooks import INSTALLATION, REPO, SECRET

ADMIN = "admin-token-for-tests"
FAST = WorkerConfig(lease_seconds=5.0, poll_seconds=0.02, grace_seconds=5.0, retry_seconds=0.0)


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.installations[INSTALLATION] = [REPO, "Codertocat/Other"]
    fake.permissions[(REPO, "Codertocat")] = "admin"
    fake.add_issue(REPO, 1, labels=("ai-fix", "bug"))
    with fake.mock():
        yield fake
    assert fake.violations == [], f"requests that break GitHub's schema or auth rules: {fake.violations}"


@pytest.fixture
def github_url(fake_github: FakeGitHub) -> Iterator[str]:
    """The fake GitHub on loopback, for ai-fix processes the test starts."""
    with serve(fake_github.asgi()) as url:
        yield url + "/"


def make_settings(tmp_path: Path, fake: FakeGitHub, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "app_id": fake.app_id,
        "private_key": fake.private_key_pem,
        "webhook_secret": SECRET,
        "admin_token": ADMIN,
        "database_url": f"sqlite:///{tmp_path / 'ai-fix.db'}",
        "github_api_url": fake.base_url,
        "workers": 2,
        "work_dir": tmp_path / "work",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def github_for(settings: Settings) -> GitHubApp:
    return github_app(settings, retry=RetryPolicy(backoff=0.01))


@dataclass
class Service:
    url: str
    client: httpx.Client
    store: Store
    settings: Settings
    fake: FakeGitHub

    def admin(self, path: str) -> httpx.Response:
        return self.client.get(path, headers={"Authorization": f"Bearer {ADMIN}"})


@pytest.fixture
def start_service(tmp_path: Path, fake_github: FakeGitHub) -> Iterator[object]:
    """Call it to run a real server (uvicorn on loopback) with workers; options pass to create_app."""
    stack: list[object] = []

    def start(
        *,
        pipeline: Pipeline | Callable[[Settings], Pipeline] | None = None,
        workers: bool = True,
        config: WorkerConfig = FAST,
        busy_timeout: float = 5.0,
        **settings_overrides: object,
    ) -> Service:
        """`pipeline`: an instance, or a class/factory taking the settings (like AIFIX_PIPELINE)."""
        settings = make_settings(tmp_path, fake_github, **settings_overrides)
        if pipeline is None:
            pipeline = SnapshotOnly()
        elif isinstance(pipeline, type) or not hasattr(pipeline, "run"):
            pipeline = pipeline(settings)  # type: ignore[operator]
        store = Store.from_url(settings.database_url, busy_timeout=busy_timeout)
        services = [WorkerPool(store, github_for(settings), pipeline, settings, config=config)] if workers else []
        app = create_app(settings, store=store, bot_login=fake_github.bot_login, services=services)
        server = serve(app)
        url = server.__enter__()
        client = httpx.Client(base_url=url, timeout=10)
        stack.append((server, client, store))
        return Service(url, client, store, settings, fake_github)

    yield start
    for server, client, store in reversed(stack):  # type: ignore[misc]
        client.close()
        server.__exit__(None, None, None)
        store.close()


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.01) -> object:
    """Poll `predicate()` until it returns something truthy; fail the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def settled(store: Store, job_id: int, timeout: float = 10.0) -> Job:
    """The job once it has left queued/running."""

    def done() -> Job | None:
        job = store.jobs.get(job_id)
        return job if job is not None and job.status not in ("queued", "running") else None

    return wait_until(done, timeout)  # type: ignore[return-value]
