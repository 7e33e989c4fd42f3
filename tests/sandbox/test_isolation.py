"""Hostile checks, run for real through the check runner in each backend: every attack fails inside,
the host stays untouched, and the runner names what happened."""

from __future__ import annotations

import os
import secrets
import socket
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.checks.models import CheckResult
from bot.checks.runner import run_checks
from bot.contract.models import Check
from bot.sandbox.base import Sandbox
from tests.support.sandbox import BACKENDS, image_config, open_test_sandbox, skip_reason

ATTACKS = {
    "net.py": """
        import socket, sys
        try:
            socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).sendall(b"escaped")
        except OSError as exc:
            sys.exit(f"blocked: {exc!r}")
        print("REACHED THE HOST")
    """,
    "read_file.py": """
        import sys
        for path in sys.argv[1:]:
            try:
                print("READ", path, open(path).read())
            except OSError as exc:
                print("blocked:", repr(exc))
        sys.exit(1)
    """,
    "read_env.py": """
        import glob, os, sys
        seen = dict(os.environ)
        for path in ["/proc/1/environ", *glob.glob("/proc/[0-9]*/environ")]:
            try:
                seen[path] = open(path, "rb").read().decode(errors="replace")
            except OSError as exc:
                print("blocked:", path, exc.strerror)
        print("\\n".join(f"{k}={v}" for k, v in seen.items()))
        sys.exit(1)
    """,
    "write.py": """
        import os, sys
        wrote = []
        for path in sys.argv[1:]:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as fh:
                    fh.write("pwned")
                wrote.append(path)
            except OSError as exc:
                print("blocked:", path, exc.strerror)
        sys.exit(f"WROTE {wrote}" if wrote else 1)
    """,
    "fork.py": """
        import os, time
        for i in range(5000):
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
        print("FORKED 5000")
    """,
    "alloc.py": """
        block = bytearray(4 << 30)
        print("ALLOCATED", len(block))
    """,
    "spew.py": """
        import sys
        line = b"x" * 99 + b"\\n"
        for _ in range(1_000_000):
            sys.stdout.buffer.write(line)
        sys.stdout.flush()
        sys.exit(3)
    """,
    "spin.py": """
        import subprocess, sys
        subprocess.Popen(["setsid", "sleep", sys.argv[1]])
        while True:
            pass
    """,
}


@dataclass
class Hostile:
    kind: str
    sandbox: Sandbox
    workspace: Path
    outside: Path
    canary: str
    host_cwd: Path
    """The working directory ai-fix had while the sandbox ran: nothing may appear in it."""

    def run(self, name: str, command: str, timeout: int = 60) -> CheckResult:
        return run_checks(self.sandbox, [Check(name=name, run=command, timeout=timeout)], commit="base").results[0]


@pytest.fixture(scope="module", params=BACKENDS)
def hostile(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    reason = skip_reason(request.param)
    if reason:
        pytest.skip(f"this machine cannot run {request.param}: {reason}")
    root = tmp_path_factory.mktemp(f"hostile-{request.param}")
    workspace, outside = root / "ws", root / "outside"
    workspace.mkdir()
    outside.mkdir()
    for name, body in ATTACKS.items():
        (workspace / name).write_text(textwrap.dedent(body))
    canary = f"canary-{secrets.token_hex(12)}"
    (outside / "canary.txt").write_text(canary)
    (workspace / "link").symlink_to(outside / "canary.txt")
    # A secret in ai-fix's own environment while the sandbox starts and runs.
    os.environ["AIFIX_TEST_CANARY_TOKEN"] = canary
    host_cwd, previous_cwd = root / "host-cwd", os.getcwd()
    host_cwd.mkdir()
    os.chdir(host_cwd)
    config = image_config(pids=256, memory_mb=1024)
    box = open_test_sandbox(request.param, workspace, config)
    try:
        yield Hostile(request.param, box, workspace, outside, canary, host_cwd)
    finally:
        box.close()
        os.chdir(previous_cwd)
        del os.environ["AIFIX_TEST_CANARY_TOKEN"]


def test_no_network_to_a_host_listener(hostile: Hostile) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.2)
        result = hostile.run("net", f"python net.py {listener.getsockname()[1]}")
        with pytest.raises(TimeoutError):
            listener.accept()
    assert result.status == "fail"
    assert "blocked:" in result.output and "REACHED THE HOST" not in result.output


def test_files_outside_the_workspace_are_invisible(hostile: Hostile) -> None:
    result = hostile.run("read", f"python read_file.py {hostile.outside / 'canary.txt'} link /etc/shadow")
    assert result.status == "fail"
    assert hostile.canary not in result.output
    assert result.output.count("blocked:") == 3


def test_the_parent_environment_does_not_leak(hostile: Hostile) -> None:
    assert os.environ["AIFIX_TEST_CANARY_TOKEN"] == hostile.canary
    result = hostile.run("env", "python read_env.py")
    assert result.status == "fail"
    assert hostile.canary not in result.output
    assert "AIFIX_" not in result.output
    assert "PATH=" in result.output  # the allowlisted environment is there


def test_writes_outside_the_workspace_fail(hostile: Hostile) -> None:
    targets = [hostile.outside / "pwned.txt", Path("/etc/ai-fix-pwned"), Path("/usr/ai-fix-pwned")]
    result = hostile.run("write", "python write.py " + " ".join(map(str, targets)))
    assert result.status == "fail"
    # The host path may be created inside the sandbox's own tmpfs /tmp, never on the host.
    assert "blocked: /etc/ai-fix-pwned" in result.output and "blocked: /usr/ai-fix-pwned" in result.output
    assert not any(t.exists() for t in targets)
    assert sorted(p.name for p in hostile.outside.iterdir()) == ["canary.txt"]


def test_a_fork_bomb_hits_the_process_limit(hostile: Hostile) -> None:
    result = hostile.run("fork", "python fork.py")
    assert result.status == "killed"
    assert "process limit (256 processes)" in result.reason
    assert "FORKED 5000" not in result.output
    # The sleeping children died with the command: the next command starts normally.
    after = hostile.sandbox.exec("ls /proc | grep -c '^[0-9]'", timeout=10)
    assert after.exit_code == 0 and int(after.output) < 10


def test_allocating_4_gib_hits_the_memory_limit(hostile: Hostile) -> None:
    result = hostile.run("alloc", "python alloc.py")
    assert result.status == "killed"
    expected = {
        "podman": "killed (memory limit 1024 MiB): the out-of-memory killer ended it",  # cgroup OOM kill, counted
        "bwrap": "killed (memory limit 1024 MiB): its processes held ",  # the resident-memory watch, from the host
    }
    assert result.reason.startswith(expected[hostile.kind]), result.reason
    assert "ALLOCATED" not in result.output
    # podman's container monitor once wrote an `oom` marker into ai-fix's working directory.
    assert list(hostile.host_cwd.iterdir()) == []


def test_printing_100_mb_is_capped_head_and_tail(hostile: Hostile) -> None:
    result = hostile.run("spew", "python spew.py")
    assert result.status == "fail" and result.exit_code == 3
    kept = len(result.output.encode()) - len(f"\n[... {result.dropped_bytes} bytes dropped ...]\n")
    assert kept == 64 * 1024
    assert result.dropped_bytes == 100_000_000 - kept
    assert result.output.startswith("x" * 99 + "\n") and result.output.endswith("x" * 99 + "\n")


def test_an_endless_loop_times_out_and_its_whole_tree_dies(hostile: Hostile) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.5"  # a unique sleep length to find escaped processes by
    result = hostile.run("spin", f"python spin.py {marker}", timeout=2)
    assert result.status == "timeout"
    assert result.reason == "did not finish within 2 s; its whole process tree was killed"
    assert result.exit_code is None and 2 <= result.duration_s < 10
    assert not _host_processes_with(marker), "a process the check started in its own session survived the timeout"
    assert hostile.sandbox.exec("echo alive", timeout=10).output == "alive\n"


def _host_processes_with(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and "pytest" not in cmdline:
            found.append(cmdline)
    return found


def test_the_sandbox_user_is_not_root_and_host_can_clean_its_files(sandbox: Sandbox) -> None:
    result = sandbox.exec("id -u; mkdir -p made/deeper && echo hi > made/deeper/file", timeout=10)
    assert result.exit_code == 0, result.output
    assert result.output.split()[0] != "0"
    made = sandbox.workspace / "made" / "deeper" / "file"
    assert made.read_text() == "hi\n"
    assert made.stat().st_uid != 0 or os.geteuid() != 0
    made.unlink()
    (sandbox.workspace / "made" / "deeper").rmdir()
