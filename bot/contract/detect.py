"""Find a repository's own checks when it has no `.github/ai-fix.yml`.

Reads only manifest and config files at the root of the default branch (a handful of reads, cheap
over the contents API). Each check found is marked `detected`; one test runner per ecosystem,
`make test` only when no language runner was found (it usually wraps one of them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from bot.contract.files import RepoFiles
from bot.contract.models import Check
from bot.contract.pytests import mypy_check, packages, test_command
from bot.contract.root import Root
from bot.contract.workflows import RunLine, workflow_lines
from bot.envdir import ENV_DIR

_NPM_PLACEHOLDER = "no test specified"
MAX_TEST_FILES_READ = 5
"""Enough test files to tell unittest from pytest without reading a whole suite over the contents API."""
TEST_RUNNERS = frozenset({"pytest", "unittest", "tox", "nox", "npm-test", "go-test", "cargo-test", "make-test"})
"""Detected checks that run the project's tests; the others (linters, type checkers) cannot verify a criterion alone."""


def _pytest_configured(root: Root) -> str | None:
    """Where the project configures or names pytest, if it does."""
    for name in ("pytest.ini", "conftest.py"):
        if root.has(name):
            return name
    if root.tool("pytest"):
        return "pyproject.toml [tool.pytest]"
    for file, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        if root.ini_section(file, section):
            return f"{file} [{section}]"
    files = ("pyproject.toml", "setup.cfg", "tox.ini", "noxfile.py", "requirements-dev.txt", "requirements.txt")
    return next((f"pytest named in {f}" for f in files if "pytest" in root.text(f)), None)


def _python_tests(root: Root, lines: list[RunLine]) -> list[Check]:
    if (found := test_command(root, lines)) is not None:
        return [Check(name="pytest", run=found.run, origin="detected", source=found.source)]
    configured = _pytest_configured(root)
    is_python = root.has("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "requirements.txt")
    folder, unittest_only = _test_folder(root)
    if configured or (is_python and folder and not unittest_only):
        source = configured or f"test_*.py files in {folder}/"
        return [Check(name="pytest", run="python -m pytest -q", origin="detected", source=source)]
    if folder and unittest_only:
        top = " -t ." if root.files.read_text(f"{folder}/__init__.py") is not None else ""
        run = f"python -m unittest discover -s {folder}{top} -v"
        return [Check(name="unittest", run=run, origin="detected", source=f"unittest tests in {folder}/")]
    if root.has("tox.ini") or root.tool("tox"):
        return [
            Check(
                name="tox",
                run="tox",
                origin="detected",
                source="tox.ini" if root.has("tox.ini") else "pyproject.toml [tool.tox]",
            )
        ]
    if root.has("noxfile.py"):
        return [Check(name="nox", run="nox", origin="detected", source="noxfile.py")]
    return []


def _python(root: Root) -> list[Check]:
    checks = _python_tests(root, workflow_lines(root))
    ruff = next(
        (f for f in ("ruff.toml", ".ruff.toml") if root.has(f)),
        "pyproject.toml [tool.ruff]" if root.tool("ruff") else None,
    )
    flake8 = next(
        (f"{f} [flake8]" for f in ("setup.cfg", "tox.ini") if root.ini_section(f, "flake8")),
        ".flake8" if root.has(".flake8") else None,
    )
    if ruff:
        checks.append(Check(name="ruff", run="ruff check --no-fix .", timeout=300, origin="detected", source=ruff))
    elif flake8:
        # Its walk would descend into ai-fix's own environment, which the project's own excludes cannot know of.
        run = f"python -m flake8 --extend-exclude={ENV_DIR},node_modules"
        checks.append(Check(name="flake8", run=run, timeout=300, origin="detected", source=flake8))
    if (mypy := mypy_check(root)) is not None:
        checks.append(Check(name="mypy", run=mypy.run, origin="detected", source=mypy.source))
    return checks


def _test_folder(root: Root) -> tuple[str | None, bool]:
    """(the folder holding test_*.py files: `tests/`, `test/`, else the package's own `tests/` (`toolz/tests/`);
    whether they are written for unittest alone)."""
    for folder in ("tests", "test", *(f"{package}/tests" for package in packages(root))):
        if "/" not in folder and not root.has(folder):
            continue
        files = [
            p for p in root.files.list_dir(folder) if p.rsplit("/", 1)[-1].startswith("test_") and p.endswith(".py")
        ]
        if files:
            texts = [root.files.read_text(p) or "" for p in files[:MAX_TEST_FILES_READ]]
            uses_unittest = any(re.search(r"^\s*(?:import|from) unittest\b", t, re.M) for t in texts)
            uses_pytest = any(re.search(r"\bpytest\b", t) for t in texts)
            return folder, uses_unittest and not uses_pytest
    return None, False


def _node(root: Root) -> list[Check]:
    if not root.has("package.json"):
        return []
    try:
        scripts = json.loads(root.text("package.json")).get("scripts") or {}
    except (json.JSONDecodeError, AttributeError):
        return []
    runner = "pnpm" if root.has("pnpm-lock.yaml") else "yarn" if root.has("yarn.lock") else "npm"
    checks: list[Check] = []
    test = scripts.get("test")
    if isinstance(test, str) and _NPM_PLACEHOLDER not in test:
        checks.append(
            Check(name="npm-test", run=f"{runner} test", origin="detected", source="package.json scripts.test")
        )
    if isinstance(scripts.get("lint"), str):
        checks.append(
            Check(
                name="npm-lint",
                run=f"{runner} run lint",
                timeout=300,
                origin="detected",
                source="package.json scripts.lint",
            )
        )
    return checks


def _go(root: Root) -> list[Check]:
    return (
        [Check(name="go-test", run="go test ./...", origin="detected", source="go.mod")] if root.has("go.mod") else []
    )


def _rust(root: Root) -> list[Check]:
    check = Check(name="cargo-test", run="cargo test", origin="detected", source="Cargo.toml")
    return [check] if root.has("Cargo.toml") else []


def _make(root: Root) -> list[Check]:
    makefile = next((m for m in ("GNUmakefile", "makefile", "Makefile") if root.has(m)), None)
    if makefile and re.search(r"^test\s*:", root.text(makefile), re.M):
        return [Check(name="make-test", run="make test", origin="detected", source=f"{makefile} test target")]
    return []


_LANGUAGE_RULES: tuple[Callable[[Root], list[Check]], ...] = (_python, _node, _go, _rust)


def detect_checks(files: RepoFiles | Root) -> list[Check]:
    """The checks a repository's own files point at, each `origin="detected"`."""
    root = files if isinstance(files, Root) else Root(files)
    checks = [c for rule in _LANGUAGE_RULES for c in rule(root)]
    if not any(c.name in TEST_RUNNERS for c in checks):
        checks = _make(root) + checks
    return checks


def can_verify(check: Check) -> bool:
    """Whether a check can tell that a criterion holds: any check the config or issue names, a detected test runner."""
    return check.origin != "detected" or check.name in TEST_RUNNERS
