"""Writing the settings file (`AIFIX_ENV_FILE`): `NAME="value"` lines only its owner may read, never over another file.

The file appears whole or not at all: it is written under a temporary name (mode 600 from its creation, so no
moment exists when others may read it), flushed to disk, then linked to its name, which fails if a file is
there already; `force` replaces such a file, keeping it beside as `<name>.previous`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from bot.errors import ConfigError

MODE = 0o600


def dotenv_line(name: str, value: str) -> str:
    """`NAME="value"` as python-dotenv (and so pydantic-settings) reads it back: newlines kept, `\\` and `"` escaped.

    python-dotenv expands `${NAME}` in every value and has no escape for it: such a value cannot be written."""
    if "${" in value:
        raise ConfigError(
            f"{name}: a value holding '${{' would be read back changed; it cannot go in the settings file"
        )
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{name}="{escaped}"\n'


def refusal(path: Path, *, force: bool) -> str:
    """Why the file cannot be written ("" when it can): it exists and `force` is off."""
    if force or not (path.exists() or path.is_symlink()):
        return ""
    return (
        f"{path} exists and is not overwritten: move it away, set AIFIX_ENV_FILE to another path, or start "
        "`ai-fix serve --force` to replace it (the old file is kept as .previous)"
    )


def write_settings(path: Path, values: Mapping[str, str], *, header: str, force: bool = False) -> None:
    """Write `values` to `path` (mode 600, atomically); ConfigError when a file is there and `force` is off."""
    if problem := refusal(path, force=force):
        raise ConfigError(problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"# {line}\n" for line in header.splitlines())
    text += "".join(dotenv_line(name, value) for name, value in values.items())
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if force and (path.exists() or path.is_symlink()):
            os.replace(path, path.with_name(path.name + ".previous"))
        try:
            os.link(temporary, path)  # fails when the name is taken: never over a file written meanwhile
        except FileExistsError:
            raise ConfigError(refusal(path, force=False)) from None
    finally:
        temporary.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
