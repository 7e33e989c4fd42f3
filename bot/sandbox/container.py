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
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.envdir import VENV_BIN
from bot.errors import SandboxUnavailable
from bot.sandbox import snapshots
from bot.sandbox.artifacts import empty, read_artifact
from bot.sandbox.base import ExecResult, SandboxJob
from bot.sandbox.engine import Engine, probe_engine
from bot.sandbox.environment import ARTIFACT_DIR, WORKDIR
from bot.sandbox.identity import grant_workspace, sandbox_identity
from bot.sandbox.job_container import ContainerSpec, HostDirs, JobContainer
from bot.sandbox.pull import ensure_image
from bot.sandbox.snapshots import SetupSnapshots

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
        self.engine: Engine = engine
        self.workspace = workspace.resolve()
        self.config = config
        self._job = job or SandboxJob()
        self._extra_env = dict(env or {})
        self._ro_paths = tuple(Path(p).resolve() for p in ro_paths)
        self._serial = itertools.count(1)
        # Made by start(); close() removes the directories, which marks the sandbox closed.
        self._dirs: HostDirs | None = None
        self._container: JobContainer | None = None
        self._snapshots: SetupSnapshots | None = None

    @property
    def name(self) -> str:
        return self.engine

    @property
    def container(self) -> str:
        """The name of the job's current container (empty before it first ran)."""
        return self._container.name if self._container is not None else ""

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        reason = probe_engine(self.engine)
        if reason:
            raise SandboxUnavailable(reason)
        image = self.config.image
        if image is None:  # the opener puts the operator's default in; a caller that did not gets told
            raise SandboxUnavailable(
                f"{self.engine}: no image to run: set sandbox.image in .github/ai-fix.yml or AIFIX_SANDBOX_IMAGE"
            )
        base_id = ensure_image(self.engine, image, self.config.pull, self._job.progress)
        self._snapshots = SetupSnapshots.look_up(self.engine, self._job, base_id)
        identity = sandbox_identity()
        grant_workspace(self.workspace, identity)
        self._dirs = dirs = HostDirs.make(self.engine, identity)
        spec = ContainerSpec(
            self.engine, self.config, identity, self.workspace, dirs.control, self._ro_paths, self._extra_env
        )
        self._container = JobContainer(spec, self._snapshots.found or image, dirs.engine_cwd)
        try:
            self._container.run()
        except SandboxUnavailable:
            self.close()
            raise

    def close(self) -> None:
        if self._dirs is None:
            return
        if self._container is not None:
            self._container.close()
        self._dirs.remove()
        self._dirs = None

    # -- setup snapshots -----------------------------------------------------------------------

    def restore_setup(self) -> str | None:
        snapshot = self._snapshots.found if self._snapshots is not None else None
        if snapshot is None:
            return None
        restored = self.exec(snapshots.RESTORE, timeout=snapshots.COPY_TIMEOUT_S)
        if restored.exit_code != 0:
            log.warning("setup snapshot %s could not be restored (%s); setup runs", snapshot, restored.output[-300:])
            return None
        return snapshot

    def save_setup(self, outputs: Sequence[str]) -> str | None:
        if self._snapshots is None or self._dirs is None or self._container is None:
            return None
        return self._snapshots.save(
            outputs,
            copier=f"{self._container.name}-setup",
            owner=self._container.spec.identity,
            workspace=self.workspace,
            ro_paths=self._ro_paths,
            cwd=self._dirs.engine_cwd,
        )

    def forget_setup(self) -> None:
        if self._dirs is not None:
            empty(self._dirs.control)  # between commands it holds only what they left (their scripts are gone)
        if self._container is not None and self.config.network != "setup":
            self._container.close()  # setup ran in the job's container: the next command starts a fresh one

    def missing_command(self, program: str) -> str:
        return (
            f"command not found: {program}; install it in the image ({self.config.image}, sandbox.image) "
            "or add a setup command that installs it"
        )

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
        if self._dirs is None or self._container is None:
            raise SandboxUnavailable(f"{self.engine}: the sandbox is not started; call start() first")
        control = self._dirs.control
        n = next(self._serial)
        script = control / f"cmd-{n}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in (env or {}).items())
        venv = f'export PATH="{WORKDIR}/{VENV_BIN}:$PATH"\n'
        script.write_text(f"umask 002\ncd {WORKDIR} || exit 125\n{venv}{exports}{command}\n")
        try:
            if setup and self.config.network == "setup":
                return self._container.exec_networked(script, timeout=timeout, output_cap=output_cap)
            return self._container.exec_warm(n, control / f"out-{n}", timeout=timeout, output_cap=output_cap)
        finally:
            script.unlink(missing_ok=True)
            (control / f"out-{n}").unlink(missing_ok=True)

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        if self._dirs is None:
            return None
        return read_artifact(self._dirs.control, name, limit)
