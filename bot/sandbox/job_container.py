"""The container backends' containers: the flags every container of a job runs with, and the job's long-lived one."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.errors import SandboxUnavailable
from bot.sandbox.base import ExecResult
from bot.sandbox.capture import HeadTail
from bot.sandbox.engine import Engine, engine_command, engine_env, run_engine
from bot.sandbox.environment import ARTIFACT_DIR, WORKDIR, sandbox_env
from bot.sandbox.identity import Identity, private_dir
from bot.sandbox.limits import killed_reason
from bot.sandbox.process import run_process
from bot.sandbox.server import CommandServer, open_output_pipe


@dataclass(frozen=True)
class HostDirs:
    """The job's private host directories, made when its sandbox starts and removed when it closes."""

    control: Path
    """Mounted at /run/ai-fix: command scripts, output pipes, artifacts."""
    engine_cwd: Path
    """conmon, the engine's container monitor, writes files (an `oom` marker on OOM kills) into its
    working directory: every engine call gets this private one instead of the caller's."""

    @classmethod
    def make(cls, engine: Engine, identity: Identity) -> HostDirs:
        engine_cwd = Path(tempfile.mkdtemp(prefix=f"ai-fix-{engine}-conmon-"))
        return cls(private_dir(Path(tempfile.mkdtemp(prefix=f"ai-fix-{engine}-")), identity), engine_cwd)

    def remove(self) -> None:
        shutil.rmtree(self.control, ignore_errors=True)
        shutil.rmtree(self.engine_cwd, ignore_errors=True)


@dataclass(frozen=True)
class ContainerSpec:
    """What every container of a job runs with: its limits, user, mounts and environment."""

    engine: Engine
    config: SandboxConfig
    identity: Identity
    workspace: Path
    control: Path
    ro_paths: tuple[Path, ...]
    env: Mapping[str, str]

    def flags(self, *, network: bool) -> list[str]:
        c = self.config
        flags = [
            "--init",  # pid 1 reaps orphans; with `sleep` as pid 1 zombies would eat the pids limit
            "--read-only",
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={c.memory_mb}m,mode=1777",
            "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges",
            "--pids-limit", str(c.pids),
            "--memory", f"{c.memory_mb}m",
            "--memory-swap", f"{c.memory_mb}m",
            "--cpus", str(c.cpus),
            "--user", self.identity.spec,
            "--hostname", "sandbox",
            "--label", "ai-fix.sandbox=1",
            "-v", f"{self.workspace}:{WORKDIR}:rw",
            "-v", f"{self.control}:{ARTIFACT_DIR}:rw",
            "-w", WORKDIR,
        ]  # fmt: skip
        if not network:
            flags += ["--network", "none"]
        if self.engine == "podman" and os.geteuid() != 0:
            flags += ["--userns", "keep-id"]  # rootless: the host user's files stay the host user's
        for path in self.ro_paths:
            flags += ["-v", f"{path}:{path}:ro"]
        for key, value in sandbox_env(path=None, workdir=WORKDIR, extra=self.env).items():
            flags += ["--env", f"{key}={value}"]
        return flags


class JobContainer:
    """The job's container, `sleep infinity` with no network, and the command server in it.

    At a timeout every process of the sandbox user is killed, and the next command gets a fresh
    container over the same workspace.
    """

    def __init__(self, spec: ContainerSpec, image: str, cwd: Path) -> None:
        self.spec = spec
        self.image = image
        """The configured image, or the setup snapshot made from it."""
        self.cwd = cwd
        self.name = ""
        self._up = False
        self._server = CommandServer(spec.engine, spec.identity, cwd)

    def run(self) -> None:
        engine = self.spec.engine
        self.name = f"ai-fix-{uuid.uuid4().hex[:12]}"
        args = [
            "run",
            "-d",
            "--rm",
            "--name",
            self.name,
            *self.spec.flags(network=False),
            self.image,
            "sleep",
            "infinity",
        ]
        run = run_engine(engine, *args, timeout=120, cwd=self.cwd)
        if run.returncode != 0:
            err = run.stderr.decode(errors="replace").strip()
            raise SandboxUnavailable(
                f"{engine}: cannot start the job's container: {err}; check `{engine} info` and the image"
            )
        self._up = True

    def close(self) -> None:
        """Stop the command server and remove the container; the workspace is unaffected."""
        self._server.stop()
        run_engine(self.spec.engine, "rm", "-f", "-t", "0", self.name, cwd=self.cwd)
        self._up = False

    def exec_warm(self, n: int, pipe: Path, *, timeout: float, output_cap: int) -> ExecResult:
        """Run command script `n` through the command server, its output through the named pipe `pipe`."""
        self._serve()
        out_fd = open_output_pipe(pipe, self.spec.identity)
        buffer = HeadTail(output_cap)
        began = time.monotonic()
        deadline = began + timeout
        try:
            status = self._server.send(n, out_fd, buffer, deadline)
        finally:
            os.close(out_fd)
        duration = time.monotonic() - began
        if status is None:
            timed_out = time.monotonic() >= deadline
            self._kill_all()
            if not timed_out:
                raise SandboxUnavailable(
                    f"{self.spec.engine}: the sandbox's command server died; the container may have been removed"
                )
            return ExecResult(
                exit_code=None, output=buffer.text(), dropped_bytes=buffer.dropped, duration_s=duration, timed_out=True
            )
        code, oom_killed = status
        return ExecResult(
            exit_code=code,
            output=buffer.text(),
            dropped_bytes=buffer.dropped,
            duration_s=duration,
            killed=killed_reason(code, oom_killed=oom_killed, config=self.spec.config),
        )

    def _serve(self) -> None:
        """Have the command server up, in a fresh container when a timeout killed the last one."""
        if self._server.running:
            return
        self._server.stop()
        if not self._up:
            self.run()
        self._server.start(self.name, self.image)

    def _kill_all(self) -> None:
        """SIGKILL every process of the sandbox user: the command's tree, sessions it escaped to, the server.

        `kill -9 -1` is the one atomic way to catch them all; it also ends the container's keeper
        process, so the next command gets a fresh container (the workspace is unaffected).
        """
        user = self.spec.identity.spec
        run_engine(self.spec.engine, "exec", "--user", user, self.name, "sh", "-c", "kill -9 -1", cwd=self.cwd)
        self.close()

    def exec_networked(self, script: Path, *, timeout: float, output_cap: int) -> ExecResult:
        """Run `script` (in the control directory) in a one-off container with the engine's default network."""
        engine = self.spec.engine
        name = f"{self.name}-net"
        argv = [
            *engine_command(engine),
            "run",
            "--rm",
            "-i",
            "--name",
            name,
            *self.spec.flags(network=True),
            self.image,
            "sh",
            f"{ARTIFACT_DIR}/{script.name}",
        ]

        def remove(_: subprocess.Popen[bytes]) -> None:
            # Killing the client would leave the container running.
            run_engine(engine, "rm", "-f", "-t", "0", name)

        return run_process(
            argv,
            env=engine_env(engine),
            cwd=self.cwd,
            timeout=timeout,
            output_cap=output_cap,
            config=self.spec.config,
            kill=remove,
        )
