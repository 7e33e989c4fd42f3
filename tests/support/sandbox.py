"""Real sandboxes for tests: the locally built podman test image and a factory for any backend.

Other test folders use it as:

    from tests.support.sandbox import open_test_sandbox, skip_reason
    sandbox = open_test_sandbox("auto", workspace)   # started (podman here, else bwrap); call .close()

or, in a conftest.py, `from tests.support.sandbox_fixtures import kind, sandbox` for a test per backend.

The podman image is built once (`podman import` of a tiny root filesystem) under a fixed name, so
later runs reuse it; the host's /usr and the Python running the tests (with its venv, so pytest is
there) are bind-mounted read-only, which is what makes `python -m pytest` work inside.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from functools import cache
from pathlib import Path

import pytest

from bot.contract.models import SandboxConfig
from bot.sandbox.base import Sandbox
from bot.sandbox.bwrap import probe_bwrap
from bot.sandbox.engine import engine_command, engine_env, probe_engine
from bot.sandbox.select import open_sandbox

TEST_IMAGE = "localhost/ai-fix-test-sandbox:1"
"""Bump the tag when the root filesystem below changes."""

BACKENDS = [pytest.param("podman", marks=pytest.mark.podman), pytest.param("bwrap", marks=pytest.mark.bwrap)]
"""The real backends every sandbox test runs on (a test is skipped only where skip_reason() says why)."""

PASSWD = "root:x:0:0:root:/root:/bin/sh\nsandbox:x:10001:10001:sandbox:/tmp/home:/bin/sh\n"
GROUP = "root:x:0:\nsandbox:x:10001:\n"


def python_paths() -> list[Path]:
    """The interpreter running the tests and its venv, so the same Python and pytest run inside."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return sorted(paths)


def inside_env() -> dict[str, str]:
    return {"PATH": f"{Path(sys.prefix).resolve()}/bin:/usr/local/bin:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}


def _rootfs_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("etc", "tmp", "workspace", "proc", "dev", "sys", "usr", "root", "run", "var/tmp", "home"):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d in ("tmp", "var/tmp") else 0o755
            tar.addfile(info)
        for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
        files = {"etc/passwd": PASSWD.encode(), "etc/group": GROUP.encode()}
        if Path("/etc/ld.so.cache").is_file():
            files["etc/ld.so.cache"] = Path("/etc/ld.so.cache").read_bytes()
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@cache
def build_test_image() -> str:
    """The podman test image, imported once per machine under TEST_IMAGE."""
    cmd, env = engine_command("podman"), engine_env("podman")
    if subprocess.run([*cmd, "image", "exists", TEST_IMAGE], env=env, capture_output=True, check=False).returncode == 0:
        return TEST_IMAGE
    imported = subprocess.run(
        [*cmd, "import", "--change", "ENV=PATH=/usr/local/bin:/usr/bin:/bin", "-", TEST_IMAGE],
        input=_rootfs_tar(),
        env=env,
        capture_output=True,
        check=False,
    )
    if imported.returncode != 0:
        raise RuntimeError(f"podman import failed: {imported.stderr.decode(errors='replace')}")
    return TEST_IMAGE


@cache
def skip_reason(kind: str) -> str | None:
    """Why this machine cannot run the backend `kind` (podman, bwrap), or None."""
    if kind == "bwrap":
        return probe_bwrap()
    if kind in ("podman", "docker"):
        return probe_engine(kind)  # type: ignore[arg-type]
    return None


def image_config(**overrides: object) -> SandboxConfig:
    return SandboxConfig.model_validate({"image": TEST_IMAGE, **overrides})


def default_kind() -> str:
    """What `auto` picks in tests: podman when it runs here, else bwrap."""
    return "podman" if skip_reason("podman") is None else "bwrap"


def open_test_sandbox(kind: str, workspace: Path, config: SandboxConfig | None = None) -> Sandbox:
    """A started sandbox of `kind` (podman, bwrap, none or auto) over `workspace`, able to run the tests' Python and pytest."""
    if kind == "auto":
        kind = default_kind()
    if kind == "podman":
        build_test_image()
        ro_paths = [Path("/usr"), *python_paths()]
    else:
        ro_paths = python_paths()
    return open_sandbox(kind, workspace, config or image_config(), env=inside_env(), ro_paths=ro_paths)
