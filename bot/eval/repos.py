"""Each task's repository: found under `--repos` or built from PyPI, then one fresh clone per run.

A run's clone starts at the task's base commit on `main`, with the task's checks, setup and sandbox and
the harness config's budget written into `.github/ai-fix.yml` (the way a user configures ai-fix), and
nothing else: the hidden tests and the gold fix stay outside every repository the model can see.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bot.contract.config import CONFIG_PATH
from bot.errors import ConfigError
from bot.eval.gitrepo import NO_HOOKS, git, inside, patched_paths
from bot.eval.pypi import build
from bot.eval.tasks import EvalTask
from bot.workspace.gitcmd import WorkspaceError, run_git


@dataclass(frozen=True)
class Source:
    """A task's repository at its base commit, with the task's hidden tests and gold fix beside it."""

    repo: Path
    base_sha: str
    test_patch: str
    patch: str


def mirror_of(task: EvalTask, repos: Path | None) -> Path:
    """`owner__name.git` (a bare mirror) or `owner__name` (a clone) under `--repos`."""
    if repos is None:
        raise ConfigError(
            f"task {task.instance_id} names repository {task.repo!r}: pass --repos DIR holding "
            f"{task.repo.replace('/', '__')}.git (git clone --mirror) or a clone named {task.repo.replace('/', '__')}"
        )
    stem = task.repo.replace("/", "__")
    for candidate in (repos / f"{stem}.git", repos / stem):
        if candidate.is_dir():
            return candidate
    raise ConfigError(
        f"task {task.instance_id}: no {stem}.git or {stem} under {repos}; clone it there "
        f"(git clone --mirror https://github.com/{task.repo}.git {repos / (stem + '.git')})"
    )


def prepare(task: EvalTask, *, repos: Path | None, work: Path, fetch: Callable[[str, str, str], Path]) -> Source:
    """The task's source; a PyPI task is built once into `work` and reused by later runs and `--resume`."""
    if task.pypi is None:
        mirror = mirror_of(task, repos)
        try:
            git(["cat-file", "-e", f"{task.base_commit}^{{commit}}"], cwd=mirror)
        except WorkspaceError:
            raise ConfigError(
                f"task {task.instance_id}: {mirror} has no commit {task.base_commit}; fetch it into the mirror"
            ) from None
        return Source(mirror, task.base_commit, task.test_patch, task.patch)
    built, meta = work / f"{task.instance_id}.git", work / f"{task.instance_id}.json"
    if meta.is_file() and built.is_dir():
        known = json.loads(meta.read_text())
        if known.get("pypi") == task.pypi.model_dump():
            return Source(built, known["base_sha"], known["test_patch"], task.patch or known["patch"])
    work.mkdir(parents=True, exist_ok=True)
    made = build(task.pypi, fetch, built)
    record = {"pypi": task.pypi.model_dump(), "base_sha": made.base_sha, "test_patch": made.test_patch}
    meta.write_text(json.dumps(record | {"patch": made.patch}, indent=1) + "\n")
    return Source(built, made.base_sha, task.test_patch or made.test_patch, task.patch or made.patch)


def task_config(task: EvalTask, existing: str | None, budget: Mapping[str, Any]) -> str | None:
    """`.github/ai-fix.yml` for the run: the repository's own, with the task's checks, setup and sandbox and the
    harness config's budget laid over; None when nothing is to change."""
    config: dict[str, Any] = {}
    if existing:
        loaded = yaml.safe_load(existing)
        config = dict(loaded) if isinstance(loaded, dict) else {}
    changes: dict[str, Any] = {}
    if task.checks is not None:
        changes["checks"] = [c.model_dump(exclude_none=True) for c in task.checks]
    if task.setup is not None:
        changes["setup"] = list(task.setup)
    if task.sandbox is not None:
        changes["sandbox"] = task.sandbox.model_dump(exclude_unset=True)
    if budget:
        changes["budget"] = {**(config.get("budget") or {}), **budget}
    if not changes:
        return None
    return "# Written by ai-fix eval for this task.\n" + yaml.safe_dump({**config, **changes}, sort_keys=False)


def clone_for_run(source: Source, dest: Path, task: EvalTask, budget: Mapping[str, Any]) -> str:
    """A fresh clone at the base commit on `main` (no remote, no other branch); the commit the run starts from."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    git(["clone", "-q", "--shared", "--no-checkout", str(source.repo.resolve()), str(dest)], cwd=dest.parent)
    git(["checkout", "-q", "-B", "main", source.base_sha], cwd=dest)
    git(["remote", "remove", "origin"], cwd=dest)
    others = [
        b for b in git(["for-each-ref", "--format=%(refname:short)", "refs/heads"], cwd=dest).split() if b != "main"
    ]
    if others:
        git(["branch", "-q", "-D", *others], cwd=dest)
    existing = (dest / CONFIG_PATH).read_text() if (dest / CONFIG_PATH).is_file() else None
    text = task_config(task, existing, budget)
    if text is not None:
        (dest / CONFIG_PATH).parent.mkdir(parents=True, exist_ok=True)
        (dest / CONFIG_PATH).write_text(text)
        git(["add", CONFIG_PATH], cwd=dest)
        git(["commit", "-q", "-m", f"ai-fix eval: the task's checks and budget ({task.instance_id})"], cwd=dest)
    return git(["rev-parse", "HEAD"], cwd=dest).strip()


def files_after(repo: Path, base: str, patches: list[str]) -> dict[str, str | None]:
    """Each file the patches touch, as it reads once they are applied to `base` (None: deleted or not text)."""
    with tempfile.TemporaryDirectory(prefix="ai-fix-gold-") as tmp:
        tree = Path(tmp)
        archive = run_git(["archive", base], hooks=NO_HOOKS, cwd=repo).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        for patch in (p for p in patches if p.strip()):
            try:
                git(["apply", "--whitespace=nowarn", "-"], cwd=tree, input=patch.encode())
            except WorkspaceError as exc:
                raise ConfigError(f"the task's patch does not apply to {base[:12]}: {exc}") from None
        out: dict[str, str | None] = {}
        for path in dict.fromkeys(p for patch in patches for p in patched_paths(patch)):
            file = inside(tree, path)
            try:
                out[path] = file.read_text(encoding="utf-8") if file.is_file() else None
            except UnicodeDecodeError:
                out[path] = None
        return out
