"""A setup secret goes only to the repositories the operator names for it: `ai-fix run` (the real Anthropic
client on the fake Messages API, bwrap) on the sample repository, whose config asks for a secret."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bot.secrets import env_secrets, secret_allowed, setup_secret_repos, setup_secrets
from tests.support.runs import DEMO_SCRIPT, config, run_local, sample_files

pytestmark = pytest.mark.bwrap

TOKEN = "index-token-4Fq8Lm2Zr7Xw"
SETUP = 'echo "ai-fix: token sha256 $(printf %s "$INDEX_TOKEN" | sha256sum | cut -c1-64)"'
ASKS = config() + f"setup_secrets: [INDEX_TOKEN]\nsetup:\n  - '{SETUP}'\n"


def test_the_patterns_and_the_variables() -> None:
    env = {
        "AIFIX_SETUP_SECRET_INDEX_TOKEN": TOKEN,
        "AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS": "octo/app, Octo-Org/* ,",
        "AIFIX_SETUP_SECRET_NPM_TOKEN": "npm-token-value-123",
    }
    assert setup_secrets(env) == {"INDEX_TOKEN": TOKEN, "NPM_TOKEN": "npm-token-value-123"}, "_REPOS is no secret"
    repos = setup_secret_repos(env)
    assert repos == {"INDEX_TOKEN": ("octo/app", "Octo-Org/*"), "NPM_TOKEN": ()}
    assert secret_allowed("octo/app", repos["INDEX_TOKEN"]) and secret_allowed("octo-org/web", repos["INDEX_TOKEN"])
    assert not secret_allowed("octo/app2", repos["INDEX_TOKEN"]) and not secret_allowed(
        "evil/app", repos["INDEX_TOKEN"]
    )
    assert not secret_allowed("octo/app", repos["NPM_TOKEN"]), "a secret no repository is named for goes to none"
    assert sorted(env_secrets(env)) == sorted([TOKEN, "npm-token-value-123"]), (
        "the list of repositories is not redacted"
    )


def test_a_repository_not_named_for_a_secret_gets_nothing_and_the_job_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN", TOKEN)
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS", "octo/app")
    run = run_local(tmp_path, DEMO_SCRIPT, files=sample_files(**{".github/ai-fix.yml": ASKS}))
    assert run.result.outcome == "handed_off" and run.fake.bodies == [], "stopped before the model"
    assert "the setup secret INDEX_TOKEN (setup_secrets in .github/ai-fix.yml) is not given to" in run.result.reason
    assert "AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS" in run.result.reason and "nothing was passed" in run.result.reason
    assert TOKEN not in (run.out / "pr.md").read_text() and TOKEN not in (run.out / "trace.jsonl").read_text()


def test_a_repository_named_for_a_secret_gets_it_in_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN", TOKEN)
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS", "*")  # a local run's repository is its path
    run = run_local(tmp_path, DEMO_SCRIPT, files=sample_files(**{".github/ai-fix.yml": ASKS}))
    assert run.result.outcome == "accepted", run.result.reason
    [baseline] = [r for r in run.trace() if r["kind"] == "baseline"]
    assert baseline["setup"]["notes"] == [f"ai-fix: token sha256 {hashlib.sha256(TOKEN.encode()).hexdigest()}"]
