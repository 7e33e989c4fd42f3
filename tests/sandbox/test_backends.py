"""Backend behaviour beyond the attacks: environment, artifacts, network during setup, choosing a backend."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from bot.contract.models import SandboxConfig
from bot.errors import SandboxUnavailable
from bot.sandbox.base import Sandbox, SandboxJob
from bot.sandbox.capture import HeadTail
from bot.sandbox.engine import engine_command, engine_env, probe_engine
from bot.sandbox.identity import grant_workspace, sandbox_identity
from bot.sandbox.select import open_sandbox
from tests.support.sandbox import (
    build_test_image,
    image_config,
    inside_env,
    open_test_sandbox,
    python_paths,
    skip_reason,
)


def test_environment_is_the_allowlist_plus_what_the_caller_adds(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-should-never-appear")
    result = sandbox.exec("env", timeout=10, env={"EXTRA_FOR_THIS_COMMAND": "yes"})
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert "sk-ant" not in result.output
    assert {"HOME", "TMPDIR", "PATH", "CI", "AI_FIX_ARTIFACTS", "EXTRA_FOR_THIS_COMMAND"} <= names
    assert not {n for n in names if n.startswith("AIFIX_")}
    again = sandbox.exec("env", timeout=10)
    assert "EXTRA_FOR_THIS_COMMAND" not in again.output


def test_artifacts_are_read_back_but_links_are_not_followed(sandbox: Sandbox) -> None:
    result = sandbox.exec(
        'echo report > "$AI_FIX_ARTIFACTS/r.xml" && ln -s /etc/passwd "$AI_FIX_ARTIFACTS/link"', timeout=10
    )
    assert result.exit_code == 0, result.output
    assert sandbox.read_artifact("r.xml") == b"report\n"
    assert sandbox.read_artifact("link") is None
    assert sandbox.read_artifact("missing") is None
    assert sandbox.read_artifact("r.xml", limit=3) is None
    with pytest.raises(ValueError):
        sandbox.read_artifact("../r.xml")


def test_the_workspace_is_shared_both_ways(sandbox: Sandbox) -> None:
    (sandbox.workspace / "from_host.txt").write_text("host")
    result = sandbox.exec("cat from_host.txt && pwd && echo sandbox > from_sandbox.txt", timeout=10)
    assert result.output == f"host{sandbox.workdir}\n"
    assert (sandbox.workspace / "from_sandbox.txt").read_text() == "sandbox\n"


def test_network_only_for_setup_when_the_config_allows_it(kind: str, tmp_path: Path) -> None:
    probe = "cat /proc/net/dev | grep -c ':'"  # lo only when there is no network namespace shared
    closed = open_test_sandbox(kind, tmp_path, image_config(network="none"))
    try:
        assert closed.exec(probe, timeout=30, setup=True).output.strip() == "1"
    finally:
        closed.close()
    opened = open_test_sandbox(kind, tmp_path, image_config(network="setup"))
    try:
        assert int(opened.exec(probe, timeout=30, setup=True).output) > 1
        assert opened.exec(probe, timeout=30).output.strip() == "1"
    finally:
        opened.close()


@pytest.mark.bwrap
def test_bwrap_setup_with_network_reaches_the_host(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        box = open_test_sandbox("bwrap", tmp_path, image_config(network="setup"))
        try:
            command = f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)\""
            assert box.exec(command, timeout=30, setup=True).exit_code == 0
            assert box.exec(command, timeout=30).exit_code == 1
        finally:
            box.close()


@pytest.mark.bwrap
def test_bwrap_mounts_a_toolchain_that_lives_under_tmp(tmp_path: Path) -> None:
    """A clone under /tmp (CI's, a user's) has its venv there: the sandbox's own /tmp must not hide it."""
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    assert str(tmp_path).startswith("/tmp/")
    tools = tmp_path / "tools" / "bin"
    tools.mkdir(parents=True)
    (tools / "hello-tool").write_text("#!/bin/sh\necho hello from the toolchain\n")
    (tools / "hello-tool").chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = open_sandbox("bwrap", workspace, SandboxConfig(), env={"PATH": f"{tools}:/usr/bin:/bin"}, ro_paths=[tools])
    try:
        result = box.exec("hello-tool && stat -c %a /tmp", timeout=10)
    finally:
        box.close()
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["hello", "from", "the", "toolchain", "1777"]


@pytest.mark.podman
def test_auto_prefers_a_working_container_engine(tmp_path: Path) -> None:
    if skip_reason("podman"):
        pytest.skip(f"this machine cannot run podman: {skip_reason('podman')}")
    build_test_image()
    box = open_sandbox("auto", tmp_path, image_config(), env=inside_env(), ro_paths=[Path("/usr"), *python_paths()])
    try:
        assert box.name == "podman"
        assert box.exec("echo up", timeout=10).output == "up\n"
    finally:
        box.close()
    listed = subprocess.run(
        [*engine_command("podman"), "ps", "-aq", "--filter", "label=ai-fix.sandbox"],
        env=engine_env("podman"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert box.container not in listed.stdout  # type: ignore[attr-defined]


def test_docker_without_a_running_engine_is_refused_with_the_reason(tmp_path: Path) -> None:
    reason = probe_engine("docker")
    if reason is None:
        pytest.skip("docker works on this machine")
    with pytest.raises(SandboxUnavailable, match=r"^docker: "):
        open_sandbox("docker", tmp_path, SandboxConfig())


def test_an_unknown_backend_names_the_choices(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="auto, podman, docker, bwrap, none"):
        open_sandbox("chroot", tmp_path, SandboxConfig())


def test_none_says_loudly_that_nothing_is_isolated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFIX_WEBHOOK_SECRET", "never-inside-even-here")
    with caplog.at_level(logging.WARNING):
        box = open_sandbox("none", tmp_path, SandboxConfig())
    try:
        assert "NOTHING IS ISOLATED" in caplog.text
        result = box.exec("echo $PWD; echo $HOME; env", timeout=10)
        pwd, home = result.output.splitlines()[:2]
        assert pwd == str(tmp_path.resolve()) and not home.startswith(pwd)
        assert "never-inside-even-here" not in result.output
        timed = box.exec("sleep 30", timeout=0.5)
        assert timed.timed_out and timed.exit_code is None
    finally:
        box.close()


def test_head_tail_keeps_both_ends_and_counts_the_middle() -> None:
    buf = HeadTail(10)
    for chunk in (b"abc", b"defghij", b"klmnopqrstuvwxyz"):
        buf.feed(chunk)
    assert buf.total == 26 and buf.dropped == 16
    assert buf.text() == "abcde\n[... 16 bytes dropped ...]\nvwxyz"
    small = HeadTail(100)
    small.feed(b"short")
    assert small.text() == "short" and small.dropped == 0


def test_a_commands_terminal_control_sequences_never_reach_its_output(kind: str, tmp_path: Path) -> None:
    box = open_test_sandbox(kind, tmp_path)
    try:
        result = box.exec(
            r"printf '\033[31mred\033[0m \033]8;;http://x.example\007link\033]8;;\007\007 done\n'", timeout=30
        )
    finally:
        box.close()
    assert result.output == "red link done\n"


def test_limits_come_from_the_config(kind: str, tmp_path: Path) -> None:
    (tmp_path / "forks.py").write_text(
        "import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n        time.sleep(5)\n        os._exit(0)\n"
    )
    box = open_test_sandbox(kind, tmp_path, image_config(pids=64, memory_mb=300))
    try:
        forks = box.exec("python forks.py", timeout=30)
        assert "BlockingIOError" in forks.output
        too_big = box.exec("python -c 'import time; b = bytearray(400 << 20); time.sleep(30)'", timeout=60)
        assert too_big.killed is not None and too_big.killed.startswith("killed (memory limit 300 MiB)")
        assert too_big.duration_s < 20, "killed when it went over, not at its end"
        assert box.exec("python -c 'bytearray(100 << 20)'", timeout=30).exit_code == 0
    finally:
        box.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the workspace is shared through a group only when ai-fix runs as root")
def test_sharing_the_workspace_never_follows_links_out_of_it(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "secret.txt"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "src").mkdir()
    (workspace / "src" / "mod.py").write_text("x = 1\n")
    (workspace / ".git" / "config").write_text("[core]\n")
    outside.write_text("host only")
    outside.chmod(0o600)
    (workspace / "src" / "link").symlink_to(outside)
    who = sandbox_identity()
    grant_workspace(workspace, who)
    assert (outside.stat().st_gid, stat.S_IMODE(outside.stat().st_mode)) == (0, 0o600)
    mod = (workspace / "src" / "mod.py").stat()
    assert mod.st_gid == who.gid and mod.st_mode & stat.S_IWGRP
    assert (workspace / "src").stat().st_mode & stat.S_ISGID
    assert (workspace / ".git" / "config").stat().st_gid == 0
    assert workspace.stat().st_uid == 0  # git on the host keeps trusting the repository


def test_memory_is_what_a_process_holds_not_what_it_reserves(kind: str, tmp_path: Path) -> None:
    """An address-space limit would refuse the 8 GiB reservation (as V8's code range, Go's arenas): only use counts."""
    box = open_test_sandbox(kind, tmp_path, image_config(memory_mb=256))
    try:
        reserved = box.exec("python -c 'import mmap; m = mmap.mmap(-1, 8 << 30); print(len(m) >> 30)'", timeout=30)
    finally:
        box.close()
    assert (reserved.exit_code, reserved.output.strip(), reserved.killed) == (0, "8", None), reserved.output


def test_multiprocessing_works_in_the_sandbox(kind: str, tmp_path: Path) -> None:
    """Its semaphores live in /dev/shm (flake8's and pytest-xdist's workers)."""
    box = open_test_sandbox(kind, tmp_path)
    try:
        queue = box.exec(
            "python -c 'import multiprocessing as mp; q = mp.Queue(); q.put(7); print(q.get()); mp.Lock()'",
            timeout=60,
        )
    finally:
        box.close()
    assert (queue.exit_code, queue.output.strip()) == (0, "7"), queue.output


@pytest.mark.bwrap
def test_node_s_webassembly_works_under_the_default_limits(tmp_path: Path) -> None:
    """V8 reserves a WebAssembly memory's guard regions (gigabytes) up front: node's own `fetch` (undici's llhttp)
    needs one."""
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    if shutil.which("node") is None:
        pytest.skip("no node on this machine")
    box = open_sandbox("bwrap", tmp_path, SandboxConfig(), job=SandboxJob(commands=("node",)))
    try:
        started = box.exec("node -e 'new WebAssembly.Memory({initial: 1}); console.log(process.version)'", timeout=60)
    finally:
        box.close()
    assert started.exit_code == 0 and started.output.startswith("v"), started.output
