"""A setup secret goes only to the repositories the operator names for it, and a job whose setup leaves it in a
file stops before the model: `ai-fix run` (the real Anthropic client on the fake Messages API, bwrap) on the
sample repository, whose config asks for a secret."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from bot.model.scripted import call, turn
from bot.redact import secret_forms
from bot.secrets import env_secrets, secret_allowed, setup_secret_repos, setup_secrets
from tests.support.runs import DEMO_SCRIPT, VIEW, LocalRun, config, run_local, sample_files

pytestmark = pytest.mark.bwrap

TOKEN = "index-token-4Fq8Lm2Zr7Xw"
SETUP = 'echo "ai-fix: token sha256 $(printf %s "$INDEX_TOKEN" | sha256sum | cut -c1-64)"'
ASKS = config() + f"setup_secrets: [INDEX_TOKEN]\nsetup:\n  - '{SETUP}'\n"


def asks(command: str) -> dict[str, str]:
    """The sample repository with a config whose one setup command, given INDEX_TOKEN, is `command`."""
    return sample_files(
        **{".github/ai-fix.yml": config() + f"setup_secrets: [INDEX_TOKEN]\nsetup:\n  - {json.dumps(command)}\n"}
    )


def run_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> LocalRun:
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN", TOKEN)
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS", "*")  # a local run's repository is its path
    return run_local(tmp_path, DEMO_SCRIPT, files=asks(command))


def gives_away(text: str) -> list[str]:
    """The forms of TOKEN (as it is, backwards, encoded) that `text` holds."""
    return [form for form in secret_forms(TOKEN) if form in text]


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


@pytest.mark.parametrize(
    ("command", "where"),
    [
        pytest.param('mkdir -p .ai-fix-env && printf %s "$INDEX_TOKEN" | rev > .ai-fix-env/index.rev',
                     ".ai-fix-env/index.rev", id="reversed"),
        pytest.param("""printf '_auth=%s\\n' "$(printf 'ci-bot:%s' "$INDEX_TOKEN" | base64 -w0)" > .npmrc""",
                     ".npmrc", id="base64"),
        pytest.param('mkdir -p .ai-fix-env && printf %s "$INDEX_TOKEN" | sed "s/./& /g" > .ai-fix-env/spaced',
                     ".ai-fix-env/spaced", id="spaced characters"),
        pytest.param('mkdir -p .ai-fix-env && printf %s "$INDEX_TOKEN" | xxd > .ai-fix-env/dump',
                     ".ai-fix-env/dump", id="xxd"),
        pytest.param('mkdir -p .ai-fix-env && printf %s "$INDEX_TOKEN" | sed "s/./&,/g" > .ai-fix-env/list',
                     ".ai-fix-env/list", id="a comma list"),
    ],
)  # fmt: skip
def test_a_setup_that_leaves_the_secret_in_a_file_stops_the_job_before_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, where: str
) -> None:
    run = run_named(tmp_path, monkeypatch, command)
    assert run.result.outcome == "handed_off" and run.fake.bodies == [], "stopped before the model"
    assert f"setup left the setup secret INDEX_TOKEN in {where} (as written, backwards or encoded)" in run.result.reason
    assert "delete what it wrote with it" in run.result.reason
    [baseline] = [r for r in run.trace() if r["kind"] == "baseline"]
    assert baseline["setup"]["secret_files"] == [where] and baseline["checks"] is None, "no check ran"
    for text in (run.result.reason, run.log, (run.out / "pr.md").read_text(), (run.out / "trace.jsonl").read_text()):
        assert where in text and gives_away(text) == []


def test_a_setup_that_uses_the_secret_and_leaves_no_trace_of_it_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A credentials file for one install, removed by the same command; what stays holds the token's hash only.
    command = (
        'mkdir -p .ai-fix-env && printf "//npm.example/:_authToken=%s\\n" "$INDEX_TOKEN" > .npmrc'
        " && grep -c _authToken .npmrc && rm .npmrc"
        ' && printf %s "$INDEX_TOKEN" | sha256sum > .ai-fix-env/token.sha256'
    )
    run = run_named(tmp_path, monkeypatch, command)
    assert run.result.outcome == "accepted", run.result.reason
    [baseline] = [r for r in run.trace() if r["kind"] == "baseline"]
    assert baseline["setup"]["secret_files"] == [] and baseline["setup"]["searched"] >= 2, "the new files were searched"
    assert f"searched the {baseline['setup']['searched']} paths it wrote for its setup secrets in" in run.log
    assert ": none found" in run.log


def test_what_a_setup_given_secrets_created_outside_the_environment_folders_never_reaches_a_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forms no search finds: 7-character pieces in separate files, gzip then base64. The check prints whatever
    # is there and the model asks to read a piece.
    command = (
        'printf %s "$INDEX_TOKEN" | split -b 7 - piece- && printf %s "$INDEX_TOKEN" | gzip -n | base64 > token.gz.b64'
        " && mkdir -p .ai-fix-env && echo kept > .ai-fix-env/kept"
    )
    check = "cat piece-* token.gz.b64 .ai-fix-env/kept; python3 -m unittest discover -s tests -t . -v"
    yml = config(check) + f"setup_secrets: [INDEX_TOKEN]\nsetup:\n  - {json.dumps(command)}\n"
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN", TOKEN)
    monkeypatch.setenv("AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS", "*")
    peek = call("str_replace_based_edit_tool", command="view", path="piece-aa")
    script = [DEMO_SCRIPT[0], turn("Reading the code and what setup left.", VIEW, peek), *DEMO_SCRIPT[2:]]
    run = run_local(tmp_path, script, files=sample_files(**{".github/ai-fix.yml": yml}))
    assert run.result.outcome == "accepted", run.result.reason
    [baseline] = [r for r in run.trace() if r["kind"] == "baseline"]
    assert baseline["setup"]["withheld"] == ["piece-aa", "piece-ab", "piece-ac", "piece-ad", "token.gz.b64"]
    assert "removed what it created outside the environment folders (piece-aa," in run.log
    encoded = subprocess.run(
        'printf %s "$T" | gzip -n | base64', shell=True, env={"T": TOKEN}, capture_output=True, text=True, check=True
    ).stdout.split()
    pieces = [TOKEN[i : i + 7] for i in range(0, len(TOKEN) - 6, 7)]
    for text in ((run.out / "pr.md").read_text(), (run.out / "trace.jsonl").read_text(), run.log, *run.fake.bodies):
        assert not [p for p in [*pieces, *encoded] if p in text]
    assert "kept" in (run.out / "trace.jsonl").read_text(), "what it wrote in the environment folder stays"
