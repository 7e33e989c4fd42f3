"""Reading a repository's files from its default branch: locally through git, remotely through GitHub.

The contract is built from the default branch only (config, instruction files, detection), never
from a branch being changed: a pull request cannot rewrite the rules it is judged by.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Protocol

import git

from bot.errors import ConfigError, GitHubError

MAX_FILE_BYTES = 1_000_000
"""Files read for the contract are small (configs, manifests, instruction files); larger are skipped."""


def read_issue_file(path: Path | str) -> str:
    """The text of a local issue file (`--issue FILE.md`), or a ConfigError that says what to pass."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the issue file {path} ({exc.strerror}); pass --issue a Markdown file") from exc


class RepoFiles(Protocol):
    """Read-only view of one commit of a repository (its default branch)."""

    @property
    def source(self) -> str:
        """Where the files come from, for provenance (e.g. "main@1a2b3c4" or "owner/repo@main")."""
        ...

    def read_text(self, path: str) -> str | None:
        """The file's text, or None when it does not exist (or is a directory, or too large)."""
        ...

    def list_dir(self, path: str = "") -> list[str]:
        """Repository-relative paths of the entries of a directory ("" is the root), dirs ending in "/"."""
        ...


def _open(repo: Path) -> git.Repo:
    try:
        return git.Repo(repo, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ConfigError(f"{repo} is not a git repository; pass --repo the path of a clone") from None


def default_branch(repo: Path | git.Repo) -> str:
    """The local repository's default branch: origin's HEAD, else `main`, `master`, else its only branch."""
    local = repo if isinstance(repo, git.Repo) else _open(repo)
    try:
        return str(local.remotes.origin.refs.HEAD.reference.name)
    except (AttributeError, IndexError, TypeError, ValueError):
        pass  # no origin, or origin/HEAD unset
    branches = sorted(head.name for head in local.heads)
    for name in ("main", "master"):
        if name in branches:
            return name
    if len(branches) == 1:
        return branches[0]
    raise ConfigError(
        f"{local.working_dir or local.git_dir}: cannot tell the default branch (no origin/HEAD, no main or master; "
        f"branches: {', '.join(branches) or 'none, commit something first'}); run `git remote set-head origin --auto` "
        "or create a main branch"
    )


class LocalRepoFiles:
    """The default branch of a local git repository, read from its objects (never the work tree)."""

    def __init__(self, repo_path: str | Path, *, ref: str | None = None) -> None:
        self.repo = Path(repo_path)
        self._repo = _open(self.repo)
        self.ref = ref or default_branch(self._repo)
        try:
            commit = self._repo.commit(self.ref)
        except (git.BadName, ValueError):
            raise ConfigError(
                f"{self.repo}: branch {self.ref!r} has no commit yet; commit the repository first"
            ) from None
        self.commit: str = commit.hexsha
        self._tree = commit.tree

    @property
    def source(self) -> str:
        return f"{self.ref}@{self.commit[:12]}"

    def _entry(self, path: str) -> git.objects.base.IndexObject | None:
        try:
            return self._tree / path.strip("/") if path.strip("/") else self._tree
        except KeyError:
            return None

    def read_text(self, path: str) -> str | None:
        blob = self._entry(path)
        if not isinstance(blob, git.Blob) or blob.size > MAX_FILE_BYTES:
            return None
        data: bytes = blob.data_stream.read()
        return data.decode("utf-8", errors="replace")

    def list_dir(self, path: str = "") -> list[str]:
        tree = self._entry(path)
        if not isinstance(tree, git.Tree):
            return []
        prefix = f"{path.strip('/')}/" if path.strip("/") else ""
        return sorted(f"{prefix}{o.name}/" if isinstance(o, git.Tree) else f"{prefix}{o.name}" for o in tree)


class WorkTreeFiles:
    """Files as they are on disk: for `ai-fix init`, which prepares a config in a fresh checkout."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ConfigError(f"{self.root} is not a directory; pass the path of a repository")

    @property
    def source(self) -> str:
        return str(self.root)

    def read_text(self, path: str) -> str | None:
        file = self.root / path
        if not file.is_file() or file.stat().st_size > MAX_FILE_BYTES:
            return None
        return file.read_text(encoding="utf-8", errors="replace")

    def list_dir(self, path: str = "") -> list[str]:
        base = self.root / path if path else self.root
        if not base.is_dir():
            return []
        rel = f"{path.strip('/')}/" if path.strip("/") else ""
        return sorted(f"{rel}{p.name}/" if p.is_dir() else f"{rel}{p.name}" for p in base.iterdir() if p.name != ".git")


class GitHubRepoFiles:
    """The default branch through the contents API, with an installation-authenticated githubkit client."""

    def __init__(self, gh: Any, repo: str, ref: str) -> None:
        self.gh = gh
        self.owner, _, self.name = repo.partition("/")
        self.ref = ref
        self._cache: dict[str, Any] = {}

    @property
    def source(self) -> str:
        return f"{self.owner}/{self.name}@{self.ref}"

    def _get(self, path: str) -> Any:
        """The decoded JSON of a contents request, or None for a 404; cached per path."""
        if path not in self._cache:
            from githubkit.exception import RequestFailed  # here: `ai-fix contract` never loads githubkit

            try:
                resp = self.gh.rest.repos.get_content(self.owner, self.name, path, ref=self.ref)
                self._cache[path] = resp.json()
            except RequestFailed as exc:
                if exc.response.status_code != 404:
                    raise GitHubError(
                        f"reading {path or '/'} of {self.owner}/{self.name}@{self.ref} failed with HTTP "
                        f"{exc.response.status_code}; check the App has 'Contents: read' on the repository"
                    ) from exc
                self._cache[path] = None
        return self._cache[path]

    def read_text(self, path: str) -> str | None:
        data = self._get(path)
        if not isinstance(data, dict) or data.get("type") != "file" or data.get("size", 0) > MAX_FILE_BYTES:
            return None
        content = data.get("content") or ""
        if data.get("encoding") != "base64":
            return None  # files over 1 MB come back without content; they are skipped like local ones
        return base64.b64decode(content).decode("utf-8", errors="replace")

    def list_dir(self, path: str = "") -> list[str]:
        data = self._get(path.strip("/"))
        if not isinstance(data, list):
            return []
        return sorted(f"{e['path']}/" if e.get("type") == "dir" else e["path"] for e in data)
