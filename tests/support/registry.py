"""A real image registry on loopback for pull tests: Debian's `docker-registry` (installed by scripts/setup.sh),
started by the test in a temporary folder, with the podman test image pushed to it.

podman reaches it over plain HTTP through a registries.conf marking it insecure (`CONTAINERS_REGISTRIES_CONF`,
which ai-fix's engine calls inherit); nothing else on the host is changed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.sandbox.engine import run_engine
from tests.support.sandbox import build_test_image
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


@contextmanager
def local_registry(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    """A registry serving the podman test image as `127.0.0.1:PORT/ai-fix/sandbox:1`; stopped afterwards."""
    if shutil.which("docker-registry") is None:
        pytest.skip("docker-registry is not installed (scripts/setup.sh installs Debian's docker-registry)")
    port = free_port()
    host = f"127.0.0.1:{port}"
    config = root / "registry.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {root / 'registry'}\n"
        f"http:\n  addr: {host}\n"
    )
    registries = root / "registries.conf"
    registries.write_text(f'[[registry]]\nlocation = "{host}"\ninsecure = true\n')
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(registries))
    with (root / "registry.log").open("wb") as log:
        process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://{host}/v2/", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"docker-registry did not start:\n{(root / 'registry.log').read_text()}")
            time.sleep(0.05)
        image = f"{host}/ai-fix/sandbox:1"
        pushed = run_engine("podman", "push", build_test_image(), image, timeout=120)
        assert pushed.returncode == 0, pushed.stderr.decode()
        yield Registry(host, image)
    finally:
        process.terminate()
        process.wait(timeout=20)
