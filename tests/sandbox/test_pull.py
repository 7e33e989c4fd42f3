"""The pull policy, against a real registry on loopback (tests/support/registry.py) and the real podman."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.contract.models import SandboxConfig
from bot.errors import SandboxUnavailable
from bot.sandbox.base import SandboxJob
from bot.sandbox.pull import ImageUnavailable, image_id
from bot.sandbox.select import open_sandbox
from tests.support.registry import Registry
from tests.support.sandbox import image_config, inside_env, python_paths

pytestmark = pytest.mark.podman


def opened(workspace: Path, config: SandboxConfig, progress: list[str], kind: str = "podman") -> str:
    """Open the sandbox (pulling as the policy says), run one command in it, close it; its output."""
    workspace.mkdir(exist_ok=True)
    box = open_sandbox(
        kind,
        workspace,
        config,
        env=inside_env(),
        ro_paths=[Path("/usr"), *python_paths()],
        job=SandboxJob(progress=progress.append),
    )
    try:
        return box.exec("echo up", timeout=30).output
    finally:
        box.close()


def test_a_missing_image_is_pulled_before_the_sandbox_starts_with_its_progress(
    registry: Registry, tmp_path: Path
) -> None:
    registry.forget(registry.image)
    assert image_id("podman", registry.image) is None
    progress: list[str] = []
    assert opened(tmp_path / "ws", image_config(image=registry.image), progress) == "up\n"
    assert progress[0] == f"pulling image {registry.image} (it is not on this host)"
    assert any(line.startswith("Copying") for line in progress) and any("manifest" in line for line in progress)
    assert image_id("podman", registry.image) is not None
    again: list[str] = []
    opened(tmp_path / "ws", image_config(image=registry.image), again)
    assert again == [], "present now: `missing` does not pull again"
    opened(tmp_path / "ws", image_config(image=registry.image, pull="always"), again)
    assert again[0] == f"pulling image {registry.image} (the policy is `always`)"


def test_never_refuses_a_missing_image_with_the_fix_and_auto_does_not_fall_back(
    registry: Registry, tmp_path: Path
) -> None:
    registry.forget(registry.image)
    progress: list[str] = []
    for kind in ("podman", "auto"):
        with pytest.raises(ImageUnavailable) as err:
            opened(tmp_path / "ws", image_config(image=registry.image, pull="never"), progress, kind)
        message = str(err.value)
        assert f"image {registry.image!r}" in message and "not present locally" in message
        assert "`never`" in message and "AIFIX_SANDBOX_PULL" in message and f"podman pull {registry.image}" in message
    assert progress == [] and image_id("podman", registry.image) is None


def test_a_failed_pull_names_the_image_and_the_engines_message(registry: Registry, tmp_path: Path) -> None:
    missing = f"{registry.host}/ai-fix/no-such-image:1"
    progress: list[str] = []
    with pytest.raises(SandboxUnavailable) as err:
        opened(tmp_path / "ws", image_config(image=missing), progress)
    message = str(err.value)
    assert message.startswith(f"podman: cannot pull image {missing!r}")
    assert "manifest unknown" in message, message  # the registry's own answer, through the engine
    assert progress[0] == f"pulling image {missing} (it is not on this host)"
