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
network and the same mounts and limits; only what they write into the workspace carries over. Setup
commands that had setup secrets and ran in the job's container are followed by a fresh container, so
nothing they left in /tmp (HOME) carries over either.

Before the container starts, the image is pulled by the pull policy (`bot.sandbox.pull`); a job
whose setup was snapshotted before starts from the snapshot instead (`bot.sandbox.snapshots`).
"""

from __future__ import annotations

import itertools
import logging
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.envdir import VENV_BIN
from bot.errors import SandboxUnavailable
from bot.sandbox import snapshots
from bot.sandbox.artifacts import empty, read_artifact
from bot.sandbox.base import ExecResult, SandboxJob
from bot.sandbox.capture import HeadTail
from bot.sandbox.engine import Engine, engine_command, engine_env, last_line, probe_engine, run_engine
from bot.sandbox.environment import ARTIFACT_DIR, WORKDIR, sandbox_env
from bot.sandbox.identity import Identity, grant_workspace, private_dir, sandbox_identity
from bot.sandbox.limits import killed_reason
from bot.sandbox.process import run_process
from bot.sandbox.pull import ensure_image
from bot.sandbox.server import SERVER, collect, count

log = logging.getLogger(__name__)


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
        job: SandboxJob | None = None,
    ) -> None:
        self.name = engine
        self.engine: Engine = engine
        self.workspace = workspace.resolve()
        self.config = config
        self.job = job or SandboxJob()
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
        self._base_id = ""
        self._image = config.image
        """What the job's containers run: the configured image, or the setup snapshot made from it."""
        self._snapshot: str | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        reason = probe_engine(self.engine)
        if reason:
            raise SandboxUnavailable(reason)
        self._base_id = ensure_image(self.engine, self.config.image, self.config.pull, self.job.progress)
        if self.job.setup_key and self.job.keep_snapshots > 0:
            tag = snapshots.snapshot_tag(self.job.repo, self.job.setup_key, self._base_id)
            if snapshots.find(self.engine, tag):
                self._image = self._snapshot = tag
        grant_workspace(self.workspace, self.identity)
        self._engine_cwd = Path(tempfile.mkdtemp(prefix=f"ai-fix-{self.engine}-conmon-"))
        self._control = private_dir(Path(tempfile.mkdtemp(prefix=f"ai-fix-{self.engine}-")), self.identity)
        self._run_container()

    def _run_container(self) -> None:
        self.container = f"ai-fix-{uuid.uuid4().hex[:12]}"
        args = [
            "run",
            "-d",
            "--rm",
            "--name",
            self.container,
            *self._flags(network=False),
            self._image,
            "sleep",
            "infinity",
        ]
        run = run_engine(self.engine, *args, timeout=120, cwd=self._engine_cwd)
        if run.returncode != 0:
            self.close()
            err = run.stderr.decode(errors="replace").strip()
            raise SandboxUnavailable(
                f"{self.engine}: cannot start the job's container: {err}; check `{self.engine} info` and the image"
            )
        self._container_up = True

    # -- setup snapshots -----------------------------------------------------------------------

    def restore_setup(self) -> str | None:
        if self._snapshot is None:
            return None
        restored = self.exec(snapshots.RESTORE, timeout=snapshots.COPY_TIMEOUT_S)
        if restored.exit_code != 0:
            log.warning(
                "setup snapshot %s could not be restored (%s); setup runs", self._snapshot, restored.output[-300:]
            )
            return None
        return self._snapshot

    def save_setup(self, outputs: Sequence[str]) -> str | None:
        if not (self.job.setup_key and self.job.keep_snapshots > 0 and outputs and self._engine_cwd):
            return None
        if any("\n" in path for path in outputs):  # the restore script is a here-document: one path a line
            log.warning("setup snapshot not made: a path setup created has a newline in its name")
            return None
        tag = snapshots.snapshot_tag(self.job.repo, self.job.setup_key, self._base_id)
        copier = f"{self.container}-setup"
        mounts = [f for path in self._ro_paths for f in ("-v", f"{path}:{path}:ro")]
        copy = run_engine(
            # Root with only DAC_OVERRIDE, to write KEPT into the image's own root (often read-only to all), no network.
            self.engine, "run", "--name", copier, "--user", "0", "--network", "none", "--cap-drop", "ALL",
            "--cap-add", "DAC_OVERRIDE", "--security-opt", "no-new-privileges", "-v", f"{self.workspace}:{WORKDIR}:ro", *mounts,
            self._base_id, "sh", "-c", snapshots.copy_script(outputs),
            timeout=snapshots.COPY_TIMEOUT_S, cwd=self._engine_cwd,
        )  # fmt: skip
        try:
            problem = (
                snapshots.commit(self.engine, copier, tag, self.job.repo, cwd=self._engine_cwd)
                if copy.returncode == 0
                else last_line(copy.stderr or copy.stdout, f"exit {copy.returncode}")
            )
        finally:
            run_engine(self.engine, "rm", "-f", copier, cwd=self._engine_cwd)
        if problem:
            log.warning("setup snapshot %s not made: %s", tag, problem)
            return None
        snapshots.prune(self.engine, self.job.repo, self.job.keep_snapshots, cwd=self._engine_cwd)
        return tag

    def forget_setup(self) -> None:
        if self._control is not None:
            empty(self._control)  # between commands it holds only what they left (their scripts are gone)
        if self.config.network != "setup":  # setup ran in the job's container: the next command gets a fresh one
            self._stop_server()
            self._remove_container()

    def missing_command(self, program: str) -> str:
        return (
            f"command not found: {program}; install it in the image ({self.config.image}, sandbox.image) "
            "or add a setup command that installs it"
        )

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
        run_engine(self.engine, "rm", "-f", "-t", "0", self.container, cwd=self._engine_cwd)
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
        for key, value in sandbox_env(path=None, workdir=WORKDIR, extra=self._extra_env).items():
            flags += ["--env", f"{key}={value}"]
        return flags

    # -- commands ------------------------------------------------------------------------------

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        setup: bool = False,
        output_cap: int = 65536,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if self._control is None:
            raise SandboxUnavailable(f"{self.engine}: the sandbox is not started; call start() first")
        n = next(self._serial)
        script = self._control / f"cmd-{n}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in (env or {}).items())
        venv = f'export PATH="{WORKDIR}/{VENV_BIN}:$PATH"\n'
        script.write_text(f"umask 002\ncd {WORKDIR} || exit 125\n{venv}{exports}{command}\n")
        try:
            if setup and self.config.network == "setup":
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
            status = collect(out_fd, server.stdout.fileno(), buffer, deadline)
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
            self._image,
            "sh",
            f"{ARTIFACT_DIR}/{script.name}",
        ]

        def remove(_: subprocess.Popen[bytes]) -> None:
            # Killing the client would leave the container running.
            run_engine(self.engine, "rm", "-f", "-t", "0", name)

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
        self._oom_kills = count(ready.split()[1:2])
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
        run_engine(
            self.engine,
            "exec",
            "--user",
            self.identity.spec,
            self.container,
            "sh",
            "-c",
            "kill -9 -1",
            cwd=self._engine_cwd,
        )
        self._stop_server()
        self._remove_container()

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        if self._control is None:
            return None
        return read_artifact(self._control, name, limit)
