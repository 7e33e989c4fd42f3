"""Lock files for the corpus's Poetry and PDM projects, made by the real tools as the project would have at its release.

No source release ships its `poetry.lock` or `pdm.lock`, so each is made once, here, from the release's own
`pyproject.toml` against PyPI, and kept in `.cache/corpus/locks` (`scripts/setup.sh` makes them with the rest
of the corpus, so CI makes them once per clone):

- the tool is the release of Poetry or PDM that PyPI had at the project's cut-off (`Project.uploaded`), in
  an environment of its own under `.cache/corpus/tools`;
- PDM locks with its own time limit, `pdm lock --exclude-newer <cut-off>`, every group, for every Python the
  project supports;
- Poetry has no such option: it locks first with the versions pip resolves at the cut-off (for the oldest
  Python the project supports) pinned in an extra group, then again on the project's own `pyproject.toml`,
  which keeps them (Poetry 2 never moves a locked version unless asked).

So a lock pins what the project's dependencies were at its release, older than the newest its ranges allow.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

from bot.contract.files import LocalRepoFiles
from bot.contract.pydeps import normal, poetry_requirement, test_dependencies
from bot.contract.root import Root
from bot.envdir import VENV

TIMEOUT_S = 900


def _env(cache: Path, uploaded: str = "") -> dict[str, str]:
    """The host's environment without its pip configuration (local wheel folders there ignore any cut-off), with PyPI
    as it was at `uploaded` when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "POETRY_", "PDM_", "VIRTUAL_ENV"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        POETRY_CACHE_DIR=str(cache / "poetry-cache"),
        POETRY_VIRTUALENVS_CREATE="false",
        PDM_CACHE_DIR=str(cache / "pdm-cache"),
        PDM_CHECK_UPDATE="false",
    )
    if uploaded:
        env["PIP_UPLOADED_PRIOR_TO"] = uploaded
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
    return done.stdout


def _tool(tool: str, uploaded: str, cache: Path) -> Path:
    """The tool's `bin` folder: the release PyPI had at `uploaded`, installed once."""
    env_dir = cache / f"{tool}-{uploaded[:10]}"
    if not (env_dir / "bin" / tool).is_file():
        shutil.rmtree(env_dir, ignore_errors=True)
        _run([sys.executable, "-m", "venv", "--upgrade-deps", str(env_dir)], cache, _env(cache, uploaded))
        _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", tool], cache, _env(cache, uploaded))
    return env_dir / "bin"


def resolved(requirements: list[str], work: Path, env: dict[str, str], python: str = "") -> dict[str, str]:
    """What pip resolves for `requirements` (PyPI as `env` has it; for Python `python` when given, else this one):
    name → version."""
    (work / "requirements.txt").write_text("\n".join(requirements) + "\n")
    report = work / "report.json"
    target = ["--only-binary=:all:", "--python-version", python, "--target", str(work / "target")] if python else []
    _run(
        [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", *target,
         "--report", str(report), "-r", str(work / "requirements.txt")],
        work, env,
    )  # fmt: skip
    return {normal(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}


def newest(requirements: list[str]) -> dict[str, str]:
    """What pip resolves for `requirements` from PyPI as it is now, for this Python: name → version."""
    with tempfile.TemporaryDirectory() as tmp:
        return resolved(requirements, Path(tmp), _env(Path(tmp)))


@dataclass(frozen=True)
class FromLock:
    """What setup installed into a work tree's environment, beside what its lock file says."""

    locked: dict[str, str]
    """The lock's packages: name → version."""
    installed: dict[str, str]
    """The installed packages the lock names: name → installed version."""
    needed: list[str]
    """What the tests need, as the project declares it: its dependencies and its test groups' requirements."""

    @classmethod
    def read(cls, workspace: Path, lock: str) -> FromLock:
        locked = {normal(p["name"]): p["version"] for p in tomllib.loads((workspace / lock).read_text())["package"]}
        [site] = (workspace / VENV / "lib").glob("python*/site-packages")
        installed = {normal(d.metadata["Name"]): d.version for d in distributions(path=[str(site)])}
        root = Root(LocalRepoFiles(workspace))
        project = root.pyproject().get("project")
        own = project.get("dependencies", []) if isinstance(project, dict) else []
        needed = [*(str(r) for r in own), *test_dependencies(root, None, []).requirements]
        return cls(locked, {n: v for n, v in installed.items() if n in locked}, needed)

    def missing(self) -> list[str]:
        """The packages the tests need that were not installed from the lock."""
        names = [normal(re.findall(r"[\w.-]+", r)[0]) for r in self.needed]
        return [n for n in names if n not in self.installed]

    def older(self) -> dict[str, tuple[str, str]]:
        """The installed packages whose version is older than pip's resolution of `needed` today: name → (installed,
        newest)."""
        now = newest(self.needed)
        return {n: (v, now[n]) for n, v in self.installed.items() if now.get(n, v) != v}


def _release_pins(poetry: dict[str, Any], work: Path, env: dict[str, str]) -> dict[str, str]:
    """What pip resolves at the cut-off (in `env`) for `[tool.poetry]`'s dependencies and groups, for the oldest
    Python the project supports: name → version."""
    tables = [poetry.get("dependencies", {}), *(g.get("dependencies", {}) for g in poetry.get("group", {}).values())]
    requirements = [poetry_requirement(n, s) for t in tables for n, s in t.items() if n != "python"]
    oldest = re.search(r"\d+\.\d+", str(poetry.get("dependencies", {}).get("python", "")))
    return resolved(
        requirements, work, env, oldest[0] if oldest else f"{sys.version_info.major}.{sys.version_info.minor}"
    )


def _poetry_lock(source: Path, uploaded: str, cache: Path, work: Path) -> Path:
    env = _env(cache, uploaded)
    poetry = str(_tool("poetry", uploaded, cache) / "poetry")
    own = (source / "pyproject.toml").read_text()
    pins = _release_pins(tomllib.loads(own)["tool"]["poetry"], work, env)
    seed = "\n".join(
        ["", "[tool.poetry.group.ai-fix-release-pins.dependencies]", *(f'{n} = "=={v}"' for n, v in pins.items())]
    )
    (source / "pyproject.toml").write_text(own + seed + "\n")
    _run([poetry, "lock", "--no-interaction"], source, env)
    (source / "pyproject.toml").write_text(own)
    _run([poetry, "lock", "--no-interaction"], source, env)
    return source / "poetry.lock"


def _pdm_lock(source: Path, uploaded: str, cache: Path) -> Path:
    env = _env(cache, uploaded)
    bin_dir = _tool("pdm", uploaded, cache)
    env["PDM_PYTHON"] = str(bin_dir / "python")
    _run([str(bin_dir / "pdm"), "lock", "--exclude-newer", uploaded], source, env)
    return source / "pdm.lock"


def lock_file(name: str, source: Path, lock: str, uploaded: str, cache: Path) -> Path:
    """The project's `lock` (`poetry.lock` or `pdm.lock`) for the release unpacked at `source`, made once."""
    kept = cache / "locks" / name / lock
    if kept.is_file():
        return kept
    (cache / "tools").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy, work = Path(tmp) / "project", Path(tmp) / "work"
        shutil.copytree(source, copy)
        work.mkdir()
        made = (
            _poetry_lock(copy, uploaded, cache / "tools", work)
            if lock == "poetry.lock"
            else _pdm_lock(copy, uploaded, cache / "tools")
        )
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(made, kept)
    return kept
