"""The operator's sandbox settings over a repository's: AIFIX_SANDBOX_IMAGE for a repository that names no image."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.commands.toolkit import model_opener, operator_sandbox, toolkit
from bot.contract.models import SandboxConfig
from bot.sandbox.base import SandboxJob
from bot.settings import Settings
from tests.support.sandbox import build_test_image, skip_reason


def test_the_operators_image_is_the_default_and_a_repositorys_own_wins() -> None:
    operator = Settings(sandbox_image="registry.acme.test/python:3.12", sandbox_pull="never")  # type: ignore[call-arg]
    assert operator_sandbox(SandboxConfig(), operator).image == "registry.acme.test/python:3.12"
    own = operator_sandbox(SandboxConfig(image="node:22", pull="always"), operator)
    assert (own.image, own.pull) == ("node:22", "never")  # AIFIX_SANDBOX_PULL still wins over sandbox.pull
    assert operator_sandbox(SandboxConfig(), Settings()).image == "python:3.12-slim"  # type: ignore[call-arg]
    assert SandboxConfig.model_validate(SandboxConfig().model_dump()).image is None  # a saved contract keeps "unset"


@pytest.mark.podman
def test_a_job_without_an_image_of_its_own_runs_in_the_operators(tmp_path: Path) -> None:
    if skip_reason("podman"):
        pytest.skip(f"podman does not run here: {skip_reason('podman')}")
    image = build_test_image()
    settings = Settings(sandbox="podman", sandbox_image=image, sandbox_ro_paths=[Path("/usr")], work_dir=tmp_path / "w")  # type: ignore[call-arg]
    kit = toolkit(settings, model=model_opener(None, settings))
    (tmp_path / "tree").mkdir()
    box = kit.open_sandbox(tmp_path / "tree", SandboxConfig(), SandboxJob(repo="o/r"))
    try:
        assert (box.name, box.config.image) == ("podman", image)
        ran = box.exec("echo in-the-operators-image", timeout=60)
        assert ran.exit_code == 0 and "in-the-operators-image" in ran.output
    finally:
        box.close()
