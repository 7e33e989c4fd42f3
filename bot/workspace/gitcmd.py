"""Running git safely for a workspace: the config every command gets, the environment, the token, errors.

Every git command ai-fix runs goes through `run_git`: no hook, fsmonitor or credential helper ever
runs whatever a repository's config says, inherited GIT_* variables cannot point git elsewhere, and
a token reaches git only through the environment of the one command that needs it (an
`http.<host>.extraHeader` via GIT_CONFIG_COUNT): never written to `.git/config`, a remote URL or a
log, and never seen by the sandbox.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from bot.errors import AiFixError
from bot.redact import redact
from bot.workspace.models import DiffStats, FileChange

IDENTITY = ("ai-fix", "ai-fix@users.noreply.github.com")
"""Author and committer of every checkpoint."""
TOKEN_USER = "x-access-token"
"""The user name GitHub expects with an installation token over HTTPS."""
NETWORK_TIMEOUT = 900
LOCAL_TIMEOUT = 120
_SCHEMES = ("https", "file")


class WorkspaceError(AiFixError):
    """A git operation on the workspace failed; the message says what to do."""


def auth_env(token: str, url: str) -> dict[str, str]:
    """Environment for one git command that sends `token` as an HTTP header to `url`'s host only."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    scope = f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}/"
    basic = base64.b64encode(f"{TOKEN_USER}:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{scope}.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def check_remote_url(url: str) -> str:
    """Only https (GitHub) and file (tests, local mirrors) URLs, and never with credentials in them."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES or url.startswith("-"):
        raise WorkspaceError(
            f"refusing remote {url!r}: ai-fix clones and pushes over https:// (or file:// for local mirrors) only"
        )
    if parts.username or parts.password:
        raise WorkspaceError(
            "refusing a remote URL with credentials in it: they would be stored in .git/config; "
            "pass the URL without them and the token as token="
        )
    return url


def hint(stderr: str) -> str:
    lowered = stderr.lower()
    if "could not read username" in lowered or "authentication failed" in lowered or "403" in lowered:
        return "the server refused the credentials: check the App is installed on the repository with contents: write, and that the token has not expired"
    if "non-fast-forward" in lowered or "fetch first" in lowered or "[rejected]" in lowered:
        return "the remote branch has commits this workspace lacks and ai-fix never force-pushes: start again from the remote branch (bot.workspace.opening.checkout_existing) or delete it"
    if "not found" in lowered or "does not appear to be a git repository" in lowered:
        return "check the repository URL and that the App can see the repository"
    if "could not resolve host" in lowered or "unable to access" in lowered:
        return "the git server could not be reached: check the network and the URL"
    return "see git's message above"


def verb(args: list[str]) -> str:
    """The git subcommand in an argument list, for error messages."""
    words = iter(args)
    for word in words:
        if word == "-C":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return "command"


def safety_config(hooks: str) -> list[str]:
    # Given on every command (and inherited by git's own subprocesses through GIT_CONFIG_PARAMETERS),
    # so no hook, fsmonitor or credential helper runs, whatever a repository's config says.
    settings = {
        "core.hooksPath": hooks,
        "core.fsmonitor": "false",
        "credential.helper": "",
        "commit.gpgSign": "false",
        "protocol.ext.allow": "never",
        "submodule.recurse": "false",
        "diff.external": "",
    }
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]


def git_environment(extra: dict[str, str] | None) -> dict[str, str]:
    # Inherited GIT_* variables (GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_*) could point git elsewhere.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    name, email = IDENTITY
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME=name,
        GIT_COMMITTER_EMAIL=email,
        LC_ALL="C",
    )
    env.update(extra or {})
    return env


def run_git(
    args: list[str],
    *,
    hooks: str,
    cwd: Path | str,
    check: bool = True,
    env: dict[str, str] | None = None,
    secrets: list[str] | None = None,
    input: bytes | None = None,
    timeout: int = LOCAL_TIMEOUT,
) -> subprocess.CompletedProcess[bytes]:
    """`git args` with the safety config and environment; a failure raises WorkspaceError saying what to do."""
    command = ["git", *safety_config(hooks), *args]
    try:
        done = subprocess.run(
            command, env=git_environment(env), input=input, capture_output=True, timeout=timeout, cwd=cwd, check=False
        )
    except subprocess.TimeoutExpired:
        raise WorkspaceError(
            f"git {verb(args)} took over {timeout} s and was stopped: check the network or the repository size"
        ) from None
    if check and done.returncode != 0:
        stderr = redact(done.stderr.decode("utf-8", "replace").strip(), secrets or [])
        raise WorkspaceError(f"git {verb(args)} failed (exit {done.returncode}): {stderr}; {hint(stderr)}")
    return done


def parse_stats(raw: bytes, numstat: bytes) -> DiffStats:
    """Merge `git diff --raw -z` (modes, status) and `--numstat -z` (line counts) without renames."""
    counts: dict[str, tuple[int, int, bool]] = {}
    for record in numstat.split(b"\0"):
        if not record:
            continue
        plus, minus, path = record.split(b"\t", 2)
        binary = plus == b"-"
        counts[path.decode("utf-8", "surrogateescape")] = (
            0 if binary else int(plus),
            0 if binary else int(minus),
            binary,
        )
    files: list[FileChange] = []
    fields = raw.split(b"\0")
    for header, path_bytes in zip(fields[0::2], fields[1::2], strict=False):
        if not header.startswith(b":"):
            continue
        old_mode, new_mode, _old, _new, status = header[1:].decode().split(" ")
        name = path_bytes.decode("utf-8", "surrogateescape")
        added, removed, binary = counts.get(name, (0, 0, False))
        files.append(
            FileChange(
                path=name,
                added=added,
                removed=removed,
                status=status[0],
                old_mode="" if old_mode == "000000" else old_mode,
                new_mode="" if new_mode == "000000" else new_mode,
                binary=binary,
            )
        )
    return DiffStats(files=files)
