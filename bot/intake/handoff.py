"""A thread that takes, in one pass, everything handed to it since its last pass."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Handoff(Generic[T]):
    """`put` from any thread; the thread calls `handle` with all that was put since it last did. `stop` lets it
    handle what is left, then ends it."""

    def __init__(self, name: str, handle: Callable[[list[T]], None]) -> None:
        self._handle = handle
        self._items: list[T] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, items: list[T]) -> None:
        with self._lock:
            self._items += items
        self._ready.set()

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        self._ready.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)

    def _run(self) -> None:
        while True:
            if not self._stopping.is_set():
                self._ready.wait()
            self._ready.clear()
            with self._lock:
                items, self._items = self._items, []
            if items:
                self._handle(items)
            elif self._stopping.is_set():
                return
            del items  # nothing of a handled pass is kept while this thread waits
