"""How a Python project runs its tests and linters, ranked by how directly the project says so.

The test command, first found wins: a test line of the CI's testing job (`pytest tests/`,
`python -m pytest`, `coverage run -m pytest`), then a test command of its tox environment (the one the
CI runs) or nox session, then `python -m pytest -q` when pytest is configured anywhere. What the
project's command wraps around pytest (coverage, `uv run`, `poetry run`, `hatch run`) is taken off and
what would change ai-fix's reading of it is dropped (`--cov*`, which fails a selected subset on its
threshold, and `--junitxml`, which would replace ai-fix's own report): it runs as `python -m pytest` with
the project's own paths and options.

Linters as the project runs them: `ruff check --no-fix` (never its `fix = true`), mypy only where its
own configuration section names what to check (`files`) or else on the package, each section read only
when it is the tool's own (`[mypy]`, never another tool's `files =`).
"""

from __future__ import annotations

import configparser
import re
import shlex
from dataclasses import dataclass

from bot.contract.root import Root
from bot.contract.testenv import TestEnv, nox_env, tox_env, tox_env_running
from bot.contract.workflows import RunLine, tox_env_named, words

RUNNERS = (("uv", "run"), ("poetry", "run"), ("pdm", "run"), ("hatch", "run"), ("pipenv", "run"))
DROPPED_WITH_VALUE = frozenset(
    {"--cov", "--cov-report", "--cov-config", "--cov-fail-under", "--junitxml", "--junit-xml"}
)
DROPPED = ("--cov", "--no-cov", "--junitxml", "--junit-xml", "--cov-context")


@dataclass(frozen=True)
class Found:
    run: str
    source: str


def test_env(root: Root, lines: list[RunLine]) -> TestEnv | None:
    """The tox environment the CI runs (or tox's base one), else the nox test session."""
    named = tox_env_named(lines)
    return tox_env(root, named[0] if named else "") or nox_env(root)


def _pytest_args(argv: list[str]) -> list[str] | None:
    """The arguments after pytest in a command that runs it, or None when it does not run pytest."""
    while argv and "=" in argv[0] and not argv[0].startswith("-"):
        argv = argv[1:]  # VAR=value
    for runner in RUNNERS:
        if tuple(argv[:2]) == runner:
            argv = argv[2:]
    if argv[:1] in (["pytest"], ["py.test"]):
        return argv[1:]
    if "-m" in argv and argv.index("-m") + 1 < len(argv) and argv[argv.index("-m") + 1] == "pytest":
        head = argv[: argv.index("-m")]
        if head and (head[0].startswith("python") or head[0] == "coverage"):
            return argv[argv.index("-m") + 2 :]
    return None


def _kept(args: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in DROPPED_WITH_VALUE:
            skip = True
        elif not arg.startswith(DROPPED):
            kept.append(arg)
    return kept


def pytest_command(command: str) -> str | None:
    """`command` as `python -m pytest ...` when it runs pytest (wrappers off, see the module docstring)."""
    args = _pytest_args(words(command))
    return None if args is None else shlex.join(["python", "-m", "pytest", *_kept(args)])


def test_command(root: Root, lines: list[RunLine]) -> Found | None:
    """The project's own test command, with where it came from."""
    for line in lines:
        if "${{" not in line.command and (run := pytest_command(line.command)) is not None:
            return Found(run, line.source)
    env = test_env(root, lines)
    for command in env.commands if env else ():
        if (run := pytest_command(command)) is not None:
            return Found(run, f"{env.source} commands" if env else "")
    return None


def _section(root: Root, file: str, section: str) -> dict[str, str] | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(root.text(file))
    except configparser.Error:
        return None
    return dict(parser[section]) if parser.has_section(section) else None


def mypy_check(root: Root) -> Found | None:
    """mypy as the project runs it: its tox environment's command, else on the files its own configuration section
    names, else on the package."""
    if (env := tox_env_running(root, "mypy")) is not None:
        command = next(c for c in env.commands if re.match(r"(python -m )?mypy\b", c))
        return Found(
            shlex.join(["python", "-m", "mypy", *words(command.removeprefix("python -m "))[1:]]),
            f"{env.source} commands",
        )
    for file in ("mypy.ini", ".mypy.ini", "setup.cfg"):
        own = _section(root, file, "mypy") if root.has(file) else None
        if own is not None:
            return (
                Found("python -m mypy", f"{file} [mypy]") if own.get("files") else _on_package(root, f"{file} [mypy]")
            )
    tool = root.pyproject().get("tool")
    mypy = tool.get("mypy") if isinstance(tool, dict) else None
    if isinstance(mypy, dict):
        source = "pyproject.toml [tool.mypy]"
        return Found("python -m mypy", source) if mypy.get("files") else _on_package(root, source)
    return None


def packages(root: Root) -> list[str]:
    """The project's import packages (folders with `__init__.py`, not its tests), under `src/` first; the one named
    as the project leads."""
    project = root.pyproject().get("project")
    name = str(project.get("name", "")).replace("-", "_").lower() if isinstance(project, dict) else ""
    found: list[str] = []
    for base in ("src", ""):
        folders = [p.rstrip("/").rsplit("/", 1)[-1] for p in root.files.list_dir(base) if p.endswith("/")]
        for folder in sorted(folders, key=lambda f: f != name):
            path = f"{base}/{folder}" if base else folder
            if folder not in ("tests", "test", "testing") and root.files.read_text(f"{path}/__init__.py") is not None:
                found.append(path)
    return found


def package_dir(root: Root) -> str | None:
    """The project's import package: `src/<pkg>` or `<pkg>`."""
    return next(iter(packages(root)), None)


def _on_package(root: Root, source: str) -> Found | None:
    package = package_dir(root)
    return Found(f"python -m mypy {package}", f"{source}, on the package") if package else None
