"""Find a repository's setup when `.github/ai-fix.yml` names none, the way checks are detected.

Python: `bot.contract.pysetup` (the project's own environment at `.ai-fix-env/venv`, its test
dependencies from wherever the project names them, its lock file, its pinned linters; offline under
`sandbox.network: none`). Each way says which it took in a line starting `ai-fix:` (the setup report
keeps them). Node: the install its lock file asks for; Go: `go mod download`; Rust: `cargo fetch`
(their stores are kept in `.ai-fix-env` too). Every command comes with where it came from, which the
contract shows.

A guess is a guess: when it fails, what it made is removed and the checks run as they are (the
baseline decides whether the environment works; `bot.checks.setup`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.contract.files import RepoFiles
from bot.contract.models import Check
from bot.contract.pysetup import network_python, offline_python
from bot.contract.pytests import Found
from bot.contract.root import Root


def _node(root: Root) -> list[Found]:
    if not root.has("package.json"):
        return []
    if root.has("pnpm-lock.yaml"):
        return [Found("pnpm install --frozen-lockfile", "pnpm-lock.yaml")]
    if root.has("yarn.lock"):
        return [Found("yarn install --immutable", "yarn.lock")]
    lock = next((f for f in ("npm-shrinkwrap.json", "package-lock.json") if root.has(f)), None)
    return [Found("npm ci", lock)] if lock else [Found("npm install", "package.json, no lock file")]


def detect_setup(files: RepoFiles | Root, checks: Sequence[Check], *, offline: bool = False) -> list[Found]:
    """The setup commands a repository's own files point at, each with where it came from (empty when there is
    nothing to install); `offline`: the config says `sandbox.network: none`, so nothing may need a download."""
    root = files if isinstance(files, Root) else Root(files)
    commands = offline_python(root) if offline else network_python(root, checks)
    commands += _node(root)
    if root.has("go.mod"):
        commands.append(Found("go mod download", "go.mod"))
    if root.has("Cargo.toml"):
        commands.append(Found("cargo fetch", "Cargo.toml"))
    return commands
