"""Find a repository's own checks when it has no `.github/ai-fix.yml`.

Reads only manifest and config files at the root of the default branch (a handful of reads, cheap
over the contents API). Each check found is marked `detected`; one test runner per ecosystem,
`make test` only when no language runner was found (it usually wraps one of them).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable

from bot.contract.files import RepoFiles
from bot.contract.models import Check

_NPM_PLACEHOLDER = "no test specified"
MAX_TEST_FILES_READ = 5
"""Enough test files to tell unittest from pytest without reading a whole suite over the contents API."""
TEST_RUNNERS = frozenset({"pytest", "unittest", "tox", "nox", "npm-test", "go-test", "cargo-test", "make-test"})
"""Detected checks that run the project's tests; the others (linters, type checkers) cannot verify a criterion alone."""


class Root:
    """The root listing plus cached reads, so each rule stays a one-liner (setup detection reads through it too)."""

    def __init__(self, files: RepoFiles) -> None:
        self.files = files
        self.names = {p.rstrip("/") for p in files.list_dir("")}
        self._texts: dict[str, str] = {}

    def has(self, *names: str) -> bool:
        return any(n in self.names for n in names)

    def text(self, name: str) -> str:
        if name not in self._texts:
            self._texts[name] = (self.files.read_text(name) or "") if name in self.names else ""
        return self._texts[name]

    def pyproject(self) -> dict[str, object]:
        try:
            return tomllib.loads(self.text("pyproject.toml"))
        except tomllib.TOMLDecodeError:
            return {}

    def tool(self, name: str) -> bool:
        tool = self.pyproject().get("tool")
        return isinstance(tool, dict) and name in tool

    def ini_section(self, file: str, section: str) -> bool:
        return re.search(rf"^\[{re.escape(section)}\]", self.text(file), re.M) is not None


def _python(root: Root) -> list[Check]:
    checks: list[Check] = []
    mentions_pytest = any(
        "pytest" in root.text(f)
        for f in ("pyproject.toml", "setup.cfg", "tox.ini", "noxfile.py", "requirements-dev.txt", "requirements.txt")
    )
    pytest = (
        root.has("pytest.ini", "conftest.py")
        or root.tool("pytest")
        or root.ini_section("setup.cfg", "tool:pytest")
        or root.ini_section("tox.ini", "pytest")
        or mentions_pytest
    )
    is_python = root.has("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "requirements.txt")
    folder, unittest_only = _test_folder(root)
    if pytest or (is_python and folder and not unittest_only):
        checks.append(Check(name="pytest", run="python -m pytest -q", origin="detected"))
    elif folder and unittest_only:
        top = " -t ." if root.files.read_text(f"{folder}/__init__.py") is not None else ""
        run = f"python -m unittest discover -s {folder}{top} -v"
        checks.append(Check(name="unittest", run=run, origin="detected"))
    elif root.has("tox.ini") or root.tool("tox"):
        checks.append(Check(name="tox", run="tox", origin="detected"))
    elif root.has("noxfile.py"):
        checks.append(Check(name="nox", run="nox", origin="detected"))
    if root.has("ruff.toml", ".ruff.toml") or root.tool("ruff"):
        checks.append(Check(name="ruff", run="ruff check .", timeout=300, origin="detected"))
    elif root.has(".flake8") or root.ini_section("setup.cfg", "flake8") or root.ini_section("tox.ini", "flake8"):
        checks.append(Check(name="flake8", run="python -m flake8", timeout=300, origin="detected"))
    mypy_ini = next((f for f in ("mypy.ini", ".mypy.ini") if root.has(f)), None)
    if mypy_ini or root.tool("mypy") or root.ini_section("setup.cfg", "mypy"):
        mypy_conf = root.text(mypy_ini) if mypy_ini else root.text("pyproject.toml") + root.text("setup.cfg")
        configured_files = re.search(r"^\s*files\s*=", mypy_conf, re.M) is not None
        checks.append(Check(name="mypy", run="python -m mypy" + ("" if configured_files else " ."), origin="detected"))
    return checks


def _test_folder(root: Root) -> tuple[str | None, bool]:
    """(the `tests/` or `test/` folder holding test_*.py files, whether they are written for unittest alone)."""
    for folder in ("tests", "test"):
        if not root.has(folder):
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
        checks.append(Check(name="npm-test", run=f"{runner} test", origin="detected"))
    if isinstance(scripts.get("lint"), str):
        checks.append(Check(name="npm-lint", run=f"{runner} run lint", timeout=300, origin="detected"))
    return checks


def _go(root: Root) -> list[Check]:
    return [Check(name="go-test", run="go test ./...", origin="detected")] if root.has("go.mod") else []


def _rust(root: Root) -> list[Check]:
    return [Check(name="cargo-test", run="cargo test", origin="detected")] if root.has("Cargo.toml") else []


def _make(root: Root) -> list[Check]:
    makefile = next((m for m in ("GNUmakefile", "makefile", "Makefile") if root.has(m)), None)
    if makefile and re.search(r"^test\s*:", root.text(makefile), re.M):
        return [Check(name="make-test", run="make test", origin="detected")]
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
