"""A real image registry on loopback for pull tests: Debian's `docker-registry` (installed by scripts/setup.sh),
started by the test in a temporary folder, with the podman test image pushed to it. The `registry` fixture
(registered in tests/conftest.py) gives one per test.

podman reaches it over plain HTTP through a registries.conf marking it insecure (`CONTAINERS_REGISTRIES_CONF`,
which ai-fix's engine calls inherit); nothing else on the host is changed.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.sandbox.engine import run_engine
from tests.support.sandbox import build_test_image, skip_reason
from tests.support.server import wait_for_http
from tests.support.world import free_port


@dataclass(frozen=True)
class Registry:
    host: str
    """`127.0.0.1:PORT`."""
    image: str
    """The test image as the registry serves it."""

    def forget(self, image: str) -> None:
        """Make the host not have `image` (the image stays under its other names)."""
        run_engine("podman", "rmi", image)


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    """A registry serving the podman test image as `127.0.0.1:PORT/ai-fix/sandbox:1`; stopped afterwards."""
    if skip_reason("podman"):
        pytest.skip(f"this machine cannot run podman: {skip_reason('podman')}")
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (scripts/setup.sh installs Debian's docker-registry)")
    root = tmp_path / "registry"
    root.mkdir()
    host = f"127.0.0.1:{free_port()}"
    config = root / "registry.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"http:\n  addr: {host}\n"
    )
    (root / "registries.conf").write_text(f'[[registry]]\nlocation = "{host}"\ninsecure = true\n')
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(root / "registries.conf"))
    log = root / "registry.log"
    image = f"{host}/ai-fix/sandbox:1"
    with log.open("wb") as out:
        process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://{host}/v2/", process, log, timeout=20)
        pushed = run_engine("podman", "push", build_test_image(), image, timeout=120)
        assert pushed.returncode == 0, pushed.stderr.decode()
        yield Registry(host, image)
    finally:
        run_engine("podman", "rmi", image)  # the name a test pulled; the test image keeps its own
        process.terminate()
        process.wait(timeout=20)
