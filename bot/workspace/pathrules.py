"""Which paths the patch gate lets the model touch: the canonical form, the scope, what is on disk.

A path is canonicalised first (relative, no `..`, no NUL or control characters, no `.git` in any
spelling a filesystem might treat as `.git`), then matched against the contract's scope and the globs
no job may touch, then walked on disk: no symlink anywhere on it.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from bot.contract.globs import allowed_by_name, glob_match, named_only, normalize_path
from bot.contract.models import ALWAYS_DENIED, Scope
from bot.errors import PolicyViolation


class GateRefusal(PolicyViolation):
    """A path or write the gate will not allow; `reason` is written for the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def canonical_path(raw: str) -> str:
    """The workspace-relative form `a/b/c` of a path the model gave, or GateRefusal with the reason."""
    if not isinstance(raw, str) or not raw.strip():
        raise GateRefusal("empty path: give a file path relative to the repository root, e.g. 'src/app.py'")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise GateRefusal("path is not valid text: give a plain file path relative to the repository root") from None
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise GateRefusal("path contains a control character (NUL, newline, tab, ...): give a plain file path")
    if "\\" in raw:
        raise GateRefusal("path contains a backslash: use '/' between directories, relative to the repository root")
    if raw.startswith("/"):
        raise GateRefusal(
            f"absolute paths are not allowed ({raw!r}): give the path relative to the repository root, e.g. 'src/app.py'"
        )
    rel = normalize_path(raw)
    if rel is None:
        if ".." in raw.split("/"):
            raise GateRefusal(
                f"path escapes the workspace: '..' is not allowed in {raw!r}; give the path from the repository root"
            )
        raise GateRefusal(f"{raw!r} is the repository root, not a file: give a file path")
    for part in rel.split("/"):
        if _looks_like_dotgit(part):
            raise GateRefusal(f"{raw!r} is inside git's own directory ('{part}'); ai-fix never changes git internals")
    return rel


def _fold(part: str) -> str:
    """A path part as a case-insensitive filesystem might see it (macOS, Windows)."""
    # HFS+ ignores zero-width characters and NTFS trailing dots and spaces, so ".Git\u200c" or
    # ".git." name the same directory as ".git" there; a repository is often checked out on both.
    visible = "".join(ch for ch in unicodedata.normalize("NFKC", part) if unicodedata.category(ch) != "Cf")
    return visible.rstrip(" .").casefold()


def _looks_like_dotgit(part: str) -> bool:
    return _fold(part) in (".git", "git~1")


def _folded(path: str) -> str:
    return "/".join(_fold(p) for p in path.split("/"))


def check_scope(rel: str, scope: Scope) -> None:
    """GateRefusal unless the contract's `scope` and the globs no job may touch allow `rel`."""
    # Deny rules match case-insensitively and also against the NTFS/HFS-folded path: on such a
    # checkout `.GitHub/Workflows./x.yml` is the workflow file. Allow rules match exactly, so
    # each kind of rule errs toward refusing.
    folded = _folded(rel)
    for rules, refusal in (
        (
            ALWAYS_DENIED,
            "{rel} is protected (rule '{glob}'): ai-fix never changes git internals or plumbing, CI workflows or"
            " its own config",
        ),
        (scope.deny, "{rel} is denied by scope rule '{glob}'; change files outside it"),
    ):
        for glob in rules:
            if glob_match(rel, glob, case_sensitive=False) or glob_match(folded, _folded(glob), case_sensitive=False):
                raise GateRefusal(refusal.format(rel=rel, glob=glob))
    if (kind := named_only(rel) or named_only(folded)) and not allowed_by_name(rel, scope):
        raise GateRefusal(
            f"{rel} is {kind}: ai-fix changes one only when the scope allows it by name "
            f"(scope.allow: ['{rel}'] in .github/ai-fix.yml)"
        )
    if not any(glob_match(rel, glob) for glob in scope.allow):
        allowed = ", ".join(repr(g) for g in scope.allow) or "nothing"
        raise GateRefusal(f"{rel} is outside the task's scope (allowed: {allowed}); change files inside it")


def check_on_disk(root: Path, rel: str) -> None:
    """Under `root`: no symlink anywhere on the path, directories where directories are expected, a regular file at the end."""
    current = root
    parts = rel.split("/")
    for depth, part in enumerate(parts, start=1):
        current = current / part
        shown = "/".join(parts[:depth])
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break  # the rest will be created by the write
        except NotADirectoryError:
            raise GateRefusal(f"{rel}: a parent of it is a file, not a directory") from None
        except OSError as exc:
            raise GateRefusal(f"{rel}: {exc.strerror}; give a shorter or plainer path") from None
        if stat.S_ISLNK(mode):
            raise GateRefusal(
                f"{rel}: '{shown}' is a symbolic link; ai-fix neither follows nor creates symlinks, "
                "so edit the file at its real path inside the repository"
            )
        if depth < len(parts) and not stat.S_ISDIR(mode):
            raise GateRefusal(f"{rel}: '{shown}' is a file, not a directory")
        if depth == len(parts) and not stat.S_ISREG(mode):
            raise GateRefusal(f"{rel} is a directory or special file, not a regular file: give a file path")
    # With no symlink on the path this holds already; checked again so a mistake above cannot escape.
    if not Path(os.path.realpath(root / rel)).is_relative_to(root):
        raise GateRefusal(f"path escapes the workspace: {rel}")
