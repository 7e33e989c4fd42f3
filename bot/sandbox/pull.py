"""Getting a job's image onto the host before its container starts, by the pull policy (`sandbox.pull`).

`missing` (the default) pulls an image the host does not have, `always` pulls before every job (a
tag that moves is followed), `never` refuses to start without it (offline hosts). The engine's own
progress lines go to the job's events as they come; a failure names the image and the engine's message.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Literal

from bot.errors import SandboxUnavailable
from bot.sandbox.capture import HeadTail, drain
from bot.sandbox.engine import Engine, engine_command, engine_env, last_line, run_engine

PullPolicy = Literal["missing", "always", "never"]
PULL_TIMEOUT_S = 1800.0
"""A pull that has not finished in half an hour is stopped (a large image over a slow link)."""


class ImageUnavailable(SandboxUnavailable):
    """The engine works but the job's image cannot be had: the job ends with an environment error, `auto` does not fall back."""


def image_id(engine: Engine, image: str) -> str | None:
    """The local image's id, or None when the host does not have it."""
    found = run_engine(engine, "image", "inspect", "--format", "{{.Id}}", image, timeout=30)
    if found.returncode != 0:
        return None
    return found.stdout.decode().strip() or None


def ensure_image(engine: Engine, image: str, policy: PullPolicy, progress: Callable[[str], None]) -> str:
    """The id of `image` on the host, pulled first when the policy asks for it."""
    present = image_id(engine, image)
    if present is not None and policy != "always":
        return present
    if present is None and policy == "never":
        raise ImageUnavailable(
            f"{engine}: image {image!r} (sandbox.image in .github/ai-fix.yml, else AIFIX_SANDBOX_IMAGE) is not present locally and the pull "
            f"policy is `never` (sandbox.pull, or AIFIX_SANDBOX_PULL); fetch or build it on this host first "
            f"(`{engine} pull {image}`, `{engine} load` or `{engine} build`), or allow pulls with `sandbox.pull: missing`"
        )
    why = "the policy is `always`" if present is not None else "it is not on this host"
    progress(f"pulling image {image} ({why})")
    pull(engine, image, progress)
    pulled = image_id(engine, image)
    if pulled is None:
        raise ImageUnavailable(f"{engine}: pulled {image!r} but the engine does not list it; check `{engine} images`")
    return pulled


def pull(engine: Engine, image: str, progress: Callable[[str], None], timeout: float = PULL_TIMEOUT_S) -> None:
    """`engine pull image`, each line it prints passed to `progress`; ImageUnavailable with its message on failure."""
    began = time.monotonic()
    proc = subprocess.Popen(
        [*engine_command(engine), "pull", image], env=engine_env(engine), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = _Lines(progress)
    finished = False
    try:
        with proc.stdout:
            finished = drain(proc.stdout.fileno(), lines, began + timeout)
    finally:  # also when `progress` raises (a job stopped mid-pull): no pull is left behind
        if not finished:
            proc.kill()
        code = proc.wait()
    lines.flush()
    if not finished:
        raise ImageUnavailable(
            f"{engine}: pulling {image!r} did not finish within {timeout:g} s; pull it by hand first"
        )
    if code != 0:
        message = last_line(lines.text().encode(), f"exit {code}")
        raise ImageUnavailable(
            f"{engine}: cannot pull image {image!r} (sandbox.image in .github/ai-fix.yml, else AIFIX_SANDBOX_IMAGE): {message}; check the image "
            f"name and that this host can reach its registry, or fetch it by hand (`{engine} pull {image}`)"
        )


class _Lines(HeadTail):
    """Output kept head and tail like a command's, and handed on a line at a time as it arrives."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        super().__init__(16 * 1024)
        self.progress = progress
        self._partial = b""

    def feed(self, data: bytes) -> None:
        super().feed(data)
        *complete, self._partial = (self._partial + data).split(b"\n")
        for line in complete:
            self._say(line)

    def flush(self) -> None:
        self._say(self._partial)
        self._partial = b""

    def _say(self, line: bytes) -> None:
        text = line.decode(errors="replace").strip()
        if text:
            self.progress(text)
