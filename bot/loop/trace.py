"""The JSONL trace: one record per line, appended and flushed as it happens, secrets redacted first."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from bot.redact import redact


class Trace:
    def __init__(self, path: Path, secrets: Sequence[str]) -> None:
        self.path = path
        self.secrets = list(secrets)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def append(self, record: BaseModel) -> None:
        line = redact(record.model_dump_json(), self.secrets)
        with self.path.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()
            # A crash right after a step must not lose it.
            os.fsync(fh.fileno())
