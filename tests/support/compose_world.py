"""What the compose check puts around the containers: the fake GitHub they call, and the intakes driven from outside."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.compose_project import CheckFailed
from tests.support.fake_pulls import PullsGitHub
from tests.support.server import serve
from tests.support.webhooks import REPO, headers, labeled
from tests.support.world import SENDER, make_github, make_remote

TITLE, BODY = "Make it better", "Please improve it."
"""An issue with no acceptance criteria: the pipeline ends it at the contract stage (needs_clarification)."""


class Hold:
    """ASGI middleware over the fake GitHub: once armed, the first request whose path holds `part` waits
    until released, so the job that sent it stays mid-way (leased, its snapshot stored) as long as needed."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.part = ""
        self.path = ""
        self.arrived = threading.Event()
        self.released = threading.Event()

    def arm(self, part: str) -> None:
        self.part = part

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if self.part and scope["type"] == "http" and self.part in scope["path"] and not self.arrived.is_set():
            self.path = scope["path"]
            self.arrived.set()
            while not self.released.is_set():
                await asyncio.sleep(0.1)
        await self.app(scope, receive, send)


@contextmanager
def fake_github(root: Path) -> Iterator[tuple[PullsGitHub, Hold, int]]:
    """The fake (its contents API reads the sample repository from a bare repository on disk) on every
    interface, so the containers reach it through the host's address on their network; and its port."""
    github = make_github(make_remote(root), app_id=4343)
    hold = Hold(github.asgi())
    with serve(hold, host="0.0.0.0") as url:
        yield github, hold, int(url.rsplit(":", 1)[1])


@dataclass
class Intakes:
    """The intakes as GitHub reaches them: signed deliveries to /webhook; /healthz and /metrics as an operator."""

    urls: dict[str, str]
    """intake name → http://127.0.0.1:PORT"""
    secret: str
    admin: str
    github: PullsGitHub
    hold: Hold
    acknowledged: list[str] = field(default_factory=list)
    """Every delivery an intake answered 2xx: what PostgreSQL must hold whatever happens after."""

    def labelled(self, number: int) -> bytes:
        """The `issues.labeled` delivery of issue `number` (which the fake GitHub then has too)."""
        self.github.add_issue(REPO, number, title=TITLE, body=BODY, author=SENDER, labels=("ai-fix",))
        payload = labeled(number, sender=SENDER)
        payload["issue"].update(title=TITLE, body=BODY)
        return json.dumps(payload).encode()

    def send(self, intake: str, body: bytes, delivery: str) -> httpx.Response:
        answer = httpx.post(
            f"{self.urls[intake]}/webhook",
            content=body,
            headers=headers("issues", body, delivery=delivery, secret=self.secret),
            timeout=30,
        )
        if answer.is_success:
            self.acknowledged.append(delivery)
        return answer

    def expect(self, intake: str, body: bytes, delivery: str, status: int, outcome: str) -> dict[str, Any]:
        """Send; CheckFailed unless the answer is `status` with `outcome`."""
        answer = self.send(intake, body, delivery)
        data: dict[str, Any] = answer.json()
        if answer.status_code != status or data.get("outcome") != outcome:
            raise CheckFailed(
                f"{intake} answered delivery {delivery} with {answer.status_code} {data}; expected {status} {outcome}"
            )
        return data

    def health(self, intake: str) -> int:
        """/healthz's status (0: no answer)."""
        try:
            return httpx.get(f"{self.urls[intake]}/healthz", timeout=30).status_code
        except httpx.TransportError:
            return 0

    def metrics(self, intake: str) -> str:
        answer = httpx.get(
            f"{self.urls[intake]}/metrics", headers={"Authorization": f"Bearer {self.admin}"}, timeout=10
        )
        if answer.status_code != 200:
            raise CheckFailed(f"{intake} answered /metrics with {answer.status_code}: {answer.text[:300]}")
        return answer.text
