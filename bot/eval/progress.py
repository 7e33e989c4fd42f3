"""Progress of an eval: on a terminal one bar redrawn in place, elsewhere one line per finished run."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import TextIO

from bot.eval.models import CLASSES, TaskRecord

BAR = 24


def money(usd: float | None) -> str:
    return "unknown" if usd is None else f"${usd:.4f}"


def clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m:02d}:{s:02d}"


class Progress:
    """Runs done out of `total`, the classes so far, the spend so far; safe to call from the workers."""

    def __init__(self, total: int, stream: TextIO, *, done: int = 0) -> None:
        self.total, self.stream, self.done = total, stream, done
        self.tty = stream.isatty()
        self.classes: Counter[str] = Counter()
        self.usd: float | None = 0.0
        self.began = time.monotonic()
        self.lock = threading.Lock()

    def line(self) -> str:
        filled = BAR * self.done // self.total if self.total else BAR
        counts = " · ".join(f"{c} {self.classes[c]}" for c in (*CLASSES, "error") if c != "error" or self.classes[c])
        return (
            f"[{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{self.total} runs · {counts} · "
            f"spent {money(self.usd)} · {clock(time.monotonic() - self.began)}"
        )

    def start(self) -> None:
        if self.tty:
            self.stream.write(self.line())
            self.stream.flush()

    def finished(self, record: TaskRecord) -> None:
        with self.lock:
            self.done += 1
            self.classes[record.klass] += 1
            self.usd = None if self.usd is None or record.usd is None else self.usd + record.usd
            if self.tty:
                self.stream.write("\r\x1b[K" + self.line())
            else:
                self.stream.write(f"[{self.done}/{self.total}] {describe(record)}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def describe(record: TaskRecord) -> str:
    """One run in a line: task, variant, class, what ai-fix said, what the hidden tests showed, cost, time."""
    if record.klass == "error":
        return f"{record.instance_id} {record.variant}: error: {record.error}"
    h = record.hidden
    shown = ""
    if h is not None:
        f2p = sum(s == "pass" for s in h.fail_to_pass.values())
        p2p = sum(s == "pass" for s in h.pass_to_pass.values())
        shown = f"; hidden FAIL_TO_PASS {f2p}/{len(h.fail_to_pass)}, PASS_TO_PASS {p2p}/{len(h.pass_to_pass)}"
    return (
        f"{record.instance_id} {record.variant}: {record.klass} ({record.outcome}{shown}) "
        f"{money(record.usd)} {record.wall_s:.1f} s"
    )
