"""Preparing the environment and the checks around it, in real sandboxes: the setup key, setup secrets, the
package cache only setup sees, a setup that leaves its secret behind, and detected checks the environment cannot
run set aside."""

from __future__ import annotations

import sys
import uuid
from hashlib import sha256
from pathlib import Path

import pytest

from bot.checks.bound import SandboxChecks
from bot.checks.setup import created, setup_key
from bot.contract.models import Check, SandboxConfig, TaskContract
from bot.sandbox.base import SandboxJob
from bot.sandbox.engine import run_engine
from bot.sandbox.select import open_sandbox
from bot.sandbox.snapshots import REPO_LABEL, repo_slug
from bot.vocabulary import FAILED
from tests.support.pytest_samples import calc_repo, write_repo
from tests.support.sandbox import (
    build_test_image,
    image_config,
    inside_env,
    open_test_sandbox,
    python_paths,
    skip_reason,
)
from tests.support.server import tcp_listener

PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q tests/test_calc.py -k test_ok"


def contract(**fields: object) -> TaskContract:
    return TaskContract.model_validate({"status": "ready", **fields})


def test_created_is_the_topmost_new_paths() -> None:
    before = {"src", "src/pkg", "src/pkg/a.py", "README"}
    after = ["README", "src", "src/pkg", "src/pkg/a.py", "src/pkg.egg-info", "src/pkg.egg-info/PKG-INFO",
             "node_modules", "node_modules/x", ".ai-fix-env", ".ai-fix-env/venv", ".ai-fix-env/venv/bin"]  # fmt: skip
    assert created(before, after) == [".ai-fix-env", "node_modules", "src/pkg.egg-info"]


def test_the_setup_key_follows_the_setup_and_its_inputs_only(tmp_path: Path) -> None:
    write_repo(tmp_path, {"requirements.txt": "a==1\n", "src/app.py": "x = 1\n", "deps/extra.lock": "b==1\n"})
    c = contract(setup=["pip install -r requirements.txt"])
    key = setup_key(c, tmp_path)
    assert setup_key(contract(), tmp_path) == "", "no setup, no key"
    (tmp_path / "src/app.py").write_text("x = 2\n")
    write_repo(tmp_path, {".ai-fix-env/venv/pyvenv.cfg": "home = /x\n", "node_modules/requirements.txt": "no"})
    assert setup_key(c, tmp_path) == key, "the code and installed dependencies are not inputs"
    (tmp_path / "requirements.txt").write_text("a==2\n")
    assert setup_key(c, tmp_path) != key
    assert setup_key(
        contract(setup=["pip install -r requirements.txt"], setup_secrets=["TOKEN"]), tmp_path
    ) != setup_key(c, tmp_path)
    custom = contract(setup=["make deps"], sandbox=SandboxConfig(setup_inputs=["deps/*.lock"]))
    before = setup_key(custom, tmp_path)
    (tmp_path / "requirements.txt").write_text("a==3\n")
    assert setup_key(custom, tmp_path) == before
    (tmp_path / "deps/extra.lock").write_text("b==2\n")
    assert setup_key(custom, tmp_path) != before


@pytest.mark.parametrize(
    "kind", [pytest.param("podman", marks=pytest.mark.podman), pytest.param("bwrap", marks=pytest.mark.bwrap)]
)
def test_setup_secrets_reach_setup_commands_only_and_a_missing_one_is_named(kind: str, tmp_path: Path) -> None:
    if skip_reason(kind):
        pytest.skip(f"this machine cannot run {kind}: {skip_reason(kind)}")
    workspace = calc_repo(tmp_path / "ws")
    secret = "s3cr3t-value-for-setup-only"
    task = contract(
        # Into the environment folder: what a setup given secrets writes elsewhere is removed after it.
        setup=[
            'mkdir -p .ai-fix-env && printf %s "$INDEX_TOKEN" | sha256sum > .ai-fix-env/setup-ok'
            ' && echo "the token is $INDEX_TOKEN" && exit 4'
        ],
        setup_secrets=["INDEX_TOKEN"],
        checks=[Check(name="env", run="env")],
    )
    box = open_test_sandbox(kind, workspace)
    try:
        missing = SandboxChecks(box, task, [secret]).setup()
        assert missing.status == "failed" and not (workspace / ".ai-fix-env/setup-ok").exists()
        assert (
            "INDEX_TOKEN" in missing.problem
            and "set AIFIX_SETUP_SECRET_INDEX_TOKEN on the ai-fix host" in missing.problem
        )
        checks = SandboxChecks(box, task, [secret], setup_env={"INDEX_TOKEN": secret})
        failed = checks.setup()
        assert (workspace / ".ai-fix-env/setup-ok").read_text().split()[0] == sha256(secret.encode()).hexdigest(), (
            "it had the secret"
        )
        assert failed.status == "failed" and "exit 4" in failed.problem and secret not in failed.problem
        env = checks.run(None, commit="c", changed_files=[]).results[0]
        assert env.status == "pass" and "INDEX_TOKEN" not in env.output and secret not in env.output
    finally:
        box.close()


@pytest.mark.bwrap
def test_bwrap_gives_setup_commands_the_repositorys_package_cache_and_checks_never(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    cache = tmp_path / "cache" / "owner--repo"
    workspace = calc_repo(tmp_path / "ws")
    job = SandboxJob(repo="owner/repo", cache_dir=cache)
    probe = 'mkdir -p "$PIP_CACHE_DIR" && echo wheel > "$PIP_CACHE_DIR/w" && ls /tmp'
    for _ in range(2):  # the second job of the repository finds what the first one cached
        box = open_sandbox("bwrap", workspace, SandboxConfig(), ro_paths=python_paths(), job=job)
        try:
            setup = box.exec(f'cat "$PIP_CACHE_DIR/w" 2>/dev/null; {probe}', timeout=30, setup=True)
            check = box.exec('echo "cache=${PIP_CACHE_DIR:-unset}"; ls /tmp', timeout=30)
        finally:
            box.close()
        assert setup.exit_code == 0, setup.output
        assert "ai-fix-cache" in setup.output
        assert check.output.splitlines()[0] == "cache=unset" and "ai-fix-cache" not in check.output
    assert setup.output.startswith("wheel\n") and (cache / "pip" / "w").read_text() == "wheel\n"


@pytest.mark.bwrap
def test_offline_setup_has_no_network_no_package_cache_and_no_setup_secret(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    workspace = calc_repo(tmp_path / "ws")
    secret = "s3cr3t-value-for-online-setup-only"
    config = SandboxConfig(network="setup")
    job = SandboxJob(repo="owner/repo", cache_dir=tmp_path / "cache")
    with tcp_listener() as (port, accepted):
        connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close()"
        probe = (
            # The token's hash only: setup leaving the token itself in a file would stop the job.
            # Into the environment folder: what a setup given secrets writes elsewhere is removed after it.
            'mkdir -p .ai-fix-env && token=$([ -n "$INDEX_TOKEN" ] && printf %s "$INDEX_TOKEN" | sha256sum | cut -c1-16'
            ' || echo unset) && echo "token=$token cache=${PIP_CACHE_DIR:-unset}" >> .ai-fix-env/probe'
            f' && ({sys.executable} -c "{connect}" 2>/dev/null && echo connected || echo no-network) >> .ai-fix-env/probe'
        )
        task = contract(setup=[probe], setup_secrets=["INDEX_TOKEN"], sandbox=config)
        box = open_sandbox("bwrap", workspace, config, env=inside_env(), ro_paths=python_paths(), job=job)
        try:
            checks = SandboxChecks(box, task, [secret], setup_env={"INDEX_TOKEN": secret})
            online, offline = checks.setup(), checks.setup(offline=True)
        finally:
            box.close()
        assert len(accepted) == 1, "only the setup that is not offline connected"
    assert (online.status, offline.status) == ("ran", "ran")
    assert (workspace / ".ai-fix-env/probe").read_text().splitlines() == [
        f"token={sha256(secret.encode()).hexdigest()[:16]} cache=/tmp/ai-fix-cache/pip",
        "connected",
        "token=unset cache=unset",
        "no-network",
    ]


@pytest.mark.parametrize(
    "kind", [pytest.param("podman", marks=pytest.mark.podman), pytest.param("bwrap", marks=pytest.mark.bwrap)]
)
def test_what_a_setup_with_secrets_left_outside_the_workspace_never_reaches_the_checks(
    kind: str, tmp_path: Path
) -> None:
    if skip_reason(kind):
        pytest.skip(f"this machine cannot run {kind}: {skip_reason(kind)}")
    workspace = calc_repo(tmp_path / "ws")
    secret = "s3cr3t-value-for-setup-only"
    leaves = 'mkdir -p "$HOME" && printf %s "$INDEX_TOKEN" | tee "$HOME/.npmrc" > "$AI_FIX_ARTIFACTS/token"'
    look = 'cat "$HOME/.npmrc" "$AI_FIX_ARTIFACTS/token"; echo; cat .ai-fix-env/kept'
    keep = "mkdir -p .ai-fix-env && echo environment > .ai-fix-env/kept"
    box = open_test_sandbox(kind, workspace)
    try:
        without = box.exec(f"{leaves} && {keep}", timeout=30, setup=True, env={"INDEX_TOKEN": secret})
        assert without.exit_code == 0 and secret in box.exec(look, timeout=30).output, "left there, checks read it"
        (workspace / ".ai-fix-env/kept").unlink()
        task = contract(
            setup=[f"{leaves} && {keep}"],
            setup_secrets=["INDEX_TOKEN"],
            checks=[Check(name="look", run=look)],
        )
        report = SandboxChecks(box, task, [secret], setup_env={"INDEX_TOKEN": secret}).setup()
        seen = box.exec(look, timeout=30)
    finally:
        box.close()
    assert report.status == "ran" and report.secret_files == [], report.problem
    assert secret not in seen.output and seen.output.splitlines()[-1] == "environment", seen.output


@pytest.mark.podman
def test_a_setup_that_leaves_its_secret_behind_keeps_no_snapshot(tmp_path: Path) -> None:
    if skip_reason("podman"):
        pytest.skip(f"this machine cannot run podman: {skip_reason('podman')}")
    build_test_image()
    repo, secret = f"owner/leak-{uuid.uuid4().hex[:8]}", "s3cr3t-value-for-setup-only"
    leaves = 'mkdir -p .ai-fix-env && printf %s "$INDEX_TOKEN" | rev > .ai-fix-env/token'
    reports = {}
    try:
        for name, command in (("cleans up", f"{leaves} && rm .ai-fix-env/token"), ("leaves it", leaves)):
            workspace = calc_repo(tmp_path / name)
            task = contract(setup=[command], setup_secrets=["INDEX_TOKEN"])
            job = SandboxJob(repo=repo, setup_key=setup_key(task, workspace), keep_snapshots=2)
            ro_paths = [Path("/usr"), *python_paths()]
            box = open_sandbox("podman", workspace, image_config(), env=inside_env(), ro_paths=ro_paths, job=job)
            try:
                reports[name] = SandboxChecks(box, task, [secret], setup_env={"INDEX_TOKEN": secret}).setup()
            finally:
                box.close()
        listed = run_engine(
            "podman",
            "images",
            "--filter",
            f"label={REPO_LABEL}={repo_slug(repo)}",
            "--format",
            "{{.Repository}}:{{.Tag}}",
        )
    finally:
        for report in reports.values():
            if report.snapshot:
                run_engine("podman", "rmi", report.snapshot)
    kept, left = reports["cleans up"], reports["leaves it"]
    assert kept.status == "ran" and kept.snapshot, "the same setup, cleaned up, is snapshotted"
    assert left.status == FAILED and left.secret_files == [".ai-fix-env/token"] and left.snapshot == ""
    assert listed.stdout.decode().split() == [kept.snapshot], "no snapshot holds the secret"


@pytest.mark.bwrap
def test_a_guessed_setup_that_fails_after_leaving_its_secret_stops_the_job(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    workspace = calc_repo(tmp_path / "ws")
    secret = "s3cr3t-value-for-setup-only"
    task = contract(
        setup=['printf %s "$INDEX_TOKEN" | base64 > .token.b64 && exit 3'],
        setup_origin="detected",
        setup_secrets=["INDEX_TOKEN"],
    )
    box = open_test_sandbox("bwrap", workspace)
    try:
        report = SandboxChecks(box, task, [secret], setup_env={"INDEX_TOKEN": secret}).setup()
    finally:
        box.close()
    assert report.status == FAILED and report.secret_files == [".token.b64"]
    assert not report.guess_failed, "a failed guess goes on with the checks; one that left the secret does not"
    assert report.describe().startswith("failed after") and secret not in report.describe()


@pytest.mark.bwrap
def test_detected_checks_the_environment_cannot_run_are_set_aside_and_configured_ones_stay_errors(
    tmp_path: Path,
) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    workspace = calc_repo(tmp_path / "ws")
    checks = [
        Check(name="pytest", run=PYTEST, origin="detected"),
        Check(name="ruff", run="no-such-ruff check .", origin="detected"),
        Check(name="lint", run="no-such-linter .", origin="config"),
    ]
    box = open_test_sandbox("bwrap", workspace)
    try:
        bound = SandboxChecks(box, contract(checks=checks), [])
        base = bound.baseline("base")
        later = bound.run(None, commit="c", changed_files=[])
        named = bound.run(["ruff", "pytest"], commit="c", changed_files=[])
    finally:
        box.close()
    assert [(r.name, r.status) for r in base.results] == [("pytest", "pass"), ("ruff", "not_run"), ("lint", "error")]
    assert base.results[1].reason.startswith("the environment cannot run it: command not found: no-such-ruff")
    assert [r.name for r in later.results] == ["pytest", "lint"], "a set-aside check is not run again"
    assert [r.name for r in named.results] == ["pytest"]


@pytest.mark.bwrap
def test_setup_gets_the_version_git_would_give_and_the_checks_do_not(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    task = contract(setup=["echo $SETUPTOOLS_SCM_PRETEND_VERSION $PDM_BUILD_SCM_VERSION > version.txt"])
    box = open_test_sandbox("bwrap", tmp_path)
    try:
        report = SandboxChecks(box, task, [], described="v2.3.0-4-gabc1234").setup()
        checks = box.exec('echo "[$SETUPTOOLS_SCM_PRETEND_VERSION]"', timeout=10)
    finally:
        box.close()
    assert report.status == "ran" and report.searched == 0, "a version is not a secret: nothing was searched"
    assert (tmp_path / "version.txt").read_text() == "2.3.1.dev4+gabc1234 2.3.1.dev4+gabc1234\n"
    assert checks.output == "[]\n"
