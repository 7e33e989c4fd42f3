"""Every secret value a run or job holds, gathered in one place so redaction can remove all of them."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from bot.envdir import DEPENDENCY_DIRS
from bot.redact import is_secret_file
from bot.settings import Settings, secret_values

SECRET_NAME = re.compile(r"(?i)(SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIAL)")
MIN_SECRET = 8
"""Shorter values are too likely to be ordinary words to strip from every text."""
MIN_PASSWORD = 4
"""... except a URL's password, whatever its length: known to be one (redaction ignores anything shorter)."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
SETUP_SECRET_PREFIX = "AIFIX_SETUP_SECRET_"
"""`AIFIX_SETUP_SECRET_<NAME>`: a value the repository's `setup_secrets: [NAME]` passes to its setup commands only."""
MAX_SECRET_FILE = 1 << 20
"""Bytes of a secret file read at most: a huge `.env` (or one a check wrote) is read in part, never whole."""
MAX_WHOLE_SECRET = 64 << 10
"""A secret file's whole text counts as one secret (a PEM key) only up to this many bytes."""
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*[\"']?([^\"'\s#]+)")


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """Values of environment variables whose names say they are secret (AIFIX_ secrets come through Settings)."""
    return [v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET and not _names_repos(k)]


def sandbox_env_secrets(env: Mapping[str, str]) -> list[str]:
    """What the operator's AIFIX_SANDBOX_ENV holds that is secret: the value of a variable whose name says so
    (`NPM_TOKEN`), and in any URL of any value its `user:password` and password, and query values with secret
    names (`?token=`). The rest (an index's or a proxy's address) is configuration, shown where it appears."""
    values = env_secrets(env)
    for value in env.values():
        for url in _URL.findall(value):
            parts = urlsplit(url)
            if parts.password and len(parts.password) >= MIN_PASSWORD:
                values += [f"{parts.username or ''}:{parts.password}", parts.password]
            values += [v for k, v in parse_qsl(parts.query) if SECRET_NAME.search(k) and len(v) >= MIN_SECRET]
    return values


def _names_repos(name: str) -> bool:
    """`AIFIX_SETUP_SECRET_<NAME>_REPOS` lists repositories, not a secret (its value is in every tag and path)."""
    return name.startswith(SETUP_SECRET_PREFIX) and name.endswith(REPOS_SUFFIX)


def setup_secrets(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values the operator provides for setup commands, by NAME (from `AIFIX_SETUP_SECRET_<NAME>`)."""
    env = os.environ if env is None else env
    prefix = len(SETUP_SECRET_PREFIX)
    return {
        k[prefix:]: v
        for k, v in env.items()
        if k.startswith(SETUP_SECRET_PREFIX) and k[prefix:] and v and not _names_repos(k)
    }


REPOS_SUFFIX = "_REPOS"
"""`AIFIX_SETUP_SECRET_<NAME>_REPOS=owner/repo,owner/*`: the repositories a setup secret is given to."""


def setup_secret_repos(env: Mapping[str, str] | None = None) -> dict[str, tuple[str, ...]]:
    """For each setup secret, the repository patterns the operator gives it to (none named: given to none)."""
    env = os.environ if env is None else env
    return {
        name: tuple(
            p.strip() for p in env.get(f"{SETUP_SECRET_PREFIX}{name}{REPOS_SUFFIX}", "").split(",") if p.strip()
        )
        for name in setup_secrets(env)
    }


def secret_allowed(repo: str, patterns: Iterable[str]) -> bool:
    """Whether `repo` ("owner/name", or a local path for `ai-fix run`) matches one of the operator's patterns."""
    return any(fnmatch.fnmatchcase(repo.lower(), p.lower()) for p in patterns)


def credential_file_secrets(env: Mapping[str, str]) -> list[str]:
    """The values inside files that secret-named variables point at (GOOGLE_APPLICATION_CREDENTIALS' key file)."""
    values: list[str] = []
    for name, path in env.items():
        if not SECRET_NAME.search(name) or not os.path.isfile(path):
            continue
        try:
            text = read_head(Path(path))
        except OSError:
            continue
        values += file_secrets(text) + json_secrets(text)
    return values


def json_secrets(text: str) -> list[str]:
    """String values under secret-looking keys of a JSON object (a service-account key's `private_key`)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    if not isinstance(doc, dict):
        return []
    return [v for k, v in doc.items() if SECRET_NAME.search(k) and isinstance(v, str) and len(v) >= MIN_SECRET]


def repo_secret_files(repo: Path) -> list[str]:
    """Workspace-relative paths of files that hold secrets by convention (.env*, *.pem, keys)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if d != ".git" and d not in DEPENDENCY_DIRS]
        for name in filenames:
            if is_secret_file(name):
                found.append(os.path.relpath(os.path.join(dirpath, name), repo))
    return sorted(found)


def read_head(path: Path) -> str:
    """The first MAX_SECRET_FILE bytes of a file, as text."""
    with path.open("rb") as fh:
        return fh.read(MAX_SECRET_FILE).decode("utf-8", errors="replace")


def file_secrets(text: str) -> list[str]:
    """A secret file's values: each `KEY=value` value, and the whole text (PEM keys and the like) when it is short."""
    values = [m.group(1) for line in text.splitlines() if (m := _ASSIGNMENT.match(line))]
    whole = [text.strip()] if len(text) <= MAX_WHOLE_SECRET else []
    return [v for v in [*values, *whole] if len(v) >= MIN_SECRET]


def held_secrets(
    settings: Settings,
    env: Mapping[str, str] | None = None,
    repo: Path | None = None,
    *,
    tokens: Iterable[str] = (),
) -> list[str]:
    """Every secret value a job or run holds, longest first: the one list redaction is given.

    The service's own secrets (settings: every model key, whichever variable set it; what AIFIX_SANDBOX_ENV
    holds that is secret), secret-looking environment values (`os.environ` unless `env` is given) and what the credential files they name
    hold (a cloud service-account key), every setup secret, the contents of the repository's secret
    files when `repo` is given, and `tokens` (the job's installation token).
    """
    env = os.environ if env is None else env
    values = [
        *secret_values(settings),
        *sandbox_env_secrets(settings.sandbox_env),
        *env_secrets(env),
        *credential_file_secrets(env),
        *setup_secrets(env).values(),
        *tokens,
    ]
    return sorted({*values, *(repo_secrets(repo) if repo is not None else [])} - {""}, key=len, reverse=True)


def repo_secrets(repo: Path) -> list[str]:
    """The values held in the repository's secret files (.env*, *.pem, keys)."""
    values: list[str] = []
    for rel in repo_secret_files(repo):
        try:
            values += file_secrets(read_head(repo / rel))
        except OSError:
            continue
    return values
