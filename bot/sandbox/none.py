"""No isolation at all: commands run on the host as ai-fix's own user. For development only."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.sandbox.artifacts import empty, read_artifact
from bot.sandbox.base import ExecResult
from bot.sandbox.environment import host_sandbox_env
from bot.sandbox.process import run_process

log = logging.getLogger(__name__)

WARNING = (
    "SANDBOX IS 'none': NOTHING IS ISOLATED. Repository code runs on this host as this user, with its files, "
    "network and processes; use it only for development on repositories you trust"
)


class NoSandbox:
    name = "none"

    def __init__(self, workspace: Path, config: SandboxConfig, *, env: Mapping[str, str] | None = None) -> None:
        self.workspace = workspace.resolve()
        self.workdir = str(self.workspace)
        self.config = config
        self._env = dict(env or {})
        self._artifacts: Path | None = None
        self._home = ""
        self.artifact_dir = ""

    def start(self) -> None:
        log.warning(WARNING)
        self._artifacts = Path(tempfile.mkdtemp(prefix="ai-fix-none-"))
        self.artifact_dir = str(self._artifacts)
        self._home = tempfile.mkdtemp(prefix="ai-fix-none-home-")

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        setup: bool = False,
        output_cap: int = 65536,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        # The environment is still the allowlist: even here ai-fix's own secrets stay out.
        full_env = host_sandbox_env(self.workdir, (), self._env, env)
        # HOME outside the workspace, so tools' dotfiles never show up in the diff.
        full_env.update({"HOME": self._home, "TMPDIR": tempfile.gettempdir(), "AI_FIX_ARTIFACTS": self.artifact_dir})
        return run_process(
            ["/bin/sh", "-c", command],
            env=full_env,
            cwd=self.workspace,
            timeout=timeout,
            output_cap=output_cap,
            config=self.config,
        )

    def restore_setup(self) -> str | None:
        return None

    def save_setup(self, outputs: Sequence[str]) -> str | None:
        return None

    def forget_setup(self) -> None:
        # Its HOME and artifacts only: this backend isolates nothing, the whole host is the commands'.
        if self._artifacts is not None:
            empty(self._artifacts)
            empty(Path(self._home))

    def missing_command(self, program: str) -> str:
        return f"command not found: {program}; install it on this host (the sandbox is `none`) or add a setup command"

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        if self._artifacts is None:
            return None
        return read_artifact(self._artifacts, name, limit)

    def close(self) -> None:
        if self._artifacts is not None:
            shutil.rmtree(self._artifacts, ignore_errors=True)
            shutil.rmtree(self._home, ignore_errors=True)
            self._artifacts = None
