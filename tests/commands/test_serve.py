"""`ai-fix serve` refuses to start on a missing or malformed setting, with one line naming it (with no App at all it
serves the setup page instead: test_setup_mode.py)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from bot.commands.main import main
from bot.queue.enqueue import insert_job
from bot.queue.models import Trigger
from bot.queue.store import Store
from tests.support.fake_github import FakeGitHub
from tests.support.server import serve
from tests.support.service import wait_until
from tests.support.world import free_port

AI_FIX = str(Path(sys.executable).parent / "ai-fix")
KEY = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
HOOK = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": HOOK},
            "AIFIX_APP_ID is not set: set AIFIX_APP_ID to the numeric App ID",
        ),
        ({"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY}, "AIFIX_WEBHOOK_SECRET is not set"),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": "change-me"},
            "AIFIX_WEBHOOK_SECRET is a placeholder, not a secret; make one with `openssl rand -hex 32`",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": "k"},
            "AIFIX_WEBHOOK_SECRET must be at least 16 characters; make one with `openssl rand -hex 32`",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": HOOK,
                "AIFIX_ADMIN_TOKEN": "change-me",
            },
            "AIFIX_ADMIN_TOKEN is a placeholder, not a secret; make one with `openssl rand -hex 32`",
        ),
        (
            {"AIFIX_APP_ID": "twelve", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": HOOK},
            "AIFIX_APP_ID: Input should be a valid integer",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": "not a key", "AIFIX_WEBHOOK_SECRET": HOOK},
            "AIFIX_PRIVATE_KEY does not look like a PEM key",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": HOOK,
                "AIFIX_DATABASE_URL": "mysql://db",
            },
            "AIFIX_DATABASE_URL 'mysql://db' is not supported",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": HOOK,
                "AIFIX_PIPELINE": "bot.nowhere:Pipeline",
            },
            "AIFIX_PIPELINE 'bot.nowhere:Pipeline' cannot be loaded",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": HOOK},
            "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set, and claude-sonnet-5-5 (the main model)",
        ),
        (
            {
                "AIFIX_APP_ID": "12",
                "AIFIX_PRIVATE_KEY": KEY,
                "AIFIX_WEBHOOK_SECRET": HOOK,
                "AIFIX_MODEL": "openai:gpt-5.4",
                "AIFIX_SMALL_MODEL": "ollama:qwen3:8b",
            },
            "AIFIX_OPENAI_API_KEY and OPENAI_API_KEY are not set, and openai:gpt-5.4 (the main model)",
        ),
        (
            {"AIFIX_APP_ID": "12", "AIFIX_PRIVATE_KEY": KEY, "AIFIX_WEBHOOK_SECRET": HOOK, "AIFIX_MODEL": "gpt-5.4"},
            "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set, and gpt-5.4 (the main model) is an Anthropic model",
        ),
    ],
)
def test_serve_stops_at_start_with_one_line(tmp_path, monkeypatch, capsys, env, message):
    for name in [k for k in os.environ if k.startswith(("AIFIX_", "ANTHROPIC_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--port", "1"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ai-fix serve: ") and message in lines[0]


def test_the_installed_command_exits_2(tmp_path):
    # Half an App (a key, no id) is a mistake to report; no App at all is setup mode (test_setup_mode.py).
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")} | {"AIFIX_PRIVATE_KEY": KEY}
    result = subprocess.run(
        [AI_FIX, "serve"], env=clean, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("ai-fix serve: AIFIX_APP_ID is not set")


def test_sigterm_ends_open_run_viewer_streams_instead_of_waiting_for_them(tmp_path):
    """uvicorn waits up to 30 s for open responses before the workers drain; a viewer's page must not hold that up."""
    fake = FakeGitHub()
    with serve(fake.asgi()) as github_url:  # serve reads its bot user (GET /app) at start
        _sigterm_with_an_open_stream(tmp_path, fake, github_url)
    assert fake.violations == []


def _sigterm_with_an_open_stream(tmp_path: Path, fake: FakeGitHub, github_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")}
    env.update(
        AIFIX_APP_ID=str(fake.app_id),
        AIFIX_PRIVATE_KEY=fake.private_key_pem,
        AIFIX_WEBHOOK_SECRET="webhook-secret-0123456789",
        AIFIX_ADMIN_TOKEN="admin-token-0123456789",
        AIFIX_DATABASE_URL=f"sqlite:///{tmp_path / 'ai-fix.db'}",
        AIFIX_GITHUB_API_URL=github_url + "/",
        AIFIX_WORKERS="0",
        AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789",  # serve opens the default models at start
    )
    port = free_port()
    server = subprocess.Popen(
        [AI_FIX, "serve", "--port", str(port)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(f"{url}/healthz"), timeout=60)  # start-up takes 15 - 30 s on a loaded machine
        store = Store.from_url(env["AIFIX_DATABASE_URL"])
        trigger = Trigger(kind="issue", repo="o/r", number=1, installation_id=1, sender="someone")
        with store.transaction() as conn:
            job_id = insert_job(store.db, conn, trigger, time.time())
        store.close()
        opened, closed = threading.Event(), threading.Event()

        def watch() -> None:
            headers = {"Authorization": "Bearer admin-token-0123456789"}
            with httpx.stream("GET", f"{url}/runs/{job_id}/events", headers=headers, timeout=60) as response:
                opened.set()
                for _ in response.iter_lines():
                    pass
            closed.set()

        threading.Thread(target=watch, daemon=True).start()
        assert opened.wait(10)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0, server.stderr.read().decode() if server.stderr else ""
        assert closed.wait(5), "the stream was ended by the server"
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()  # waits, and closes the pipes it reads


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_serve_says_at_start_what_the_cheap_checks_find(tmp_path):
    """The webhook secret, the database and the disk are checked as the service starts; a problem is said with its fix."""
    fake = FakeGitHub()
    with serve(fake.asgi()) as github_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")}
        env.update(
            PYTHONPATH=str(Path(__file__).resolve().parents[2]),  # this checkout's bot/, whatever the venv installed
            AIFIX_APP_ID=str(fake.app_id),
            AIFIX_PRIVATE_KEY=fake.private_key_pem,
            AIFIX_WEBHOOK_SECRET="change-me",
            AIFIX_DATABASE_URL=f"sqlite:///{tmp_path / 'ai-fix.db'}",
            AIFIX_GITHUB_API_URL=github_url + "/",
            AIFIX_WORKERS="0",
            AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789",
        )
        port = free_port()
        log = tmp_path / "serve.log"
        with log.open("wb") as out:
            server = subprocess.Popen(
                [AI_FIX, "serve", "--port", str(port)], env=env, cwd=tmp_path, stdout=out, stderr=out
            )
        try:
            # Said as a warning here; a service that refuses a weak secret outright says the same before it exits.
            wait_until(lambda: "webhook secret" in log.read_text() or server.poll() is not None, timeout=60)
        finally:
            server.terminate()
            server.wait(timeout=30)
    said = [line for line in log.read_text().splitlines() if "AIFIX_WEBHOOK_SECRET is a placeholder" in line]
    assert said and "openssl rand -hex 32" in said[0], log.read_text()
