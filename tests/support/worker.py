"""The real worker in-process running the delivery pipeline, for job tests: GitHub faked through respx
(OpenAPI-checked), the fake Messages API on loopback, a bare repository as the remote, the settings read
from the environment exactly as `ai-fix serve` reads them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.commands.services import github_app
from bot.commands.toolkit import delivery_pipeline
from bot.github.retry import RetryPolicy
from bot.model.scripted import ScriptedModel
from bot.queue.models import Trigger
from bot.queue.store import Store
from bot.queue.worker import WorkerConfig, WorkerPool
from bot.settings import load_settings
from bot.vocabulary import WORK_KINDS, TriggerKind
from tests.support.fake_pulls import PullsGitHub
from tests.support.model import FakeMessagesAPI, serve_fake_api
from tests.support.webhooks import INSTALLATION, REPO
from tests.support.world import SENDER, leaks, make_github, make_remote, service_env

APP_IDS = itertools.count(72_000)


class AheadClock:
    """The store's clock: real time, `ahead` seconds on (a test lets a lease run out)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@dataclass
class Worker:
    pool: WorkerPool
    store: Store
    clock: AheadClock
    github: PullsGitHub
    model_api: FakeMessagesAPI
    bare: Path

    def enqueue(self, number: int, kind: TriggerKind = "issue", feedback: str = "", **fields: Any) -> None:
        """The trigger a label on issue `number` makes (or `/agent retry` with `feedback` on pull request `number`);
        `fields` adds to it (a `ci` trigger's head and checks, say)."""
        trigger = Trigger(
            kind=kind,
            feedback=feedback,
            repo=REPO,
            number=number,
            installation_id=INSTALLATION,
            sender=SENDER,
            clone_url=f"file://{self.bare}",
            default_branch="main",
            **fields,
        )
        with self.store.transaction() as conn:
            self.store.work.enqueue(conn, trigger, time.time())

    def attempt(self) -> None:
        """Claim the job (again, after a failed attempt) and run it the way a worker thread does."""
        job = self.store.leases.claim(self.pool.owner, WORK_KINDS, 60)
        assert job is not None, "no job to claim"
        self.pool.runner.run(job)

    def jobs(self) -> list[dict[str, Any]]:
        return [job.model_dump() for job in self.store.jobs.newest()]

    def job(self) -> dict[str, Any]:
        [job] = self.jobs()
        return job


@contextmanager
def open_worker(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    issues: Mapping[int, tuple[str, str]],
    files: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    github_kind: type[PullsGitHub] = PullsGitHub,
) -> Iterator[Worker]:
    """A worker over the sample repository (with `files` on top), the `issues` (number → title, body) on GitHub.

    `env` adds to or replaces the service's settings; `github_kind` is the fake GitHub's class. Nothing sent to GitHub or
    the model may carry a secret.
    """
    bare = make_remote(root, **(files or {}))
    github = make_github(bare, app_id=next(APP_IDS), kind=github_kind)
    for number, (title, body) in issues.items():
        github.add_issue(REPO, number, title=title, body=body, author=SENDER, labels=("ai-fix",))
    with github.mock(), serve_fake_api(ScriptedModel([])) as (model_api, model_url):
        for name, value in {**service_env(root, github, github.base_url, model_url), **(env or {})}.items():
            monkeypatch.setenv(name, value)  # read exactly as `ai-fix serve` reads them
        settings = load_settings()
        clock = AheadClock()
        store = Store.from_url(settings.database_url, clock=clock)
        store.init_schema()
        app = github_app(settings, retry=RetryPolicy(backoff=0.001))
        pool = WorkerPool(
            store, app, delivery_pipeline(settings), settings, workers=0, config=WorkerConfig(retry_seconds=0.0)
        )
        yield Worker(pool, store, clock, github, model_api, bare)
        store.close()
        assert leaks(github, model_api) == [], "a secret reached the fake GitHub or the fake model"
    assert github.violations == [], "requests that break GitHub's schema or auth rules"
