"""Files setup left holding a setup secret, found before the model's first turn so the job can stop there.

A setup secret is in the setup commands' environment only. A file that setup writes it into (a `.npmrc`,
a `pip.conf`, a git URL with the token in `.git/config`) would stay where the checks can read it and
print it in any form to the model, which no redaction can follow. Outside the workspace the sandbox
drops what setup left (`Sandbox.forget_setup`); the workspace must keep the environment, so after a
setup that was given secrets, every path it created or changed there (the project's environment folder
and `.git` included) is searched: its name and, for a regular file, its first SEARCHED_BYTES (as they
are and with their lines joined), for each secret as it is, backwards, URL-encoded, or in base64,
base64url, base32 or hex wherever it begins in the encoded data (`bot.redact.secret_forms`); and with
whitespace and `,:;-` removed, for the secret as it is and its hex, whole or in ENCODED_PIECE-byte windows
(`s e c r e t`, xxd's `7365 6372` lines, `s,e,c`). Symlinks are neither followed nor read through; a file
that cannot be read counts as holding every secret, since the checks might read it.

No search follows every encoding (gzip then base64, a secret cut into pieces across files): a setup given
secrets runs code the operator trusts with them. What it created outside the environment folders is
removed after it (`bot.checks.setup.prepare_environment`), so only those reach the checks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ahocorasick_rs import BytesAhoCorasick

from bot.redact import ENCODED_PIECE, SEPARATOR_CHARS, redact, secret_forms, spread_out
from bot.secrets import MIN_SECRET

SEARCHED_BYTES = 4 << 20
"""Bytes of each file searched: credential files are small, and a venv's largest libraries need not be read whole."""
SEPARATOR_BYTES = bytes(ord(c) for c in SEPARATOR_CHARS if c.isascii())
"""`bot.redact.SEPARATOR_CHARS` as a file's bytes hold them (ASCII: what a shell's tools put between characters)."""
NAMED = 5
"""Paths the stop reason names at most (then how many more)."""

Stamp = tuple[int, int, int, int]
"""What tells a path changed: its type and mode, inode, size and modification time (as `lstat` gives them)."""


def stamps(workspace: Path) -> dict[str, Stamp]:
    """Every path under the workspace (not through symlinks), workspace-relative, with its stamp."""
    found: dict[str, Stamp] = {}
    for dirpath, dirnames, filenames in os.walk(workspace):
        rel = os.path.relpath(dirpath, workspace)
        prefix = "" if rel == "." else f"{rel}/"
        for name in (*dirnames, *filenames):
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:  # gone since it was listed
                continue
            found[f"{prefix}{name}"] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def touched(workspace: Path, before: Mapping[str, Stamp]) -> dict[str, Stamp]:
    """The paths created or changed since `before` was taken, with their stamps now."""
    return {rel: st for rel, st in stamps(workspace).items() if before.get(rel) != st}


def secret_files(workspace: Path, paths: Mapping[str, Stamp], secrets: Mapping[str, str]) -> dict[str, list[str]]:
    """Which of `paths` hold a secret (by name, value), with the names each holds."""
    find, spread = _finder(secrets), _spread_finder(secrets)
    if find is None:
        return {}
    found: dict[str, list[str]] = {}
    for rel, stamp in paths.items():
        names = find(rel.encode())
        if stat.S_ISREG(stamp[0]):
            head = _head(os.path.join(workspace, rel))
            # Joined lines too: `base64` wraps its output at 76 columns, across a long token's encoding; and spread
            # out: a secret or its hex written with separators between its characters.
            if head is None:
                names |= set(secrets)
            else:
                names |= find(head) | find(head.translate(None, b"\r\n")) | (spread(head) if spread else set())
        if names:
            found[rel] = sorted(names)
    return found


def _finder(secrets: Mapping[str, str]) -> Callable[[bytes], set[str]] | None:
    """What finds the names of the secrets data holds; None when no secret is long enough to search for (a
    shorter one would match ordinary text everywhere)."""
    searched = {name: value for name, value in secrets.items() if len(value) >= MIN_SECRET}
    forms = [(f.encode(), name) for name, value in searched.items() for f in sorted(secret_forms(value))]
    if not forms:
        return None
    automaton = BytesAhoCorasick([f for f, _ in forms])
    return lambda data: {forms[i][1] for i, _, _ in automaton.find_matches_as_indexes(data, overlapping=True)}


def _spread_finder(secrets: Mapping[str, str]) -> Callable[[bytes], set[str]] | None:
    """What finds the names of the secrets data holds once SEPARATOR_BYTES are removed from both (`s e c r e t`,
    `s,e,c`): as written, and in hex (either case) whole or in ENCODED_PIECE-byte windows (xxd's lines)."""
    forms: list[tuple[bytes, str]] = []
    for name, value in secrets.items():
        bare = spread_out(value)
        found = {bare} if len(bare) >= MIN_SECRET else set()
        if len(value) >= MIN_SECRET:
            found |= {h for piece in pieces(value.encode(), ENCODED_PIECE) for h in (piece.hex(), piece.hex().upper())}
        forms += [(f.encode(), name) for f in sorted(found)]
    if not forms:
        return None
    automaton = BytesAhoCorasick([f for f, _ in forms])

    def find(data: bytes) -> set[str]:
        bare = data.translate(None, SEPARATOR_BYTES)
        return {forms[i][1] for i, _, _ in automaton.find_matches_as_indexes(bare, overlapping=True)}

    return find


def pieces(raw: bytes, size: int) -> list[bytes]:
    """Every run of `size` bytes of `raw` (the whole of it when shorter)."""
    return [raw[i : i + size] for i in range(max(1, len(raw) - size + 1))]


def _head(path: str) -> bytes | None:
    """The file's first SEARCHED_BYTES, or None when it cannot be read (the last part of its path is not followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:  # removed since the walk: nothing left to read
        return b""
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a fifo or a link put there since the walk: not read
            return b""
        try:
            return fh.read(SEARCHED_BYTES)
        except OSError:
            return None


def leak_problem(found: Mapping[str, list[str]], held: Sequence[str]) -> str:
    """Why the job stops, naming the paths (redacted with the `held` secrets: a name may hold one) and the
    secrets, never a value."""
    names = sorted({n for held_names in found.values() for n in held_names})
    paths = [redact(p, held) for p in sorted(found)]
    shown = ", ".join(paths[:NAMED]) + (f" and {len(paths) - NAMED} more" if len(paths) > NAMED else "")
    plural = len(names) > 1
    return (
        f"setup left the setup secret{'s' if plural else ''} {', '.join(names)} in {shown} (as written, backwards "
        f"or encoded), where the checks and the model could read {'them' if plural else 'it'}; nothing reached the "
        "model. Have setup take the secret from its environment or command line only, or delete what it wrote "
        "with it (a credentials file, a URL with the token in .git/config) before its last command ends"
    )
