"""Conflicted files as git leaves them (diff3 style), cut into hunks, and put back together resolved (pure).

A hunk is `<<<<<<< ours` … `||||||| base` … `=======` … `>>>>>>> theirs`; ai-fix merges with
`merge.conflictStyle=diff3`, so the common ancestor's lines are there for whoever resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, Field

_OURS = re.compile(r"^<{7}(?: .*)?$")
_BASE = re.compile(r"^\|{7}(?: .*)?$")
_SPLIT = re.compile(r"^={7}$")
_THEIRS = re.compile(r"^>{7}(?: .*)?$")
MARKERS = re.compile(r"^(?:<{7}|\|{7}|={7}|>{7})(?: |$)", re.MULTILINE)
CONTEXT = 5


class ConflictError(ValueError):
    """A file cannot be cut into hunks (markers out of order) or put back (a hunk left unresolved)."""


class Hunk(BaseModel):
    n: int
    """Its number in the file, from 1."""
    start: int
    """The line (from 1) its `<<<<<<<` marker is on."""
    ours: list[str]
    base: list[str]
    theirs: list[str]
    before: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)
    """A few unconflicted lines around it, for context."""


class ConflictedFile(BaseModel):
    path: str
    pieces: list[str | int]
    """The file as plain text lines and hunk numbers, in order."""
    hunks: list[Hunk]


def parse_conflicts(path: str, text: str) -> ConflictedFile:
    """The file's hunks and the text between them; ConflictError when the markers do not nest."""
    pieces: list[str | int] = []
    hunks: list[Hunk] = []
    lines = text.split("\n")
    part: str | None = None
    current: dict[str, list[str]] = {}
    start = 0
    for index, line in enumerate(lines, start=1):
        if part is None:
            if _OURS.match(line):
                part, current, start = "ours", {"ours": [], "base": [], "theirs": []}, index
            else:
                pieces.append(line)
            continue
        if part == "ours" and _BASE.match(line):
            part = "base"
        elif part in ("ours", "base") and _SPLIT.match(line):
            part = "theirs"
        elif part == "theirs" and _THEIRS.match(line):
            hunks.append(Hunk(n=len(hunks) + 1, start=start, **current))
            pieces.append(len(hunks))
            part = None
        elif _OURS.match(line) or _THEIRS.match(line):
            raise ConflictError(f"{path}: conflict markers out of order at line {index}")
        else:
            current[part].append(line)
    if part is not None:
        raise ConflictError(f"{path}: the conflict starting at line {start} never ends")
    for hunk in hunks:
        at = pieces.index(hunk.n)
        hunk.before = [p for p in pieces[max(0, at - CONTEXT) : at] if isinstance(p, str)]
        hunk.after = [p for p in pieces[at + 1 : at + 1 + CONTEXT] if isinstance(p, str)]
    return ConflictedFile(path=path, pieces=pieces, hunks=hunks)


def resolve(conflicted: ConflictedFile, resolutions: Mapping[int, str]) -> str:
    """The file with each hunk replaced by its resolution; ConflictError naming what is missing or left over."""
    missing = [h.n for h in conflicted.hunks if h.n not in resolutions]
    if missing:
        raise ConflictError(f"{conflicted.path}: conflict(s) {', '.join(map(str, missing))} not resolved")
    unknown = sorted(set(resolutions) - {h.n for h in conflicted.hunks})
    if unknown:
        raise ConflictError(f"{conflicted.path} has no conflict {', '.join(map(str, unknown))}")
    out: list[str] = []
    for piece in conflicted.pieces:
        if isinstance(piece, int):
            text = resolutions[piece]
            if MARKERS.search(text):
                raise ConflictError(
                    f"{conflicted.path}: the resolution of conflict {piece} still holds conflict markers"
                )
            out += text.removesuffix("\n").split("\n") if text else []
        else:
            out.append(piece)
    return "\n".join(out)
