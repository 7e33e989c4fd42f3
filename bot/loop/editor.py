"""Anthropic's text editor tool (`view`, `create`, `str_replace`, `insert`); every write passes the patch gate."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from bot.loop.records import EditInput, Observation
from bot.loop.search import text_files
from bot.redact import is_secret_file
from bot.workspace.gate import PatchGate, Tree, apply_write
from bot.workspace.models import DiffStats
from bot.workspace.pathrules import canonical_path

MAX_VIEW_LINES = 400
MAX_VIEW_LINE = 2000
"""Characters of one line shown; the rest of a longer line (minified code, data) is cut."""
MAX_VIEW_SCAN = 16 << 20
"""Bytes `view` reads at most to reach the lines asked for."""
BINARY_PROBE = 8192
"""Bytes at the start of a file looked at for NULs: a binary file is refused."""
SNIPPET = 4
"""Lines shown either side of an edit in its result."""


class Refused(Exception):
    """An edit the harness will not make; the message is for the model."""


def numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines, start=start))


def readable_path(root: Path, raw: str) -> str:
    """The canonical path of a file the model may read: inside the workspace, not git's, not a secret file."""
    try:
        rel = canonical_path(raw)
    except Exception as exc:  # noqa: BLE001 - the gate's refusal type is private; its reason is written for the model
        raise Refused(getattr(exc, "reason", str(exc))) from None
    if is_secret_file(rel):
        raise Refused(f"{rel} holds secrets by convention (.env*, *.pem, keys); it is never shown or changed")
    if not Path(os.path.realpath(root / rel)).is_relative_to(os.path.realpath(root)):
        raise Refused(f"{rel} resolves outside the workspace (a symlink); read the file at its real path")
    return rel


def view(root: Path, cmd: EditInput) -> str:
    rel = readable_path(root, cmd.path)
    target = root / rel
    if target.is_dir():
        inside = [p for p in text_files(target) if p.count("/") < 2]
        return f"{rel}/ holds:\n" + "\n".join(inside[:MAX_VIEW_LINES])
    if not target.is_file():
        raise Refused(f"{rel} does not exist; use search_code or view a directory to find the right path")
    start, end = 1, None
    if cmd.view_range:
        if len(cmd.view_range) != 2 or cmd.view_range[0] < 1:
            raise Refused(
                "view_range must be [first_line, last_line] with first_line >= 1 (last_line -1 = end of file)"
            )
        start, end = cmd.view_range[0], None if cmd.view_range[1] == -1 else cmd.view_range[1]
    with target.open("rb") as fh:
        if b"\x00" in fh.read(BINARY_PROBE):
            raise Refused(f"{rel} is a binary file (it holds NUL bytes); ai-fix shows text files only")
        fh.seek(0)
        shown, more = read_lines(fh, start, end)
    return numbered(shown, start) + more


def read_lines(fh: BinaryIO, start: int, end: int | None) -> tuple[list[str], str]:
    """Lines `start`..`end` (None: to the end) of a file, at most MAX_VIEW_LINES, each cut at MAX_VIEW_LINE
    characters; and a note on what was left out. The file is streamed and read no further than MAX_VIEW_SCAN
    bytes: a huge file is shown in part, never loaded whole."""
    shown: list[str] = []
    number = scanned = left_out = 0
    while scanned < MAX_VIEW_SCAN and (end is None or number < end):
        raw = fh.readline(MAX_VIEW_LINE * 4)
        if not raw:
            return shown, (f"\n... {left_out} more lines; use view_range" if left_out else "")
        scanned += len(raw)
        while not raw.endswith(b"\n") and scanned < MAX_VIEW_SCAN and (rest := fh.readline(1 << 16)):
            scanned += len(rest)  # a line longer than shown: the rest is skipped, not kept
            raw = raw[: MAX_VIEW_LINE * 4] + rest[-1:]
        # splitlines, as the editor counts lines: form feeds and lone carriage returns end lines too.
        for line in raw.decode("utf-8", errors="replace").splitlines() or [""]:
            number += 1
            if number < start or (end is not None and number > end):
                continue
            if len(shown) < MAX_VIEW_LINES:
                shown.append(line if len(line) <= MAX_VIEW_LINE else line[:MAX_VIEW_LINE] + " [... line cut]")
            else:
                left_out += 1
    if end is not None and number >= end:
        return shown, (f"\n... {left_out} more lines; use view_range" if left_out else "")
    return shown, f"\n... the file goes on past {MAX_VIEW_SCAN >> 20} MiB; view a later range with view_range"


def _new_content(root: Path, cmd: EditInput, max_bytes: int) -> tuple[str, str, int]:
    """(path, new text, first changed line) for a write command, or Refused; a file over `max_bytes` (the gate's
    limit for one file) is refused before it is read."""
    if cmd.command == "create":
        if cmd.file_text is None:
            raise Refused("create needs file_text: the whole content of the new file")
        return cmd.path, cmd.file_text, 1
    rel = readable_path(root, cmd.path)
    if not (root / rel).is_file():
        raise Refused(f"{rel} does not exist; use create for a new file")
    if (size := (root / rel).stat().st_size) > max_bytes:
        raise Refused(f"{rel} is {size} bytes, over the {max_bytes}-byte limit for one file: it cannot be edited")
    old = (root / rel).read_text(errors="replace")
    if cmd.command == "str_replace":
        if not cmd.old_str:
            raise Refused("str_replace needs old_str: the exact text to replace, occurring once in the file")
        count = old.count(cmd.old_str)
        if count != 1:
            hint = (
                "no match: view the file and copy the text exactly"
                if count == 0
                else f"{count} matches: include more surrounding lines"
            )
            raise Refused(f"str_replace in {rel}: old_str must occur exactly once, found {hint}")
        at = old[: old.index(cmd.old_str)].count("\n") + 1
        return rel, old.replace(cmd.old_str, cmd.new_str or "", 1), at
    text = cmd.insert_text if cmd.insert_text is not None else cmd.new_str
    if text is None or cmd.insert_line is None:
        raise Refused("insert needs insert_line (0 = top of the file) and insert_text")
    lines = old.splitlines(keepends=True)
    if not 0 <= cmd.insert_line <= len(lines):
        raise Refused(f"insert_line {cmd.insert_line} is outside {rel} (0..{len(lines)})")
    if lines and not lines[-1].endswith("\n") and cmd.insert_line == len(lines):
        lines[-1] += "\n"
    new = (
        "".join(lines[: cmd.insert_line])
        + text
        + ("" if text.endswith("\n") else "\n")
        + "".join(lines[cmd.insert_line :])
    )
    return rel, new, cmd.insert_line + 1


def edit(workspace: Tree, gate: PatchGate, cmd: EditInput, current: DiffStats) -> Observation:
    """Run one editor command; a refusal or gate decision comes back as a failed observation, never raised.

    `current` is the change so far against the base, for the gate's file and line limits.
    """
    root = Path(workspace.path)
    try:
        if cmd.command == "view":
            return Observation(ok=True, text=view(root, cmd))
        path, content, at = _new_content(root, cmd, gate.max_file_bytes)
    except Refused as refusal:
        return Observation(ok=False, text=str(refusal))
    decision = apply_write(workspace, path, content, gate, current)
    if not decision.allowed:
        return Observation(ok=False, text=f"refused: {decision.reason}")
    lines = content.splitlines()
    written = (
        cmd.file_text
        if cmd.command == "create"
        else (cmd.new_str if cmd.command == "str_replace" else cmd.insert_text or cmd.new_str)
    )
    first = max(1, at - SNIPPET)
    last = at + (written or "").count("\n") + SNIPPET
    snippet = numbered(lines[first - 1 : min(last, first + MAX_VIEW_LINES)], first)
    return Observation(ok=True, text=f"{cmd.command} {decision.path}: done. Around line {at} now:\n{snippet}")
