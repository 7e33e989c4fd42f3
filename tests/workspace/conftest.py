"""Real git repositories on disk for the workspace tests: a seed repo and a bare remote reached by file://."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.workspace.branch import branch_name
from tests.support.repos import git_as_user as git

SEED_FILES = {
    "README.md": "# demo\n",
    "src/app.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "src/util.py": "X = 1\n",
    ".gitignore": "*.log\nbuild/\n",
}


@pytest.fixture
def seed_repo(tmp_path: Path) -> Path:
    """A non-bare repository on `main` with one commit of SEED_FILES."""
    repo = tmp_path / "seed"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    for rel, text in SEED_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "seed", cwd=repo)
    return repo


@pytest.fixture
def remote(tmp_path: Path, seed_repo: Path) -> Path:
    """A bare repository cloned from the seed: the stand-in for GitHub."""
    bare = tmp_path / "remote.git"
    git("clone", "-q", "--bare", str(seed_repo), str(bare), cwd=tmp_path)
    return bare


@pytest.fixture
def remote_url(remote: Path) -> str:
    return f"file://{remote}"


@pytest.fixture
def branch() -> str:
    return branch_name(7, "Fix the adder")
