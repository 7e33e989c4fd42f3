"""The bubblewrap backend: one short-lived bwrap per command, no daemon, no image.

The sandbox sees the host's system directories read-only (not the whole root: home directories,
/tmp, /srv and other jobs' workspaces stay out), the workspace writable at /workspace, a fresh
tmpfs /tmp, no network (unless the command is setup and the config allows it), its own pid, ipc
and uts namespaces, a writable tmpfs /dev/shm (multiprocessing's semaphores and queues live there),
and an environment built from the allowlist only. bwrap itself starts with an empty environment (else
its first process would expose ai-fix's environment at /proc/1/environ). Commands run as a non-root
uid under rlimits for processes and CPU time; memory is limited by what the command's processes hold
resident, watched from the host (`bot.sandbox.memory`), not by an address-space rlimit, which V8, Go
and the JVM reserve far past what they use.

The programs the job's commands name are found as the host's PATH finds them: their folders and the
interpreters behind them are mounted read-only (`bot.sandbox.toolchain`), so checks run the same
`python`, `pytest` or `node` as the user's shell. Setup commands also see the repository's
package-manager cache folder (pip, npm, yarn), which checks never do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.contract.models import SandboxConfig
from bot.errors import SandboxUnavailable
from bot.sandbox.artifacts import empty, read_artifact
from bot.sandbox.base import ExecResult, SandboxJob
from bot.sandbox.environment import (
    ARTIFACT_DIR,
    HOME,
    SETUP_CACHE,
    SETUP_CACHE_ENV,
    SYSTEM_PATHS,
    WORKDIR,
    host_sandbox_env,
)
from bot.sandbox.identity import Identity, grant_workspace, private_dir, sandbox_identity
from bot.sandbox.process import run_process
from bot.sandbox.toolchain import Toolchain, is_system, missing_advice, resolve_toolchain


def probe_bwrap() -> str | None:
    """Why bwrap cannot work here (with the fix), or None when it can."""
    for tool, package in (("bwrap", "bubblewrap"), ("prlimit", "util-linux"), ("setpriv", "util-linux")):
        if shutil.which(tool) is None:
            return f"bwrap: `{tool}` not found; install it (Debian: apt-get install {package})"
    try:
        probe = subprocess.run(
            [shutil.which("bwrap") or "bwrap", *_namespaces(network=False), "--ro-bind", "/", "/", "true"],
            env={},
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap: cannot start ({exc}); check that bubblewrap is installed and runnable"
    if probe.returncode != 0:
        err = probe.stderr.decode(errors="replace").strip()
        return (
            f"bwrap: cannot create namespaces ({err}); enable unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1) or run ai-fix with podman"
        )
    return None


def _namespaces(*, network: bool) -> list[str]:
    # As root, bwrap mounts with real privileges and the command drops to the sandbox uid with
    # setpriv; a user namespace would map that uid back to root, where rlimits do not bite.
    ns = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:
        ns.append("--unshare-user")
    if not network:
        ns.append("--unshare-net")
    return ns


def _parents(path: Path) -> list[str]:
    # bwrap would create missing parents mode 0700, which the sandbox uid could not traverse.
    args: list[str] = []
    for parent in reversed(path.parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


class BwrapSandbox:
    name = "bwrap"
    workdir = WORKDIR
    artifact_dir = ARTIFACT_DIR

    def __init__(
        self,
        workspace: Path,
        config: SandboxConfig,
        *,
        env: Mapping[str, str] | None = None,
        ro_paths: Sequence[Path] = (),
        job: SandboxJob | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self.config = config
        self.job = job or SandboxJob()
        self.identity: Identity = sandbox_identity()
        self._env = dict(env or {})
        self._ro_paths = [Path(p).resolve() for p in ro_paths]
        self._artifacts: Path | None = None
        self._path = self._env.get("PATH") or os.environ.get("PATH", "/usr/bin:/bin")
        self.toolchain = Toolchain()

    def start(self) -> None:
        reason = probe_bwrap()
        if reason:
            raise SandboxUnavailable(reason)
        grant_workspace(self.workspace, self.identity)
        rustup_home = self._env.get("RUSTUP_HOME") or os.environ.get("RUSTUP_HOME")
        self.toolchain = resolve_toolchain(
            self.job.commands, self._path, rustup_home=Path(rustup_home) if rustup_home else None
        )
        if self.job.cache_dir is not None:
            private_dir(self.job.cache_dir, self.identity)
        self._artifacts = private_dir(Path(tempfile.mkdtemp(prefix="ai-fix-bwrap-")), self.identity)

    def argv(self, command: str, *, timeout: float, setup: bool, env: Mapping[str, str]) -> list[str]:
        if self._artifacts is None:
            raise SandboxUnavailable("bwrap: the sandbox is not started; call start() first")
        network = setup and self.config.network == "setup"
        args = [shutil.which("bwrap") or "bwrap", *_namespaces(network=network)]
        args += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
        args += self._mounts(self._artifacts, setup=setup)
        for key, value in env.items():
            args += ["--setenv", key, value]
        return [*args, "--", *self._inside(command, timeout)]

    def _mounts(self, artifacts: Path, *, setup: bool) -> list[str]:
        """The sandbox's file system: the system read-only, fresh /proc, /dev, /dev/shm and /tmp, the toolchains the
        commands need, the setup cache (setup only), the workspace and the artifact folder."""
        args: list[str] = []
        for path in SYSTEM_PATHS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"]
        args += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "0777", "--dir", HOME]
        args += ["--perms", "0755", "--dir", "/run"]
        # After the tmpfs on /tmp: bwrap mounts in order, so a toolchain under /tmp would be hidden.
        for ro in dict.fromkeys([*self._ro_paths, *self.toolchain.mounts]):
            if not is_system(ro):
                args += [*_parents(ro), "--ro-bind", str(ro), str(ro)]
        if setup and self.job.cache_dir is not None:
            args += ["--bind", str(self.job.cache_dir), SETUP_CACHE]
        args += ["--bind", str(self.workspace), WORKDIR, "--bind", str(artifacts), ARTIFACT_DIR, "--chdir", WORKDIR]
        return args

    def _inside(self, command: str, timeout: float) -> list[str]:
        """What runs inside: as the job's own user with no privileges (when ai-fix runs as root), under the process,
        CPU-time and core limits, the command through a shell."""
        args: list[str] = []
        if os.geteuid() == 0:
            args += [
                shutil.which("setpriv") or "setpriv",
                f"--reuid={self.identity.uid}",
                f"--regid={self.identity.gid}",
                "--clear-groups",
                "--no-new-privs",
                "--bounding-set=-all",
                "--inh-caps=-all",
            ]
        limits = [f"--nproc={self.config.pids}", f"--cpu={int(timeout) + 1}", "--core=0"]
        return [
            *args,
            shutil.which("prlimit") or "prlimit",
            *limits,
            "--",
            "/bin/sh",
            "-c",
            'umask 002; eval "$1"',
            "sh",
            command,
        ]

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        setup: bool = False,
        output_cap: int = 65536,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        caches = SETUP_CACHE_ENV if setup and self.job.cache_dir is not None else None
        full_env = host_sandbox_env(WORKDIR, self.toolchain.front, self.toolchain.env, self._env, caches, env)
        argv = self.argv(command, timeout=timeout, setup=setup, env=full_env)
        # An empty environment for bwrap itself: see the module docstring. Killing bwrap kills its
        # init (--die-with-parent), which takes the whole pid namespace along.
        return run_process(argv, env={}, timeout=timeout, output_cap=output_cap, config=self.config, watch_memory=True)

    def restore_setup(self) -> str | None:
        return None

    def save_setup(self, outputs: Sequence[str]) -> str | None:
        return None

    def forget_setup(self) -> None:
        # /tmp (and HOME in it) is a fresh tmpfs for every command already.
        if self._artifacts is not None:
            empty(self._artifacts)

    def missing_command(self, program: str) -> str:
        return missing_advice(program, self._path)

    def read_artifact(self, name: str, *, limit: int = 8 << 20) -> bytes | None:
        if self._artifacts is None:
            return None
        return read_artifact(self._artifacts, name, limit)

    def close(self) -> None:
        if self._artifacts is not None:
            shutil.rmtree(self._artifacts, ignore_errors=True)
            self._artifacts = None
