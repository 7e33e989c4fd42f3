"""Which contract checks a failing CI command maps to: the same tool run the same way (pure).

`python -m pytest -q tests`, `uv run pytest`, `pytest` and `env X=1 /opt/venv/bin/python -m pytest` are all
`pytest`; `npm test` and `npm run test` are `npm:test`; `go test ./...` is `go test`. A CI command made of
several shell commands maps to each contract check that runs one of the same tools.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence

from bot.contract.models import Check

_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^(python|python3(\.\d+)?|py|pypy3?)$")
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
"""Project managers whose `run` runs the next words as a command."""
_WRAPPERS = frozenset({"env", "sudo", "time", "nice", "xvfb-run", "coverage"})
_PACKAGE_MANAGERS = frozenset({"npm", "yarn", "pnpm", "bun"})
_SUBCOMMANDS = {"go": ("test", "vet"), "cargo": ("test", "clippy", "check"), "make": None, "just": None}


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _tool(words: list[str]) -> str | None:
    """The tool a command's words run, named the same however it is invoked."""
    while words and (words[0] in _WRAPPERS or _ASSIGNMENT.match(words[0]) or words[0].startswith("-")):
        if words[0] == "coverage" and len(words) > 1 and words[1] == "run":
            words = words[2:]
            if words and words[0] == "-m":
                words = words[1:]
            continue
        words = words[1:]
    if not words:
        return None
    program = posixpath.basename(words[0])
    rest = words[1:]
    if _PYTHON.match(program):
        return rest[1] if len(rest) >= 2 and rest[0] == "-m" else None
    if program in _RUNNERS and rest[:1] == ["run"]:
        return _tool(rest[1:])
    if program in ("npx", "pnpx", "bunx"):
        return _tool(rest)
    if program in _PACKAGE_MANAGERS:
        script = rest[1] if rest[:1] == ["run"] and len(rest) > 1 else rest[0] if rest else ""
        return f"npm:{script}" if script else None
    if program in _SUBCOMMANDS:
        allowed = _SUBCOMMANDS[program]
        sub = next((w for w in rest if not w.startswith("-")), "")
        return f"{program} {sub}" if sub and (allowed is None or sub in allowed) else program
    if program == "py.test":
        return "pytest"
    return program


def tools(command: str) -> set[str]:
    """The tools each shell command of `command` runs."""
    found = {_tool(_words(segment.strip())) for segment in _SEPARATORS.split(command) if segment.strip()}
    return {t for t in found if t}


def mapped_checks(command: str, checks: Sequence[Check]) -> list[str]:
    """The names of the contract checks that run a tool the CI command runs (none when the command is unknown)."""
    wanted = tools(command)
    if not wanted:
        return []
    return [c.name for c in checks if tools(c.run) & wanted]
