"""Where a job's project environment lives inside its workspace, and which folders hold installed dependencies.

Detected setup makes a virtual environment and the package managers' stores here; every sandbox puts
`VENV_BIN` first on PATH, so checks run with the project's own interpreter. The folder ignores itself
(a `.gitignore` of `*`), so nothing in it ever reaches a diff.
"""

from __future__ import annotations

ENV_DIR = ".ai-fix-env"
VENV = f"{ENV_DIR}/venv"
VENV_BIN = f"{VENV}/bin"
DEPENDENCY_DIRS = frozenset({ENV_DIR, "node_modules"})
"""Installed dependencies, not the repository's own files: walked past when searching code or looking for secrets."""
