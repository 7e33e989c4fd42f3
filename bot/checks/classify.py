"""Deciding what a check's outcome means: the code's fault, the environment's, or the sandbox's limits."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from bot.checks.models import TestCase
from bot.contract.models import SandboxConfig
from bot.sandbox.base import ExecResult
from bot.vocabulary import CheckStatus

_PROCESS_LIMIT = re.compile(
    r"Cannot fork|fork: (?:retry: )?Resource temporarily unavailable|can't start new thread"
    r"|fork failed: resource temporarily unavailable",
    re.I,
)
_EAGAIN = re.compile(r"BlockingIOError: \[Errno 11\]")
_SPAWNING = re.compile(r"fork|spawn|Popen|posix_spawn|start_new_thread")
"""EAGAIN is a process limit only in a traceback that was creating a process (sockets raise it too)."""
SPAWN_WINDOW = 2000
_MEMORY_LIMIT = re.compile(
    r"^(?:E\s+)?MemoryError\b|Cannot allocate memory|std::bad_alloc|JavaScript heap out of memory", re.M
)

_COMMAND_NOT_FOUND = (
    # dash: "sh: 1: tool: not found"; bash: "bash: line 1: tool: command not found"; zsh/busybox alike.
    re.compile(r"^\S*sh: (?:\d+: |line \d+: )?(?:eval: )?(?P<what>[^:\n]+): (?:command )?not found$", re.M),
    re.compile(r"^\S+\.sh: (?:\d+: |line \d+: )(?P<what>[^:\n]+): (?:command )?not found$", re.M),
    re.compile(r"^(?P<what>\S+): command not found$", re.M),
)
_MISSING_MODULE = re.compile(
    r"(?:ModuleNotFoundError|ImportError): No module named '(?P<what>[^']+)'"
    r"|^\S*python[\d.]*: No module named (?P<run>[\w.]+)$",  # `python -m tool` without the tool
    re.M,
)
_MISSING_NODE_MODULE = re.compile(r"Cannot find module '(?P<what>[^'./][^']*)'")
_MISSING_LIBRARY = re.compile(r"error while loading shared libraries: (?P<what>[^:\s]+)")
_NO_TESTS = re.compile(r"^(?:=+ )?no tests ran\b", re.M)
_INSTALLED_IMPORT = re.compile(r"ImportError: cannot import name '[^']+' from '(?P<pkg>[\w.]+)'")
_RUNNER_CRASH = re.compile(r"^INTERNALERROR> (?P<line>[\w.]*(?:Error|Exception)\b.*)$", re.M)
"""pytest's own crash: its last line names the exception that took the runner down."""

PYTEST_NO_TESTS = 5


def classify(
    result: ExecResult,
    *,
    timeout: float,
    limits: SandboxConfig,
    local_modules: Collection[str] = (),
    missing: Callable[[str], str] | None = None,
) -> tuple[CheckStatus, str]:
    """The status of one run of a check and, unless it passed or plainly failed, why in words.

    `local_modules`: top-level Python module names that live in the workspace, so an import of one
    of them failing is the code's fault (`fail`) while a missing third-party module is `error`.
    `missing` says, for a program not found, what the sandbox would need (the backend knows).
    """
    if result.timed_out:
        return "timeout", f"did not finish within {timeout:g} s; its whole process tree was killed"
    if result.killed:
        return "killed", result.killed
    if result.exit_code == 0:
        return "pass", ""
    out = result.output
    if _PROCESS_LIMIT.search(out) or any(
        _SPAWNING.search(out, max(0, m.start() - SPAWN_WINDOW), m.start()) for m in _EAGAIN.finditer(out)
    ):
        return "killed", f"hit the sandbox's process limit ({limits.pids} processes)"
    if _MEMORY_LIMIT.search(out):
        return "killed", f"hit the sandbox's memory limit ({limits.memory_mb} MiB)"
    env_error = environment_error(out, local_modules=local_modules, missing=missing)
    if env_error:
        return "error", env_error
    if result.exit_code == PYTEST_NO_TESTS and _NO_TESTS.search(out):
        return "error", "no tests were collected; check the command's test paths"
    if result.exit_code == 126:
        return "error", "the command is not executable (exit 126); fix its permissions or the command"
    if result.exit_code == 127:
        return "error", "command not found (exit 127); install it in the image or add a setup command"
    return "fail", ""


def environment_error(
    output: str, *, local_modules: Collection[str] = (), missing: Callable[[str], str] | None = None
) -> str:
    """Why the environment, not the code, made the command fail; "" when nothing points there."""
    for pattern in _COMMAND_NOT_FOUND:
        m = pattern.search(output)
        if m:
            program = m.group("what").strip()
            if missing is not None:
                return missing(program)
            return f"command not found: {program}; install it in the sandbox image or add a setup command"
    for m in _MISSING_MODULE.finditer(output):
        what = m.group("what") or m.group("run")
        if what.split(".")[0] not in local_modules:
            return f"missing Python module {what!r}; install the project's dependencies in a setup command"
    m = _MISSING_NODE_MODULE.search(output)
    if m:
        return f"missing Node module {m.group('what')!r}; run the package install in a setup command"
    m = _MISSING_LIBRARY.search(output)
    if m:
        return f"missing shared library {m.group('what')}; install it in the sandbox image"
    for m in _INSTALLED_IMPORT.finditer(output):
        if m.group("pkg").split(".")[0] not in local_modules:
            return (
                f"an installed package lacks what the tests import ({m.group(0)}); install the version the project "
                "needs in a setup command"
            )
    crashes = [m.group("line").strip() for m in _RUNNER_CRASH.finditer(output)]
    if crashes:
        return f"the test runner itself crashed ({crashes[-1][:200]}); a plugin or the runner's version does not fit"
    return ""


def local_module_names(paths: Collection[str]) -> set[str]:
    """Top-level importable names in a list of workspace paths (also under a `src/` layout)."""
    names: set[str] = set()
    for path in paths:
        parts = path.split("/")
        if parts[0] == "src" and len(parts) > 1:
            parts = parts[1:]
        head = parts[0]
        if len(parts) > 1:
            names.add(head)
        elif head.endswith(".py"):
            names.add(head[:-3])
    return names


def tests_failed(tests: list[TestCase]) -> list[TestCase]:
    return [t for t in tests if t.status in ("fail", "error")]
