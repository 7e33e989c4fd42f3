"""The search for setup secrets in what setup wrote, on real files: every form a secret travels in, at every offset
of an encoded stream, is found in a file setup created or changed; nothing else is, and no symlink is followed."""

from __future__ import annotations

import base64
import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.checks.setup_leaks import leak_problem, secret_files, stamps, touched
from bot.redact import secret_forms

TOKEN = "npm_8dkLq02nZ+xVbT5/yHs1rPwE4uJm9aCf"
"""With `+` and `/`, so base64url, URL-encoding and base64 of it differ."""
SECRETS = {"NPM_TOKEN": TOKEN}
PREFIXES = ["", "u", "us", "use", "user", "user:"]
"""Bytes before the secret in the encoded data: every offset in a base64 group (3) and a base32 one (5)."""


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def b32(text: str) -> str:
    return base64.b32encode(text.encode()).decode()


FORMS: dict[str, Callable[[str], str]] = {
    "as it is": lambda p: p + TOKEN,
    "backwards": lambda p: (p + TOKEN)[::-1],
    "url-encoded": lambda p: urllib.parse.quote(p + TOKEN, safe=""),
    "base64": lambda p: f"_auth={b64(p + TOKEN)}\n",
    "base64 wrapped": lambda p: base64.encodebytes(("x" * 50 + p + TOKEN).encode()).decode(),
    "base64url": lambda p: b64url(p + TOKEN),
    "base32": lambda p: b32(p + TOKEN),
    "base32, lower case": lambda p: b32(p + TOKEN).lower(),
    "hex": lambda p: (p + TOKEN).encode().hex(),
    "HEX": lambda p: (p + TOKEN).encode().hex().upper(),
}


def xxd(data: bytes) -> str:
    """What `xxd` prints: an offset, 16 bytes in hex in groups of two, then the text."""
    lines, columns = [], 16
    for at in range(0, len(data), columns):
        row = data[at : at + columns]
        hexed = " ".join(row[i : i + 2].hex() for i in range(0, len(row), 2))
        lines.append(f"{at:08x}: {hexed:<{columns * 2 + columns // 2}} {row.decode(errors='replace')}")
    return "\n".join(lines) + "\n"


SPREAD: dict[str, Callable[[str], str]] = {
    "spaced characters": lambda p: " ".join(p + TOKEN),
    "a comma list": lambda p: ",".join(p + TOKEN),
    "xxd": lambda p: xxd((p + TOKEN).encode()),
    "xxd -u": lambda p: xxd((p + TOKEN).encode()).upper(),
    "od -An -tx1": lambda p: "\n".join(
        " ".join(f"{b:02x}" for b in (p + TOKEN).encode()[i : i + 16]) for i in range(0, len(p + TOKEN), 16)
    ),
    "colons and dashes": lambda p: ":".join(
        (p + TOKEN).encode().hex()[i : i + 2] for i in range(0, 2 * len(p + TOKEN), 2)
    ).replace(":", "-", 5),
}
"""Forms that put separators (whitespace, `,:;-`) between the secret's characters or its hex digits."""


def written(workspace: Path, files: dict[str, str | bytes]) -> dict[str, list[str]]:
    """What the search finds after `files` are written into the workspace as setup would."""
    before = stamps(workspace)
    for rel, data in files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return secret_files(workspace, touched(workspace, before), SECRETS)


@pytest.mark.parametrize("form", FORMS)
def test_a_file_holding_the_secret_in_any_form_at_any_offset_is_found(tmp_path: Path, form: str) -> None:
    files: dict[str, str | bytes] = {f".ai-fix-env/{i}": f"x{FORMS[form](p)}y" for i, p in enumerate(PREFIXES)}
    assert written(tmp_path, files) == {rel: ["NPM_TOKEN"] for rel in files}


@pytest.mark.parametrize("form", SPREAD)
def test_a_file_holding_the_secret_spread_out_with_separators_is_found(tmp_path: Path, form: str) -> None:
    files: dict[str, str | bytes] = {f".ai-fix-env/{i}": f"x {SPREAD[form](p)} y" for i, p in enumerate(PREFIXES)}
    assert written(tmp_path, files) == {rel: ["NPM_TOKEN"] for rel in files}


def test_only_what_setup_created_or_changed_is_searched(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/config").write_text("[core]\n")
    (tmp_path / "setup.cfg").write_text("[metadata]\n")
    (tmp_path / "committed.txt").write_text(f"the repository's own copy: {TOKEN}\n")
    outside = tmp_path.parent / "outside.txt"
    outside.write_text(TOKEN)
    before = stamps(tmp_path)
    (tmp_path / ".git/config").write_text(
        f'[url "https://x:{TOKEN}@npm.example/"]\n\tinsteadOf = https://npm.example/\n'
    )
    with (tmp_path / "setup.cfg").open("a") as fh:
        fh.write(f"token = {TOKEN[::-1]}\n")
    (tmp_path / ".ai-fix-env/venv/lib").mkdir(parents=True)
    (tmp_path / ".ai-fix-env/venv/lib/clean.py").write_text("import os\nTOKEN = os.environ['NPM_TOKEN']\n")
    (tmp_path / ".ai-fix-env/token.sha256").write_text(
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
    )
    (tmp_path / ".ai-fix-env/link").symlink_to(outside)
    (tmp_path / ".ai-fix-env/linked-dir").symlink_to(tmp_path.parent)
    os.mkfifo(tmp_path / ".ai-fix-env/pipe")  # read, it would block the search
    (tmp_path / ".ai-fix-env/lib.so").write_bytes(b"\x7fELF\x00" + b32(TOKEN).encode() + b"\x00\xff")
    found = secret_files(tmp_path, touched(tmp_path, before), SECRETS)
    assert found == {".git/config": ["NPM_TOKEN"], "setup.cfg": ["NPM_TOKEN"], ".ai-fix-env/lib.so": ["NPM_TOKEN"]}


def test_a_path_named_with_the_secret_is_found_and_named_masked(tmp_path: Path) -> None:
    found = written(tmp_path, {f"creds/{b64url(TOKEN)}.json": "{}"})
    assert list(found) == [f"creds/{b64url(TOKEN)}.json"]
    problem = leak_problem(found, [TOKEN])
    assert problem.startswith("setup left the setup secret NPM_TOKEN in creds/[REDACTED].json (as written,")
    assert not [f for f in secret_forms(TOKEN) if f in problem]


def test_many_files_are_named_five_then_counted_and_each_secret_by_name(tmp_path: Path) -> None:
    before = stamps(tmp_path)
    for i in range(7):
        (tmp_path / f"f{i}").write_text(TOKEN)
    (tmp_path / "pypirc").write_text("password = pypi-AgEIcHlwaS5vcmcCJGZm\n")
    secrets = {**SECRETS, "PYPI_TOKEN": "pypi-AgEIcHlwaS5vcmcCJGZm"}
    found = secret_files(tmp_path, touched(tmp_path, before), secrets)
    assert leak_problem(found, list(secrets.values())).startswith(
        "setup left the setup secrets NPM_TOKEN, PYPI_TOKEN in f0, f1, f2, f3, f4 and 3 more (as written, backwards "
        "or encoded), where the checks and the model could read them"
    )


def test_a_secret_too_short_to_tell_from_ordinary_text_is_not_searched(tmp_path: Path) -> None:
    before = stamps(tmp_path)
    (tmp_path / "words.txt").write_text("a pin of 4321 and a word: hunter2\n")
    assert secret_files(tmp_path, touched(tmp_path, before), {"PIN": "4321", "WORD": "hunter2"}) == {}
