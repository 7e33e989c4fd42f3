"""`/agent` slash commands in comment text: a pure parser."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

CommandName = Literal["retry", "rebase", "stop", "help"]

# Up to three spaces of indent: four or more make a Markdown code block, which is not a command.
_COMMAND = re.compile(r"^ {0,3}/agent[ \t]+(retry|rebase|stop|help)[ \t]*$", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Command:
    name: CommandName
    feedback: str = ""
    """For `retry`: the lines after the command, for the next round."""


def parse_command(text: str | None) -> Command | None:
    """The first `/agent retry|rebase|stop|help` standing alone on a line outside code blocks and quotes."""
    if not text:
        return None
    lines = text.replace("\r\n", "\n").split("\n")
    fence: str | None = None
    for index, line in enumerate(lines):
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
            name = match.group(1).lower()
            feedback = "\n".join(lines[index + 1 :]).strip() if name == "retry" else ""
            return Command(name=name, feedback=feedback)  # type: ignore[arg-type]
    return None
