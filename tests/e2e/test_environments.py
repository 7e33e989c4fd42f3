"""GitHub jobs on podman: the job's image pulled from a registry, its setup snapshotted and reused, a setup secret.

The real worker runs the delivery pipeline (tests/support/worker.py) with AIFIX_SANDBOX=podman; the image
comes from a real registry on loopback (tests/support/registry.py); the sample repository's setup copies
its lock file into the project's environment folder and hashes the setup secret there, and a second check
prints what the checks see.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from bot.commands.run import execute
from bot.model.scripted import ScriptedModel
from bot.sandbox.engine import run_engine
from bot.sandbox.snapshots import REPO_LABEL, repo_slug
from bot.settings import load_settings
from tests.support.model import anthropic_model, serve_fake_api
from tests.support.registry import Registry
from tests.support.repos import make_repo
from tests.support.runs import sample_files
from tests.support.sandbox import inside_env, python_paths
from tests.support.webhooks import REPO
from tests.support.worker import Worker, open_worker
from tests.support.world import FIX_SCRIPT, JOB_LIMITS, PYTHON

pytestmark = pytest.mark.podman

TOKEN = f"index-token-{uuid.uuid4().hex}"
TITLES = {1: "add() subtracts", 2: "add() still subtracts", 3: "add() subtracts once more"}
BODY = "## Acceptance criteria\n- `add(2, 3)` returns 5\n"
SETUP = (
    "mkdir -p .ai-fix-env && printf '*\\n' > .ai-fix-env/.gitignore && cp requirements.txt .ai-fix-env/installed.txt"
    ' && printf %s "$INDEX_TOKEN" | sha256sum > .ai-fix-env/token.sha256'
    ' && echo "setup saw a token of ${#INDEX_TOKEN} characters: $INDEX_TOKEN"'
)


def config(image: str, run: str) -> str:
    return f"""checks:
  - name: tests
    run: env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PYTHON} -m pytest -q tests
    timeout: 60
  - name: environment
    run: cat .ai-fix-env/installed.txt .ai-fix-env/token.sha256 && env | sort
    timeout: 30
setup:
  - {json.dumps(SETUP + f" # {run}")}
setup_secrets: [INDEX_TOKEN]
sandbox:
  image: {image}
{JOB_LIMITS}"""


def podman_env(**extra: str) -> dict[str, str]:
    return {
        "AIFIX_SANDBOX": "podman",
        "AIFIX_SANDBOX_RO_PATHS": json.dumps([str(p) for p in [Path("/usr"), *python_paths()]]),
        "AIFIX_SANDBOX_ENV": json.dumps(inside_env()),
        **extra,
    }


def events(job: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in job["events"] if e["event"] == kind]


def run_job(worker: Worker, number: int) -> dict[str, Any]:
    worker.model_api.scripted = ScriptedModel(list(FIX_SCRIPT))
    worker.enqueue(number)
    worker.attempt()
    job = next(j for j in worker.jobs() if j["number"] == number)
    assert job["status"] == "done", (job["reason"], job["events"][-8:])
    return job


def snapshots_of_repo() -> list[str]:
    listed = run_engine(
        "podman", "images", "--filter", f"label={REPO_LABEL}={repo_slug(REPO)}", "--format", "{{.Repository}}:{{.Tag}}"
    )
    return listed.stdout.decode().split()


def test_pulled_image_setup_snapshot_reused_then_rebuilt_on_a_lock_change_and_a_secret_for_setup_only(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.forget(registry.image)
    files = {".github/ai-fix.yml": config(registry.image, uuid.uuid4().hex), "requirements.txt": "attrs==23.1.0\n"}
    env = podman_env(
        AIFIX_SANDBOX_SNAPSHOTS="1", AIFIX_SETUP_SECRET_INDEX_TOKEN=TOKEN, AIFIX_SETUP_SECRET_INDEX_TOKEN_REPOS=REPO
    )
    made: list[str] = []
    try:
        with open_worker(
            tmp_path, monkeypatch, issues={n: (t, BODY) for n, t in TITLES.items()}, files=files, env=env
        ) as worker:
            first = run_job(worker, 1)
            lines = [e["line"] for e in events(first, "loop")]
            assert f"pulling image {registry.image} (it is not on this host)" in lines
            assert lines.index(f"pulling image {registry.image} (it is not on this host)") < lines.index(
                "sandbox: podman"
            )
            assert any(line.startswith("Copying") for line in lines), "the engine's progress is in the job's events"
            [setup] = events(first, "setup")
            assert (setup["status"], setup["origin"], setup["commands"]) == ("ran", "config", 1) and setup["snapshot"]
            made.append(setup["snapshot"])

            second = run_job(worker, 2)
            [reused] = events(second, "setup")
            assert reused["status"] == "reused" and reused["snapshot"] == setup["snapshot"]
            assert reused["line"].startswith(f"reused the setup snapshot {setup['snapshot']}")
            assert not any(line.startswith("pulling image") for line in (e["line"] for e in events(second, "loop")))
            [progress] = [c["body"] for c in worker.github.comments[(REPO, 2)] if "### ai-fix progress" in c["body"]]
            assert "Setup: reused the setup snapshot" in progress

            # A change to the lock file on the default branch: the next job runs setup again and keeps only the new snapshot.
            clone = tmp_path / "change"
            subprocess.run(["git", "clone", "-q", str(worker.bare), str(clone)], check=True)
            (clone / "requirements.txt").write_text("attrs==23.2.0\n")
            for args in (
                ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "bump attrs"],
                ["push", "-q"],
            ):
                subprocess.run(["git", "-C", str(clone), *args], check=True)
            third = run_job(worker, 3)
            [rebuilt] = events(third, "setup")
            assert rebuilt["status"] == "ran" and rebuilt["snapshot"] not in ("", setup["snapshot"])
            made.append(rebuilt["snapshot"])
            assert snapshots_of_repo() == [rebuilt["snapshot"]], "AIFIX_SANDBOX_SNAPSHOTS=1 keeps the newest only"

            # What the checks saw: the restored environment (second job), the new lock file (third), never the secret.
            bodies = {
                n: pr["body"]
                for pr in worker.github.pulls_of(REPO)
                for n, t in TITLES.items()
                if pr["title"] == f"ai-fix: {t}"
            }
            assert sorted(bodies) == [1, 2, 3]
            token_hash = hashlib.sha256(TOKEN.encode()).hexdigest()
            assert all(token_hash in body for body in bodies.values()), "the setup command had the secret"
            assert "attrs==23.1.0" in bodies[2] and "attrs==23.2.0" in bodies[3]
            assert all("INDEX_TOKEN" not in body for body in bodies.values()), "no check had it in its environment"
            sent = [json.dumps(c.json) for c in worker.github.calls] + list(worker.model_api.bodies)
            assert not [text for text in sent if TOKEN in text]
            stored = json.dumps(worker.jobs())
            assert TOKEN not in stored and TOKEN[:16] not in stored
            traces = list((tmp_path / "work").rglob("*.trace.jsonl"))
            assert len(traces) == 3 and not [t for t in traces if TOKEN in t.read_text()]
    finally:
        for tag in made:
            run_engine("podman", "rmi", tag)


def test_never_with_the_image_missing_ends_the_run_before_any_model_turn(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.forget(registry.image)
    files = sample_files(**{".github/ai-fix.yml": config(registry.image, "never")})
    repo = make_repo(tmp_path / "repo", files)
    out = tmp_path / "out"
    log = io.StringIO()
    with serve_fake_api(ScriptedModel(list(FIX_SCRIPT))) as (fake, url):
        result = execute(
            "# add() subtracts\n\n" + BODY,
            repo,
            out,
            settings=load_settings(work_dir=tmp_path / "work", sandbox_pull="never", sandbox_env=inside_env()),
            model=lambda _choice: anthropic_model(url),
            model_name=None,
            sandbox_kind="podman",
            stream=log,
        )
    assert result.outcome == "handed_off" and fake.bodies == []
    assert result.reason.startswith(f"environment error during setup: podman: image {registry.image!r}")
    assert "not present locally and the pull policy is `never`" in result.reason
    assert "setup: failed" in log.getvalue()
    assert json.loads((out / "trace.jsonl").read_text().splitlines()[-1])["outcome"] == "handed_off"
