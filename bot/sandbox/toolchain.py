"""The user's own toolchain under bwrap: what the job's commands find through the host's PATH, mounted read-only.

For every program a command runs (its first word, and the first word after `&&`, `||`, `;` and `|`,
past `env` and `VAR=value` assignments) that the host's PATH finds outside the system folders, the
sandbox gets: the folder it is in; a virtual environment it belongs to (`pyvenv.cfg` beside its
`bin`) and the interpreter that environment was made from; the installation a link points into (a
venv's `python` → `~/.pyenv/versions/3.12.4`, `npm` → its package under `node_modules`, `go` → its GOROOT); for a
script, the interpreter its `#!` line names, found the same way; and for rustup's proxies (`cargo`, `rustc`), rustup's
home with its toolchains, named by `RUSTUP_HOME` inside (the sandbox's HOME is not the user's). A Python reached through a shim (pyenv's) is asked where it
really lives; that folder goes first on PATH, so the shim is never needed inside. Only programs
the commands name are looked at, and only read-only: a repository cannot widen this beyond the
operator's own PATH.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.sandbox.environment import SYSTEM_PATHS

_OPERATORS = {"&&", "||", ";", "|", "&", "(", ")", "!"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_WHERE = "import sys; print(sys.executable)"
MAX_DEPTH = 4


def programs(commands: Iterable[str]) -> list[str]:
    """The programs the shell commands start, each once; Pythons first (their folders help find the rest)."""
    found: list[str] = []
    for command in commands:
        try:
            lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            continue
        expect, after_env = True, False
        for token in tokens:
            if token in _OPERATORS:
                expect, after_env = True, False
            elif not expect or _ASSIGNMENT.match(token) or (after_env and token.startswith("-")):
                continue
            elif token == "env":
                after_env = True
            else:
                expect = False
                if "/" not in token and token not in found:
                    found.append(token)
    return sorted(found, key=lambda p: _PYTHON.match(p) is None)


def is_system(path: Path) -> bool:
    return any(path.is_relative_to(s) for s in SYSTEM_PATHS)


@dataclass
class Toolchain:
    mounts: list[Path] = field(default_factory=list)
    """Host folders to bind read-only at the same path."""
    front: list[str] = field(default_factory=list)
    """Folders to put before the host's PATH (real interpreters found behind shims)."""
    missing: list[str] = field(default_factory=list)
    """Programs the host's PATH does not have at all."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables that tell a toolchain where its home is (`RUSTUP_HOME`), since the sandbox's HOME is not the user's."""

    def add(self, path: Path) -> None:
        if is_system(path) or not path.is_dir() or _too_wide(path) or any(path.is_relative_to(m) for m in self.mounts):
            return
        self.mounts = [m for m in self.mounts if not m.is_relative_to(path)] + [path]


def _too_wide(path: Path) -> bool:
    """A home folder (or above it) is never a toolchain: it holds the user's keys and settings."""
    return len(path.parts) < 3 or Path.home().is_relative_to(path) or (path.parent == Path("/home"))


def _installation(real: Path) -> Path:
    """What a linked-to file needs besides itself: its Node package, or the Python or Node installation whose `bin` holds it."""
    if "node_modules" in real.parts[:-1]:
        i = len(real.parts) - 1 - real.parts[::-1].index("node_modules")
        return Path(*real.parts[: i + 2])
    prefix = real.parent.parent if real.parent.name == "bin" else real.parent
    installed = (
        (prefix / "pyvenv.cfg").is_file()
        or any(prefix.glob("lib/python3*"))
        or (prefix / "lib/node_modules").is_dir()
        or (prefix / "src/runtime").is_dir()  # a Go installation: `go` finds its GOROOT from where it is
    )
    return prefix if installed else real.parent


def _shebang(path: Path) -> list[str]:
    try:
        with path.open("rb") as fh:
            head = fh.readline(256)
    except OSError:
        return []
    return head[2:].decode(errors="replace").split() if head.startswith(b"#!") else []


def _venv_home(bin_dir: Path) -> Path | None:
    """The `home` (the base interpreter's folder) of the virtual environment `bin_dir` belongs to."""
    try:
        text = (bin_dir.parent / "pyvenv.cfg").read_text()
    except OSError:
        return None
    m = re.search(r"^\s*home\s*=\s*(.+?)\s*$", text, re.M)
    return Path(m.group(1)) if m else None


def _ask_python(executable: Path) -> Path | None:
    """Where a Python reached through a shim really is (its own answer, run on the host with a fixed program)."""
    try:
        done = subprocess.run(
            [str(executable), "-c", _WHERE], capture_output=True, text=True, timeout=20, cwd="/", check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    real = Path(done.stdout.strip())
    return real if done.returncode == 0 and real.is_absolute() and real.exists() else None


def _rustup_home(chain: Toolchain, rustup_home: Path) -> None:
    """rustup's proxies (`cargo`, `rustc`) choose the toolchain from its home: its settings and toolchains."""
    if rustup_home.is_dir() and not is_system(rustup_home):
        chain.add(rustup_home)
        chain.env["RUSTUP_HOME"] = str(rustup_home)


def _follow(chain: Toolchain, executable: Path, path: str, rustup_home: Path, depth: int = 0) -> None:
    if depth > MAX_DEPTH or is_system(executable):
        return
    chain.add(executable.parent)
    if (home := _venv_home(executable.parent)) is not None:
        chain.add(executable.parent.parent)
        _follow(chain, home / "python3", path, rustup_home, depth + 1)
    real = executable.resolve()
    if real.name == "rustup":
        _rustup_home(chain, rustup_home)
    if real != executable or _PYTHON.match(executable.name) or executable.name == "go":
        chain.add(_installation(real))
    interpreter = _shebang(real)
    if interpreter[:1] == ["/usr/bin/env"] and len(interpreter) > 1:
        found = shutil.which(interpreter[1], path=path)
        if found:
            _follow(chain, Path(found), path, rustup_home, depth + 1)
    elif interpreter:
        _follow(chain, Path(interpreter[0]), path, rustup_home, depth + 1)


def resolve_toolchain(commands: Iterable[str], path: str, *, rustup_home: Path | None = None) -> Toolchain:
    """What bwrap must mount so `commands` find what a shell with this PATH finds.

    `rustup_home`: where rustup keeps its toolchains on the host (`RUSTUP_HOME`, else `~/.rustup`).
    """
    rustup_home = rustup_home or Path.home() / ".rustup"
    chain = Toolchain()
    for program in programs(commands):
        exe = next((Path(d) / program for d in chain.front if (Path(d) / program).is_file()), None)
        if exe is None and (found := shutil.which(program, path=path)) is not None:
            exe = Path(found)
        if exe is None:
            chain.missing.append(program)
            continue
        if _PYTHON.match(program) and _shebang(exe.resolve()) and (real := _ask_python(exe)) is not None:
            chain.front.append(str(real.parent))
            exe = real
        _follow(chain, exe, path, rustup_home)
    return chain


def missing_advice(program: str, path: str) -> str:
    """Why a program was not found under bwrap and what adds it."""
    found = shutil.which(program, path=path)
    if found is None:
        return (
            f"command not found: {program}; it is not on this host's PATH either: install it, "
            "or add a setup command that installs it into the project's environment"
        )
    return (
        f"command not found: {program}; on this host it is {found}, which the sandbox cannot run: "
        "add the folders it needs (its own and its interpreter's) to AIFIX_SANDBOX_RO_PATHS"
    )
