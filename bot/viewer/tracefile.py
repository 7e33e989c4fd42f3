"""Reading a trace as it grows: complete lines only, redacted again, tolerant of lines it cannot parse."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.redact import redact

Record = dict[str, Any]


def parse_line(line: str, secrets: Sequence[str]) -> Record:
    """One trace line as a record; a line that is not a JSON object becomes an `unreadable` record.

    The trace was redacted in full when written (with every secret the job held, this process's
    among them); this second pass removes whole values and their encodings, not every 8-character
    piece, which would cost over a second per page for a private key.
    """
    text = redact(line, secrets, fragments=False)
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        return {"kind": "unreadable", "text": text[:2000]}
    return value


class TraceReader:
    """Follows one trace file: `read()` returns the records appended since the last call.

    A trace is written afresh when a run starts again; when the file is shorter than what was read
    or no longer begins with the line read first, `restarted` is set and reading starts over.
    """

    def __init__(self, path: Path, secrets: Sequence[str]) -> None:
        self.path = path
        self.secrets = list(secrets)
        self.offset = 0
        self.first = b""
        self.restarted = False

    def read(self) -> list[Record]:
        try:
            with self.path.open("rb") as fh:
                if self.offset and (fh.seek(0, 2) < self.offset or self._head_changed(fh)):
                    self.restarted = True
                    self.offset, self.first = 0, b""
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line still being written waits for its newline
        if not end:
            return []
        lines = data[:end].splitlines()
        if not self.first:
            self.first = lines[0]
        self.offset += end
        return [parse_line(raw.decode("utf-8", "replace"), self.secrets) for raw in lines if raw.strip()]

    def _head_changed(self, fh: Any) -> bool:
        fh.seek(0)
        return bool(fh.read(len(self.first)) != self.first)
