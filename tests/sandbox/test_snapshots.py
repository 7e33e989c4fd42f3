"""Setup snapshots on podman: what setup made, private files and folders included, comes back in a later job."""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest

from bot.checks.bound import SandboxChecks
from bot.checks.models import SetupReport
from bot.checks.setup import setup_key
from bot.contract.models import TaskContract
from bot.sandbox.base import SandboxJob
from bot.sandbox.engine import run_engine
from bot.sandbox.select import open_sandbox
from tests.support.pytest_samples import calc_repo
from tests.support.sandbox import build_test_image, image_config, inside_env, python_paths, skip_reason

pytestmark = pytest.mark.podman

# As pdm-backend's editable build leaves `.pdm-build`: a folder only its owner may enter, a file only it may read.
PRIVATE = (
    "mkdir -p .ai-fix-env/venv .pdm-build && echo 'import sys' > .pdm-build/_unearth.py"
    " && chmod 700 .pdm-build && chmod 600 .pdm-build/_unearth.py && echo environment > .ai-fix-env/venv/marker"
)


def _setup(workspace: Path, task: TaskContract, repo: str) -> SetupReport:
    job = SandboxJob(repo=repo, setup_key=setup_key(task, workspace), keep_snapshots=1)
    ro_paths = [Path("/usr"), *python_paths()]
    box = open_sandbox("podman", workspace, image_config(), env=inside_env(), ro_paths=ro_paths, job=job)
    try:
        return SandboxChecks(box, task, []).setup()
    finally:
        box.close()


def test_a_snapshot_holding_a_private_folder_is_restored_with_its_modes(tmp_path: Path) -> None:
    if skip_reason("podman"):
        pytest.skip(f"this machine cannot run podman: {skip_reason('podman')}")
    build_test_image()
    repo = f"owner/private-{uuid.uuid4().hex[:8]}"
    task = TaskContract.model_validate({"status": "ready", "setup": [PRIVATE]})
    first_ws, second_ws = calc_repo(tmp_path / "first"), calc_repo(tmp_path / "second")
    first = _setup(first_ws, task, repo)
    try:
        second = _setup(second_ws, task, repo)
    finally:
        if first.snapshot:
            run_engine("podman", "rmi", "-f", first.snapshot)
    assert first.status == "ran" and first.snapshot, first.describe()
    assert (second.status, second.snapshot) == ("reused", first.snapshot), "the second job restores the snapshot"
    built = second_ws / ".pdm-build"
    assert stat.S_IMODE(built.stat().st_mode) & 0o077 == 0, "the folder stays private"
    assert stat.S_IMODE((built / "_unearth.py").stat().st_mode) == 0o600
    assert (built / "_unearth.py").read_text() == "import sys\n"
    assert (second_ws / ".ai-fix-env/venv/marker").read_text() == "environment\n"
