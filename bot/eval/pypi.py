"""A task from a package's release history: two source releases, the base made a git repository.

The sdists come from a package index's simple API (PEP 691 JSON, as pip reads it), each checked
against the sha256 the task pins, and are kept in a cache folder: a task set downloads each release
once per machine, and a cached file is checked again every time it is used. The fixed release's
changes to test files become the hidden `test_patch`; its changes to other Python files the gold
`patch` (a release's changelog, README and docs are not part of the fix).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx

from bot.context.subjects import is_test_path
from bot.contract.globs import glob_match
from bot.contract.models import ALWAYS_DENIED
from bot.errors import ConfigError
from bot.eval.gitrepo import git
from bot.eval.tasks import PypiRelease

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
SDIST = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+)\.(?:tar\.gz|zip)$")
GENERATED = re.compile(r"(^|/)(PKG-INFO|[^/]+\.egg-info|__pycache__|\.git)(/|$)|\.py[co]$")
"""What a source release carries that its project's repository does not: build metadata, bytecode."""
PLAIN_DIFF = ("--no-renames", "--no-ext-diff", "--no-textconv")
"""Diffs as `git apply` reads them, whatever a user's git config says."""
RELEASE_DATE = "2000-01-01T00:00:00+00:00"
"""Commit date of a release's base commit, so the same release always makes the same commit."""


def normalized(name: str) -> str:
    """PEP 503's form of a project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class SdistCache:
    """Source releases by (name, version), fetched once from `index_url` and checked against a pinned sha256.

    A context manager: leaving it closes its connections to the index."""

    def __init__(self, folder: Path, index_url: str) -> None:
        self.folder = folder
        self.index_url = index_url.rstrip("/")
        self.client = httpx.Client(timeout=60, follow_redirects=True)

    def __enter__(self) -> SdistCache:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.client.close()

    def fetch(self, name: str, version: str, sha256: str) -> Path:
        cached = self.folder / sha256 / f"{normalized(name)}-{version}.sdist"
        if cached.is_file() and sha256_of(cached) == sha256:
            return cached
        url = self._find(name, version)
        self.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=self.folder, delete=False) as part:
            try:
                with self.client.stream("GET", url) as response:
                    response.raise_for_status()
                    for chunk in response.iter_bytes():
                        part.write(chunk)
            except httpx.HTTPError as exc:
                Path(part.name).unlink(missing_ok=True)
                raise ConfigError(f"downloading {url} failed ({exc}); check the network or the index") from exc
        got = sha256_of(Path(part.name))
        if got != sha256:
            Path(part.name).unlink(missing_ok=True)
            raise ConfigError(
                f"{name} {version}: the sdist at {url} has sha256 {got}, but the task pins {sha256}; "
                "the release was replaced, or the pin is wrong: check it and fix the task's pypi field"
            )
        cached.parent.mkdir(parents=True, exist_ok=True)
        Path(part.name).replace(cached)
        return cached

    def _find(self, name: str, version: str) -> str:
        url = f"{self.index_url}/{normalized(name)}/"
        try:
            response = self.client.get(url, headers={"Accept": SIMPLE_JSON})
            response.raise_for_status()
            files = response.json().get("files", [])
        except (httpx.HTTPError, ValueError) as exc:
            raise ConfigError(
                f"the package index could not list {name} ({url}: {exc}); check AIFIX_EVAL_INDEX_URL and the network"
            ) from exc
        for entry in files:
            m = SDIST.match(str(entry.get("filename", "")))
            if m and normalized(m["name"]) == normalized(name) and m["version"] == version:
                return str(httpx.URL(url).join(entry["url"]))
        raise ConfigError(f"{url} lists no source release of {name} {version}; check the version in the task")


def unpack(archive: Path, dest: Path) -> Path:
    """The release's files under `dest`; its one top-level folder is returned."""
    dest.mkdir(parents=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                target = (dest / member).resolve()
                if not target.is_relative_to(dest.resolve()):
                    raise ConfigError(f"{archive.name}: {member!r} would be written outside the folder; not unpacked")
            z.extractall(dest)
    else:
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(dest, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise ConfigError(f"{archive.name}: not a readable source release ({exc})") from exc
    tops = list(dest.iterdir())
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else dest


def copy_source(release: Path, tree: Path) -> None:
    """The release's own files into the work tree (emptied first), without build metadata or bytecode."""
    for entry in tree.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    for path in sorted(release.rglob("*")):
        rel = path.relative_to(release).as_posix()
        if GENERATED.search(rel) or path.is_dir():
            continue
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, tree / rel, follow_symlinks=False)


def _denied(path: str) -> bool:
    return any(glob_match(path, g) for g in ALWAYS_DENIED)


class PypiBuild:
    """The base release as a bare repository (one commit on `main`), and the fixed release's changes split in two."""

    def __init__(self, repo: Path, base_sha: str, test_patch: str, patch: str) -> None:
        self.repo, self.base_sha, self.test_patch, self.patch = repo, base_sha, test_patch, patch


def build(release: PypiRelease, fetch: Callable[[str, str, str], Path], dest: Path) -> PypiBuild:
    """`dest` (a bare repository) holds only the base release; the fixed one never enters it."""
    with tempfile.TemporaryDirectory(prefix="ai-fix-pypi-") as tmp:
        work = Path(tmp)
        base = unpack(fetch(release.name, release.base, release.base_sha256), work / "base")
        fixed = unpack(fetch(release.name, release.fixed, release.fixed_sha256), work / "fixed")
        tree = work / "tree"
        tree.mkdir()
        dated = {"GIT_AUTHOR_DATE": RELEASE_DATE, "GIT_COMMITTER_DATE": RELEASE_DATE}
        git(["init", "-q", "-b", "main"], cwd=tree)
        shas = []
        for source, version in ((base, release.base), (fixed, release.fixed)):
            copy_source(source, tree)
            git(["add", "-A"], cwd=tree)
            message = f"{release.name} {version} (the source release from the package index)"
            git(["commit", "-q", "--allow-empty", "-m", message], cwd=tree, env=dated)
            shas.append(git(["rev-parse", "HEAD"], cwd=tree).strip())
        changed = git(["diff", *PLAIN_DIFF, "--name-only", "-z", *shas], cwd=tree).split("\0")
        tests = [p for p in changed if p and is_test_path(p)]
        code = [p for p in changed if p.endswith(".py") and not is_test_path(p) and not _denied(p)]
        if not tests:
            raise ConfigError(
                f"{release.name} {release.fixed} changes no test file against {release.base}: "
                "no hidden test can be taken from it; pick a release pair whose fix added a test"
            )
        test_patch = git(["diff", *PLAIN_DIFF, "--binary", *shas, "--", *tests], cwd=tree)
        patch = git(["diff", *PLAIN_DIFF, "--binary", *shas, "--", *code], cwd=tree) if code else ""
        if dest.exists():
            shutil.rmtree(dest)
        dest = dest.resolve()
        git(["init", "-q", "--bare", "-b", "main", str(dest)], cwd=work)
        git(["push", "-q", str(dest), f"{shas[0]}:refs/heads/main"], cwd=tree)
    return PypiBuild(dest, shas[0], test_patch, patch)
