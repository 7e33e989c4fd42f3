"""Capped capture of a command's output: the head and the tail are kept, the middle is counted."""

from __future__ import annotations

import os
import selectors
import time

from bot.markdown import terminal_safe

CHUNK = 65536


class HeadTail:
    """Keeps the first and last `cap // 2` bytes of a stream of any length."""

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 0)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        head_room = self.cap // 2 - len(self._head)
        if head_room > 0:
            self._head += data[:head_room]
            data = data[head_room:]
        if data:
            keep = self.cap - self.cap // 2
            self._tail += data
            if len(self._tail) > keep:
                del self._tail[: len(self._tail) - keep]

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = terminal_safe(self._head.decode("utf-8", "replace"))
        tail = terminal_safe(self._tail.decode("utf-8", "replace"))
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes dropped ...]\n{tail}"
        return head + tail


def drain(fd: int, buffer: HeadTail, deadline: float) -> bool:
    """Read `fd` into `buffer` until end of file (True) or the monotonic `deadline` (False)."""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not sel.select(left):
                continue
            data = os.read(fd, CHUNK)
            if not data:
                return True
            buffer.feed(data)
