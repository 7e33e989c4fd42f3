"""A real project for environment tests: structlog 24.4.0 from its PyPI source release, with its test extra.

It has a src layout, a `tests` extra, pytest, ruff and mypy configured, and a hatchling build: what a
new user's ordinary Python repository looks like. Everything is pinned and fetched once into
`.cache/test-projects/` (`scripts/setup.sh` runs `python -m tests.support.pypi_project`; a test that
finds the cache empty fetches it itself): the sdist, every wheel its detected setup installs (the `tests` and
`typing` extras and `coverage[toml]`, as its tox.ini's environments do; no ruff among them: that check cannot run),
and a newer structlog wheel for the "host" Python, so a check that imported the host's copy would test other code.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

from tests.support.repos import git

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "test-projects"
SDIST = "structlog==24.4.0"
HOST = "structlog==26.1.0"
"""Installed into the "host" Python in another version: the bug planted in the repository is not in it."""
WHEELS = (
    "ast-serialize==0.13.1",
    "attrs==26.1.0",
    "automat==25.4.16",
    "constantly==23.10.4",
    "coverage==7.18.0",
    "editables==0.6",
    "freezegun==1.5.5",
    "hatch-fancy-pypi-readme==25.1.0",
    "hatch-vcs==0.5.0",
    "hatchling==1.33.0",
    "hyperlink==21.0.0",
    "idna==3.21",
    "incremental==24.11.0",
    "iniconfig==2.3.1",
    "librt==0.17.0",
    "markdown-it-py==4.3.0",
    "mdurl==0.1.2",
    "mypy==2.4.1",
    "mypy-extensions==1.2.0",
    "packaging==26.4",
    "pathspec==1.1.1",
    "pluggy==1.7.0",
    "pretend==1.0.9",
    "pygments==2.21.0",
    "pytest==9.2.0",
    "pytest-asyncio==1.5.0",
    "python-dateutil==4.0.0",
    "rich==15.0.0",
    "setuptools==84.2.1",
    "setuptools-scm==10.3.4",
    "simplejson==4.3.0",
    "tomlkit==0.15.2",
    "trove-classifiers==2026.9.21.13",
    "twisted==26.10.0",
    "typing-extensions==4.16.0",
    "tzdata==2026.6",
    "vcs-versioning==2.6.0",
    "zope-interface==8.7",
)
"""The build backend, the `tests` and `typing` extras and coverage, resolved once and pinned, so every run installs the
same."""
KEPT_TESTS = ("__init__.py", "conftest.py", "additional_frame.py", "helpers.py", "test_stdlib.py")
"""The project's own tests kept in the repository (the rest are dropped to keep the suite's time)."""
BUG = ('        return "warning"', '        return "warn"')
"""Planted in src/structlog/_log_levels.py: `warn` is no longer mapped to `warning`."""
BUGGY_FILE = "src/structlog/_log_levels.py"


def _download(dest: Path, *args: str) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), *args],
        check=True,
        capture_output=True,
    )


def fetch() -> Path:
    """The cache, filled from PyPI where something is missing; `wheels/`, `sdist/` and `host/` below it."""
    if not any((CACHE / "sdist").glob("structlog-*.tar.gz")):
        _download(CACHE / "sdist", "--no-binary", ":all:", SDIST)
    if not any((CACHE / "host").glob("structlog-*.whl")):
        _download(CACHE / "host", "--only-binary", ":all:", HOST)
    if len(list((CACHE / "wheels").glob("*.whl"))) < len(WHEELS):
        _download(CACHE / "wheels", "--only-binary", ":all:", *WHEELS)
    return CACHE


def host_python(root: Path) -> Path:
    """A virtual environment with structlog 26.1.0 installed: the `python3` a user's shell finds first. Its bin."""
    cache = fetch()
    env = root / "host-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q", "--no-index",
         "--find-links", str(cache / "host"), HOST],
        check=True, capture_output=True,
    )  # fmt: skip
    return env / "bin"


def project_repo(root: Path) -> Path:
    """The sdist made a git repository on `main`, its tests trimmed to KEPT_TESTS and the bug planted."""
    cache = fetch()
    [sdist] = (cache / "sdist").glob("structlog-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(root, filter="data")
    repo = root / "structlog-24.4.0"
    for path in sorted((repo / "tests").rglob("*"), reverse=True):
        rel = path.relative_to(repo / "tests")
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        elif path.is_file() and str(rel) not in KEPT_TESTS:
            path.unlink()
    target = repo / BUGGY_FILE
    target.write_text(target.read_text().replace(*BUG))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "structlog 24.4.0 from its PyPI source release")
    return repo


if __name__ == "__main__":
    print(f"test projects in {fetch()}")
