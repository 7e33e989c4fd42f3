"""`ai-fix doctor` on a real site: the fake GitHub and a fake Messages API on loopback, a real SQLite store and
PostgreSQL address, the real podman and bwrap sandboxes, a real ai-fix service as the public URL. All pass on
a good setup; each thing broken gives exit 1 and its own line with the fix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.commands.main import main
from bot.model.scripted import ScriptedModel
from bot.queue.migrate import migrations
from bot.queue.store import Store
from tests.support.fake_github import FakeGitHub
from tests.support.model import serve_fake_api
from tests.support.processes import AI_FIX, ROOT, free_port
from tests.support.sandbox import TEST_IMAGE, build_test_image, skip_reason

KEY = "sk-ant-doctor-test-key-0123456789"
CHECKS = ["settings", "app", "installations", "webhook secret", "database", "sandbox", "model", "public URL", "disk"]


@pytest.fixture
def model_api():
    with serve_fake_api(ScriptedModel([])) as (fake, url):
        fake.api_key = KEY
        yield fake, url


@pytest.fixture
def site(tmp_path: Path, fake_github: FakeGitHub, github_url: str, model_api, start_service) -> dict[str, str]:
    """A good setup's environment: every check passes with it."""
    database = f"sqlite:///{tmp_path / 'ai-fix.db'}"
    store = Store.from_url(database)
    store.init_schema()
    store.close()
    public = start_service()  # a real ai-fix service: the public URL's /healthz answers as ai-fix does
    kind = "podman" if skip_reason("podman") is None else "bwrap"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIFIX_", "ANTHROPIC_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        AIFIX_APP_ID=str(fake_github.app_id),
        AIFIX_PRIVATE_KEY=fake_github.private_key_pem,
        AIFIX_WEBHOOK_SECRET="b5c8f0e1d2a34c6f9e7d1a2b3c4d5e6f",
        AIFIX_GITHUB_API_URL=github_url,
        AIFIX_DATABASE_URL=database,
        AIFIX_ANTHROPIC_API_KEY=KEY,
        AIFIX_ANTHROPIC_BASE_URL=model_api[1],
        AIFIX_PUBLIC_URL=public.url,
        AIFIX_WORK_DIR=str(tmp_path / "work"),
        AIFIX_SANDBOX=kind,
    )
    if kind == "podman":  # the tests' image is a bare root: the host's /usr gives it a shell
        env.update(AIFIX_SANDBOX_IMAGE=build_test_image(), AIFIX_SANDBOX_RO_PATHS='["/usr"]')
    return env


def doctor(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, str]]:
    """Run `ai-fix doctor` in this process with `env`; its exit code and each check's line, by name."""
    for name in [k for k in os.environ if k.startswith(("AIFIX_", "ANTHROPIC_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        if name.startswith(("AIFIX_", "ANTHROPIC_")):
            monkeypatch.setenv(name, value)
    code = main(["doctor"])
    lines = {}
    for text in capsys.readouterr().out.splitlines():
        for check in CHECKS:
            if text[6:].startswith(f"{check}: "):
                lines[check] = text
    assert list(lines) == CHECKS, lines
    return code, lines


def test_a_good_setup_passes_every_check_as_the_installed_command_and_in_json(site, tmp_path):
    done = subprocess.run(
        [AI_FIX, "doctor"], env=site, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line[:4] for line in lines[:9]] == ["ok  "] * 9 and lines[-1] == "every check passed"
    said = "\n".join(lines)
    assert "app: ai-fix (id " in said and "GitHub accepts its key" in said
    assert "installations: Codertocat (2 repositories: Codertocat/Hello-World, Codertocat/Other)" in said
    assert "database: reachable and migrated (sqlite)" in said
    assert "model: claude-sonnet-5-5 answered" in said and "claude-haiku-4-5 answered" in said
    if site["AIFIX_SANDBOX"] == "podman":
        assert f"sandbox: podman ran a command in {TEST_IMAGE}" in said
    as_json = subprocess.run(
        [AI_FIX, "doctor", "--json"], env=site, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    found = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and found["ok"] is True
    assert [c["name"] for c in found["checks"]] == CHECKS and {c["status"] for c in found["checks"]} == {"ok"}


def test_a_key_that_is_not_the_apps(site, fake_github, monkeypatch, capsys):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    code, lines = doctor({**site, "AIFIX_PRIVATE_KEY": pem.decode()}, monkeypatch, capsys)
    assert code == 1
    assert lines["app"].startswith("FAIL  app: GitHub GET /app answered 401")
    assert "→ the key is not this App's: generate a private key on the App's settings page" in lines["app"]
    assert lines["installations"].startswith("skip  installations: the App is not reachable")
    assert [n for n, line in lines.items() if line.startswith("FAIL")] == ["app"]
    assert [v.split(":")[0] for v in fake_github.violations] == ["apps/get-authenticated"]  # the JWT GitHub refused
    fake_github.violations.clear()


def test_a_key_that_cannot_sign_at_all(site, monkeypatch, capsys):
    broken = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
    code, lines = doctor({**site, "AIFIX_PRIVATE_KEY": broken}, monkeypatch, capsys)
    assert code == 1 and [n for n, line in lines.items() if line.startswith("FAIL")] == ["app"]
    assert "app: the App's private key cannot sign its JWT (InvalidKeyError" in lines["app"]
    assert "set AIFIX_PRIVATE_KEY or AIFIX_PRIVATE_KEY_PATH to the .pem downloaded" in lines["app"]


@pytest.mark.parametrize("where", ["postgres down", "no file", "not migrated"])
def test_a_database_that_is_unreachable_or_not_migrated(site, tmp_path, monkeypatch, capsys, where):
    url = {
        "postgres down": f"postgresql://ai-fix@127.0.0.1:{free_port()}/aifix",
        "no file": f"sqlite:///{tmp_path / 'nowhere.db'}",
        "not migrated": f"sqlite:///{tmp_path / 'empty.db'}",
    }[where]
    (tmp_path / "empty.db").touch()
    code, lines = doctor({**site, "AIFIX_DATABASE_URL": url}, monkeypatch, capsys)
    assert code == 1 and [n for n, line in lines.items() if line.startswith("FAIL")] == ["database"]
    expected = {
        "postgres down": ("database: unreachable: ", "→ check AIFIX_DATABASE_URL and that the database server is up"),
        "no file": (
            f"database: the SQLite file {tmp_path / 'nowhere.db'} does not exist yet",
            "→ run `ai-fix migrate`",
        ),
        "not migrated": (
            f"database: reachable, not migrated: {len(migrations('sqlite'))} to apply (0001_tables",
            "→ run `ai-fix migrate`",
        ),
    }[where]
    assert all(part in lines["database"] for part in expected), lines["database"]
    assert not (tmp_path / "nowhere.db").exists(), "looking at the database never creates one"


@pytest.mark.podman
def test_a_missing_image(site, monkeypatch, capsys):
    if skip_reason("podman"):
        pytest.skip(f"podman does not run here: {skip_reason('podman')}")
    missing = "localhost/ai-fix-doctor-missing:1"
    env = {**site, "AIFIX_SANDBOX": "podman", "AIFIX_SANDBOX_IMAGE": missing, "AIFIX_SANDBOX_PULL": "never"}
    code, lines = doctor(env, monkeypatch, capsys)
    assert code == 1 and [n for n, line in lines.items() if line.startswith("FAIL")] == ["sandbox"]
    assert f"sandbox: podman: image '{missing}'" in lines["sandbox"] and "is not present locally" in lines["sandbox"]
    assert (
        f"→ make {missing} available on this host (pull, load or build it), or set AIFIX_SANDBOX_IMAGE"
        in lines["sandbox"]
    )


def test_a_model_key_the_provider_refuses(site, model_api, monkeypatch, capsys):
    code, lines = doctor({**site, "AIFIX_ANTHROPIC_API_KEY": "sk-ant-wrong-key-0123456789"}, monkeypatch, capsys)
    assert code == 1 and [n for n, line in lines.items() if line.startswith("FAIL")] == ["model"]
    assert "model: claude-sonnet-5-5: the Messages API answered 401: 401 invalid x-api-key" in lines["model"]
    assert "→ check the provider's key (AIFIX_ANTHROPIC_API_KEY" in lines["model"]
    assert "sk-ant-wrong-key" not in lines["model"]
    sent = model_api[0].headers[-1]
    assert "sk-ant-wrong-key-0123456789" in (sent.get("x-api-key") or sent["authorization"])  # it did ask the provider


def test_no_model_key_weak_secret_no_installation_and_an_unreachable_public_url(site, fake_github, monkeypatch, capsys):
    fake_github.installations.clear()
    env = {**site, "AIFIX_WEBHOOK_SECRET": "change-me", "AIFIX_PUBLIC_URL": f"http://127.0.0.1:{free_port()}"}
    del env["AIFIX_ANTHROPIC_API_KEY"]
    code, lines = doctor(env, monkeypatch, capsys)
    assert code == 1
    assert [n for n, line in lines.items() if line.startswith("FAIL")] == [
        "installations",
        "webhook secret",
        "model",
        "public URL",
    ]
    assert (
        "installations: the App is installed nowhere → install it: https://github.com/apps/" in lines["installations"]
    )
    assert "is a placeholder, not a secret; make one with `openssl rand -hex 32`" in lines["webhook secret"]
    assert "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set" in lines["model"]
    assert "is not reachable from here: ConnectError" in lines["public URL"]


def test_settings_that_do_not_parse_skip_what_needs_them(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, lines = doctor({"AIFIX_APP_ID": "twelve"}, monkeypatch, capsys)
    assert code == 1
    assert lines["settings"].startswith("FAIL  settings: AIFIX_APP_ID: Input should be a valid integer")
    assert all(lines[name].startswith("skip") for name in CHECKS[1:])
