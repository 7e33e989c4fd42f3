"""The JSONL trace: one record per line, appended and flushed as it happens, secrets redacted first.

A trace is only ever appended to: a later attempt of the same job (after a crash) adds its records after
the earlier attempt's, and every record carries its `attempt` number.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from bot.redact import redact_json


class Trace:
    def __init__(self, path: Path, secrets: Sequence[str], *, attempt: int = 1) -> None:
        self.path = path
        self.secrets = list(secrets)
        self.attempt = attempt
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, record: BaseModel) -> None:
        data = {"attempt": self.attempt, **record.model_dump(mode="json")}
        line = redact_json(data, self.secrets, ensure_ascii=False, separators=(",", ":"))
        with self.path.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()
            # A crash right after a step must not lose it.
            os.fsync(fh.fileno())
