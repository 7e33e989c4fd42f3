"""The container backends (podman, docker): one container per job, kept up for the job's lifetime.

The container runs `sleep infinity` with no network, a read-only root, a tmpfs /tmp, no
capabilities, no-new-privileges, pids/memory/CPU limits and a non-root user; the workspace is
bind-mounted at /workspace and a private host directory at /run/ai-fix (command scripts, output
pipes, artifacts). `engine exec` costs ~150 ms here, so commands do not each get one: a small
POSIX-shell server started once with `exec -i` runs each command in its own session, streams its
output through a named pipe the host reads, and reports the exit status. When a command ends, its
process group is killed; at a timeout every process of the sandbox user is (`kill -9 -1`), whatever
sessions they made, and the next command gets a fresh container over the same workspace.

`network: setup` runs the setup commands in a separate one-off container with the engine's default
network and the same mounts and limits; only what they write into the workspace carries over.
"""

from __future__ import annotations

import itertools
import os
import selectors
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.errors import SandboxUnavailable
from bot.sandbox.artifacts import read_artifact
from bot.sandbox.base import ExecResult
from bot.sandbox.capture import CHUNK, HeadTail
from bot.sandbox.engine import Engine, engine_command, engine_env, image_missing, probe_engine
from bot.sandbox.environment import ARTIFACT_DIR, WORKDIR, sandbox_env
from bot.sandbox.identity import Identity, grant_workspace, private_dir, sandbox_identity
from bot.sandbox.limits import killed_reason
from bot.sandbox.process import run_process

SERVER = resources.files("bot.sandbox").joinpath("shell_server.sh").read_text()
"""Runs inside the container as the sandbox user; one command at a time, each in its own session."""

AFTER_EXIT_GRACE_S = 0.5
"""How long output is still read after the command exited (background children may hold the pipe)."""


class ContainerSandbox:
    workdir = WORKDIR
    artifact_dir = ARTIFACT_DIR

    def __init__(
        self,
        engine: Engine,
        workspace: Path,
        config: SandboxConfig,
        *,
        env: Mapping[str, str] | None = None,
        ro_paths: Sequence[Path] = (),
    ) -> None:
        self.name = engine
        self.engine: Engine = engine
        self.workspace = workspace.resolve()
        self.config = config
        self.identity: Identity = sandbox_identity()
        self.container = ""
        self._extra_env = dict(env or {})
        self._ro_paths = [Path(p).resolve() for p in ro_paths]
        self._control: Path | None = None
        # conmon, the engine's container monitor, writes files (an `oom` marker on OOM kills) into
        # its working directory: give every engine call a private one instead of the caller's.
        self._engine_cwd: Path | None = None
        self._container_up = False
        self._server: subprocess.Popen[bytes] | None = None
        self._oom_kills = 0
        self._serial = itertools.count(1)
        self._cmd = engine_command(engine)
        self._env = engine_env(engine)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        reason = probe_engine(self.engine) or image_missing(self.engine, self.config.image)
        if reason:
            raise SandboxUnavailable(reason)
        grant_workspace(self.workspace, self.identity)
        self._engine_cwd = Path(tempfile.mkdtemp(prefix=f"ai-fix-{self.engine}-conmon-"))
        self._control = private_dir(Path(tempfile.mkdtemp(prefix=f"ai-fix-{self.engine}-")), self.identity)
        self._run_container()

    def _run_container(self) -> None:
        self.container = f"ai-fix-{uuid.uuid4().hex[:12]}"
        run = subprocess.run(
            [
                *self._cmd,
                "run",
                "-d",
                "--rm",
                "--name",
                self.container,
                *self._flags(network=False),
                self.config.image,
                "sleep",
                "infinity",
            ],
            env=self._env,
            cwd=self._engine_cwd,
            capture_output=True,
            timeout=120,
            check=False,
        )
        if run.returncode != 0:
            self.close()
            err = run.stderr.decode(errors="replace").strip()
            raise SandboxUnavailable(
                f"{self.engine}: cannot start the job's container: {err}; check `{self.engine} info` and the image"
            )
        self._container_up = True

    def close(self) -> None:
        self._stop_server()
        if self._control is not None:
            self._remove_container()
            shutil.rmtree(self._control, ignore_errors=True)
            self._control = None
        if self._engine_cwd is not None:
            shutil.rmtree(self._engine_cwd, ignore_errors=True)
            self._engine_cwd = None

    def _remove_container(self) -> None:
        subprocess.run(
            [*self._cmd, "rm", "-f", "-t", "0", self.container],
            env=self._env,
            cwd=self._engine_cwd,
            capture_output=True,
            timeout=60,
            check=False,
        )
        self._container_up = False

    def _flags(self, *, network: bool) -> list[str]:
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
            "-v", f"{self._control}:{ARTIFACT_DIR}:rw",
            "-w", WORKDIR,
        ]  # fmt: skip
        if not network:
            flags += ["--network", "none"]
        if self.engine == "podman" and os.geteuid() != 0:
            flags += ["--userns", "keep-id"]  # rootless: the host user's files stay the host user's
        for path in self._ro_paths:
            flags += ["-v", f"{path}:{path}:ro"]
        for key, value in sandbox_env(path=None, extra=self._extra_env).items():
            flags += ["--env", f"{key}={value}"]
        return flags

    # -- commands ------------------------------------------------------------------------------

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        network: bool = False,
        output_cap: int = 65536,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if self._control is None:
            raise SandboxUnavailable(f"{self.engine}: the sandbox is not started; call start() first")
        n = next(self._serial)
        script = self._control / f"cmd-{n}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in (env or {}).items())
        script.write_text(f"umask 002\ncd {WORKDIR} || exit 125\n{exports}{command}\n")
        try:
            if network and self.config.network == "setup":
                return self._exec_networked(script, timeout=timeout, output_cap=output_cap)
            return self._exec_warm(n, timeout=timeout, output_cap=output_cap)
        finally:
            script.unlink(missing_ok=True)
            (self._control / f"out-{n}").unlink(missing_ok=True)

    def _exec_warm(self, n: int, *, timeout: float, output_cap: int) -> ExecResult:
        assert self._control is not None
        server = self._ensure_server()
        assert server.stdin is not None and server.stdout is not None
        pipe = self._control / f"out-{n}"
        os.mkfifo(pipe, 0o600)
        if os.geteuid() == 0:
            os.chown(pipe, self.identity.uid, self.identity.gid)
        # Opened non-blocking before the writer exists: select() waits for the writer, EOF comes once it and its children close.
        out_fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        buffer = HeadTail(output_cap)
        began = time.monotonic()
        deadline = began + timeout
        status: tuple[int, int] | None = None
        try:
            server.stdin.write(f"{n}\n".encode())
            server.stdin.flush()
            status = self._collect(out_fd, server, buffer, deadline)
        except (BrokenPipeError, OSError):
            status = None
        finally:
            os.close(out_fd)
        duration = time.monotonic() - began
        if status is None:
            timed_out = time.monotonic() >= deadline
            self._kill_all()
            if not timed_out:
                raise SandboxUnavailable(
                    f"{self.engine}: the sandbox's command server died; the container may have been removed"
                )
            return ExecResult(
                exit_code=None, output=buffer.text(), dropped_bytes=buffer.dropped, duration_s=duration, timed_out=True
            )
        code, oom = status
        oom_killed = oom > self._oom_kills
        self._oom_kills = oom
        return ExecResult(
            exit_code=code,
            output=buffer.text(),
            dropped_bytes=buffer.dropped,
            duration_s=duration,
            killed=killed_reason(code, oom_killed=oom_killed, config=self.config),
        )

    def _collect(
        self, out_fd: int, server: subprocess.Popen[bytes], buffer: HeadTail, deadline: float
    ) -> tuple[int, int] | None:
        """Output until EOF, and the server's status line; None at the deadline or if the server died."""
        assert server.stdout is not None
        status_fd = server.stdout.fileno()
        line = b""
        status: tuple[int, int] | None = None
        out_open = True
        with selectors.DefaultSelector() as sel:
            sel.register(out_fd, selectors.EVENT_READ)
            sel.register(status_fd, selectors.EVENT_READ)
            while out_open or status is None:
                now = time.monotonic()
                if now >= deadline:
                    return status
                for key, _ in sel.select(deadline - now):
                    if key.fd == out_fd:
                        try:
                            data = os.read(out_fd, CHUNK)
                        except BlockingIOError:
                            continue
                        if data:
                            buffer.feed(data)
                        else:
                            sel.unregister(out_fd)
                            out_open = False
                    else:
                        chunk = os.read(status_fd, 4096)
                        if not chunk:
                            return None
                        line += chunk
                        if b"\n" in line:
                            status = _parse_done(line.split(b"\n", 1)[0])
                            if status is None:
                                return None
                            sel.unregister(status_fd)
                            deadline = min(deadline, time.monotonic() + AFTER_EXIT_GRACE_S) if out_open else deadline
        return status

    def _exec_networked(self, script: Path, *, timeout: float, output_cap: int) -> ExecResult:
        name = f"{self.container}-net"
        argv = [
            *self._cmd,
            "run",
            "--rm",
            "-i",
            "--name",
            name,
            *self._flags(network=True),
            self.config.image,
            "sh",
            f"{ARTIFACT_DIR}/{script.name}",
        ]

        def remove(_: subprocess.Popen[bytes]) -> None:
            # Killing the client would leave the container running.
            subprocess.run(
                [*self._cmd, "rm", "-f", "-t", "0", name], env=self._env, capture_output=True, timeout=60, check=False
            )

        return run_process(
            argv,
            env=self._env,
            cwd=self._engine_cwd,
            timeout=timeout,
            output_cap=output_cap,
            config=self.config,
            kill=remove,
        )

    # -- the command server --------------------------------------------------------------------

    def _ensure_server(self) -> subprocess.Popen[bytes]:
        if self._server is not None and self._server.poll() is None:
            return self._server
        self._stop_server()
        if not self._container_up:
            self._run_container()
        server = subprocess.Popen(
            [*self._cmd, "exec", "-i", "--user", self.identity.spec, "-w", WORKDIR, self.container, "sh", "-c", SERVER],
            env=self._env,
            cwd=self._engine_cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert server.stdout is not None
        ready = server.stdout.readline()
        if not ready.startswith(b"READY"):
            server.kill()
            server.wait()
            raise SandboxUnavailable(
                f"{self.engine}: cannot start a shell in the job's container; the image {self.config.image!r} needs /bin/sh and sleep"
            )
        self._oom_kills = _int(ready.split()[1:2])
        self._server = server
        return server

    def _stop_server(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        for stream in (server.stdin, server.stdout):
            if stream is not None:
                stream.close()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

    def _kill_all(self) -> None:
        """SIGKILL every process of the sandbox user: the command's tree, sessions it escaped to, the server.

        `kill -9 -1` is the one atomic way to catch them all; it also ends the container's keeper
        process, so the next command gets a fresh container (the workspace is unaffected).
        """
        subprocess.run(
            [*self._cmd, "exec", "--user", self.identity.spec, self.container, "sh", "-c", "kill -9 -1"],
            env=self._env,
            cwd=self._engine_cwd,
            capture_output=True,
            timeout=60,
            check=False,
        )
        self._stop_server()
        self._remove_container()

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        if self._control is None:
            return None
        return read_artifact(self._control, name, limit)


def _parse_done(line: bytes) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) < 3 or parts[0] != b"DONE":
        return None
    return int(parts[2]), _int(parts[3:4])


def _int(parts: list[bytes]) -> int:
    return int(parts[0]) if parts and parts[0].isdigit() else 0
