"""The real `ai-fix serve` started with no App configured (setup mode), beside the fake GitHub's manifest flow.

`setup_service` starts the installed command on a free loopback port in a temporary working directory, its
log in a file; `register` walks the flow as a browser would, with plain HTTP: the page's form, the
auto-submitted form to GitHub, GitHub's redirect back.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.fake_manifest import ManifestGitHub
from tests.support.processes import AI_FIX, ROOT, free_port
from tests.support.server import serve, wait_for_http

FORM = re.compile(
    r'<form method="post" action="([^"]+)" id="to-github">\s*<input type="hidden" name="manifest" value="([^"]*)">'
)


@dataclass
class SetupService:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    cwd: Path
    github: ManifestGitHub
    github_url: str
    client: httpx.Client
    """A client of the service, as the browser on the page."""

    @property
    def settings_file(self) -> Path:
        return self.cwd / ".env"

    def log_text(self) -> str:
        return self.log.read_text()


def setup_env(github_url: str, **extra: str) -> dict[str, str]:
    """The environment of a first start: nothing of ai-fix's set but where GitHub is and what jobs run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIFIX_", "ANTHROPIC_", "OPENAI_"))}
    return {
        **env,
        "PYTHONPATH": str(ROOT),
        "AIFIX_GITHUB_API_URL": github_url + "/",
        "AIFIX_WORKERS": "1",
        **extra,
    }


@contextmanager
def setup_service(tmp_path: Path, *args: str, api: bool = True, **extra: str) -> Iterator[SetupService]:
    """`ai-fix serve` in setup mode; `api=False` leaves AIFIX_GITHUB_API_URL unset (github.com's, for GHES tests)."""
    github = ManifestGitHub()
    with serve(github.asgi()) as github_url:
        env = setup_env(github_url, **extra)
        if not api:
            del env["AIFIX_GITHUB_API_URL"]
        cwd = tmp_path / "site"
        cwd.mkdir(exist_ok=True)
        port = free_port()
        log = tmp_path / "serve.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [AI_FIX, "serve", "--port", str(port), *args], env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT
            )
        url = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=url, timeout=30)
        try:
            wait_for_http(f"{url}/", process, log, timeout=60)
            yield SetupService(url, process, log, cwd, github, github_url, client)
        finally:
            client.close()
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def to_github(client: httpx.Client, **form: str) -> tuple[str, str]:
    """Press Register: the form action (GitHub's page, with the state) and the manifest the page sends there."""
    page = client.post("/setup/register", data={"name": "ai-fix", "account": "personal", **form})
    assert page.status_code == 200, page.text
    found = FORM.search(page.text)
    assert found is not None, page.text
    return html.unescape(found[1]), html.unescape(found[2])


def confirm_on_github(action: str, manifest: str) -> str:
    """GitHub's page, confirmed: the browser posts the manifest and is sent back; the URL it is sent to."""
    answer = httpx.post(action, data={"manifest": manifest}, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    return answer.headers["location"]
