"""The user's own toolchain under bwrap: the programs the commands name, found as the host's PATH finds them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.contract.models import SandboxConfig
from bot.sandbox.base import SandboxJob
from bot.sandbox.select import open_sandbox
from bot.sandbox.toolchain import missing_advice, programs, resolve_toolchain
from tests.support.pypi_project import fetch
from tests.support.sandbox import skip_reason


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_programs_are_the_words_the_shell_starts() -> None:
    commands = [
        "env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q tests",
        "ruff check . && mypy src | tee /tmp/out; FOO=1 npm test",
        "/abs/tool --flag",
        "env -i A=b node x.js",
    ]
    assert programs(commands) == ["python", "ruff", "mypy", "tee", "npm", "node"]


def test_a_virtual_environment_brings_its_own_folder_and_the_interpreter_it_was_made_from(tmp_path: Path) -> None:
    base = tmp_path / "pythons" / "3.12.4"
    (base / "lib" / "python3.12").mkdir(parents=True)
    real = executable(base / "bin" / "python3.12", "")
    venv = tmp_path / "project" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(real)
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\n")
    executable(venv / "bin" / "pytest", f"#!{venv / 'bin' / 'python'}\nimport pytest\n")
    chain = resolve_toolchain(["python -m pytest", "pytest -q", "ruff check ."], f"{venv / 'bin'}:/usr/bin:/bin")
    assert chain.mounts == [venv, base]
    assert chain.missing == ["ruff"]


def test_a_script_is_followed_to_its_interpreter_and_a_linked_package_to_its_folder(tmp_path: Path) -> None:
    node = tmp_path / "nvm" / "versions" / "node" / "v20"
    executable(node / "bin" / "node", "")
    cli = executable(node / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js", "#!/usr/bin/env node\n")
    (node / "bin" / "npm").symlink_to(cli)
    chain = resolve_toolchain(["npm test"], f"{node / 'bin'}:/usr/bin:/bin")
    assert chain.mounts == [node / "bin", node / "lib" / "node_modules" / "npm"]


def test_a_python_behind_a_shim_is_asked_where_it_lives(tmp_path: Path) -> None:
    shim = executable(tmp_path / "shims" / "python3", f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    chain = resolve_toolchain(["python3 -m pytest"], f"{shim.parent}:/usr/bin:/bin")
    assert chain.front == [str(Path(sys.executable).parent)]
    assert Path(sys.prefix) in chain.mounts or any(Path(sys.prefix).is_relative_to(m) for m in chain.mounts)
    assert shim.parent not in chain.mounts, "the shim itself is never needed inside"


def test_what_is_missing_is_named_with_the_setting_that_adds_it(tmp_path: Path) -> None:
    tool = executable(tmp_path / "bin" / "lint-it", "#!/bin/sh\n")
    assert "not on this host's PATH either" in missing_advice("lint-it", "/usr/bin:/bin")
    found = missing_advice("lint-it", f"{tool.parent}:/usr/bin")
    assert f"on this host it is {tool}" in found and "AIFIX_SANDBOX_RO_PATHS" in found


@pytest.mark.bwrap
def test_checks_find_the_python_of_the_users_shell_without_any_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A virtual environment outside /usr (a user's, made from a pyenv-style Python) on PATH, no AIFIX_SANDBOX_RO_PATHS."""
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    env = tmp_path / "user-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q", "--no-index",
         "--find-links", str(fetch() / "wheels"), "pytest"],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("PATH", f"{env / 'bin'}:/usr/bin:/bin")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    commands = ("python -m pytest --version", "ruff check .")
    box = open_sandbox("bwrap", workspace, SandboxConfig(), job=SandboxJob(commands=commands))
    try:
        where = box.exec("python -c 'import sys; print(sys.prefix)' && python -m pytest --version", timeout=60)
        lint = box.exec("ruff check .", timeout=30)
        advice = box.missing_command("ruff")
    finally:
        box.close()
    assert where.exit_code == 0, where.output
    assert where.output.splitlines()[0] == str(env) and "pytest 9.2.0" in where.output
    assert lint.exit_code == 127 and "not on this host's PATH either" in advice


def test_rustup_s_proxies_bring_rustup_s_home(tmp_path: Path) -> None:
    rustup = executable(tmp_path / "cargo-home" / "bin" / "rustup", "#!/bin/sh\n")
    (rustup.parent / "cargo").symlink_to("rustup")
    home = tmp_path / "rustup-home"
    (home / "toolchains").mkdir(parents=True)
    chain = resolve_toolchain(["cargo test"], f"{rustup.parent}:/usr/bin", rustup_home=home)
    assert rustup.parent in chain.mounts and home in chain.mounts
    assert chain.env == {"RUSTUP_HOME": str(home)}
    assert resolve_toolchain(["cargo test"], f"{rustup.parent}:/usr/bin", rustup_home=tmp_path / "none").env == {}


@pytest.mark.bwrap
def test_cargo_managed_by_rustup_runs_under_bwrap(tmp_path: Path) -> None:
    """The machine's own rustup (`~/.cargo/bin/cargo` → rustup, its toolchains in `~/.rustup`), no setting."""
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    cargo = shutil.which("cargo")
    if cargo is None or Path(cargo).resolve().name != "rustup":
        pytest.skip("no rustup-managed cargo on this machine's PATH")
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "Cargo.toml").write_text('[package]\nname = "one"\nversion = "0.1.0"\nedition = "2021"\n')
    (workspace / "src" / "lib.rs").write_text("#[test]\nfn adds() { assert_eq!(1 + 1, 2); }\n")
    box = open_sandbox("bwrap", workspace, SandboxConfig(), job=SandboxJob(commands=("cargo test",)))
    try:
        tested = box.exec("cargo test --offline", timeout=300)
    finally:
        box.close()
    assert tested.exit_code == 0, tested.output
    assert "test adds ... ok" in tested.output
