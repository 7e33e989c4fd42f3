"""`/agent` slash commands in comment text: a pure parser."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

CommandName = Literal["retry", "rebase", "stop", "help", "plan", "approve", "revise"]

# Up to three spaces of indent: four or more make a Markdown code block, which is not a command.
_COMMAND = re.compile(r"^ {0,3}/agent[ \t]+([A-Za-z]+)(?:[ \t]+(.*?))?[ \t]*$", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_APPROACH = re.compile(r"^#?([12])$")
"""`/agent approve 2` (or `#2`): one of the plan's two approaches."""
_ATTRIBUTE = r"""\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?"""
_TAG = re.compile(rf"<[A-Za-z][A-Za-z0-9-]*(?:{_ATTRIBUTE})*\s*/?>")
"""An HTML open tag as CommonMark reads raw HTML: its attributes' values may span lines, and none is shown."""
_TITLE = r"""(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\))"""
_DEFINITION = re.compile(
    rf"^ {{0,3}}\[(?:[^\]\\]|\\.)+\]:[ \t]*\n?[ \t]*(?:<[^<>\n]*>|\S+)(?:[ \t]*\n?[ \t]*{_TITLE})?[ \t]*$", re.M
)
"""A link reference definition, whose title may span lines: GitHub shows none of it."""
FEEDBACK_AFTER = frozenset({"retry", "revise"})
"""Commands whose following lines are feedback."""
BARE = frozenset({"retry", "rebase", "stop", "help", "plan", "approve"})
"""Commands that stand alone on their line (`approve` may name an approach)."""


@dataclass(frozen=True)
class Command:
    name: CommandName
    feedback: str = ""
    """For `retry`: the lines after the command; for `revise`: the rest of its line and the lines after."""
    approach: int | None = None
    """For `approve N`: the approach chosen (None: the recommended one)."""


def _command(name: str, argument: str, rest: list[str]) -> Command | None:
    following = "\n".join(rest).strip() if name in FEEDBACK_AFTER else ""
    if name == "revise":
        feedback = "\n".join(part for part in (argument, following) if part).strip()
        return Command(name="revise", feedback=feedback)
    if name == "approve" and (number := _APPROACH.match(argument)):
        return Command(name="approve", approach=int(number.group(1)))
    if name in BARE and not argument:
        return Command(name=name, feedback=following)  # type: ignore[arg-type]
    return None


def _visible(line: str, in_comment: bool) -> tuple[str, bool]:
    """What GitHub shows of a line outside a code block (HTML comments are hidden), and whether a comment is still open."""
    shown = ""
    while line:
        if in_comment:
            end = line.find("-->")
            if end < 0:
                return shown, True
            line, in_comment = line[end + 3 :], False
        else:
            start = line.find("<!--")
            if start < 0:
                return shown + line, False
            shown, line, in_comment = shown + line[:start], line[start + 4 :], True
    return shown, in_comment


def _unseen_blanked(text: str) -> str:
    """`text` with what GitHub renders as no text blanked, each line kept in its place: HTML tags (a command on a
    line of a multi-line attribute) and link reference definitions (one in a multi-line title)."""
    for pattern in (_TAG, _DEFINITION):
        text = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return text


def parse_command(text: str | None) -> Command | None:
    """The first `/agent <command>` standing alone on a line outside code blocks, quotes, HTML comments, tags and
    link reference definitions (GitHub shows none of them, so a command there was not written to be seen)."""
    if not text:
        return None
    lines = _unseen_blanked(text.replace("\r\n", "\n")).split("\n")
    fence: str | None = None
    comment = False
    for index, raw in enumerate(lines):
        line, comment = (raw, False) if fence is not None else _visible(raw, comment)
        opening = _FENCE.match(line)
        if fence is not None:
            # A fence closes only with the same character, at least as long as the opening one.
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        match = _COMMAND.match(line)
        if match:
            found = _command(match.group(1).lower(), (match.group(2) or "").strip(), lines[index + 1 :])
            if found is not None:
                return found
    return None
