"""The live page: a server-sent-events stream of the trace as it grows.

The client says how many records its page shows (`from`, or `Last-Event-ID` when the browser
reconnects); the stream sends each new timeline entry as HTML and every other section whose HTML
changed, then `end` once nothing more will change (a file: its end record arrived; a job: it left
`running`, after the run's delivery), or `restart` when the trace was begun afresh (a new attempt),
which makes the page reload.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool

from bot.viewer.pages import Pages
from bot.viewer.tracefile import Record, TraceReader
from bot.viewer.view import build_view


class RunSource(Protocol):
    """Where a run's trace is and whether more can come: a job in the store, or a file given on the command line."""

    def refresh(self) -> None:
        """Look again (the job may have moved to a new attempt or ended); blocking, called in a thread."""

    def trace_path(self) -> Path | None: ...

    def finished(self, ended: bool) -> bool:
        """True when nothing on the page will change any more; `ended`: the trace's end record has been read."""

    def meta(self) -> dict[str, Any]:
        """What the page's header says about the run besides the trace (`facts`: (name, value) pairs)."""


def sse(event: str, data: Any, event_id: int | None = None) -> str:
    lines = [f"event: {event}"] + ([f"id: {event_id}"] if event_id is not None else [])
    return "\n".join([*lines, f"data: {json.dumps(data, ensure_ascii=False)}", "", ""])


class Follow:
    """One client's stream: what it has, and what it is sent next."""

    def __init__(self, source: RunSource, pages: Pages, secrets: Sequence[str]) -> None:
        self.source, self.pages, self.secrets = source, pages, list(secrets)
        self.path: Path | None = None
        self.reader: TraceReader | None = None
        self.records: list[Record] = []
        self.sent_sections: dict[str, str] = {}
        self.sent_items = 0

    def read(self) -> bool:
        """Take in what the trace gained; False when the trace was begun afresh since the client's page."""
        path = self.source.trace_path()
        if path != self.path:
            if self.records:
                return False
            self.path, self.reader = path, TraceReader(path, self.secrets) if path else None
        if self.reader is None:
            return True
        new = self.reader.read()
        if self.reader.restarted:
            return False
        self.records += new
        return True

    def seen(self, count: int) -> None:
        """The client's page shows the first `count` records."""
        view = build_view(self.records[:count])
        self.sent_sections = self.pages.sections(view, self.source.meta())
        self.sent_items = len(view.timeline)

    def update(self) -> tuple[dict[str, Any] | None, bool]:
        """The changes since the last update (None when there are none), and whether the end record was read."""
        view = build_view(self.records)
        sections = self.pages.sections(view, self.source.meta())
        changed = {k: v for k, v in sections.items() if self.sent_sections.get(k) != v}
        items = [self.pages.item(t) for t in view.timeline[self.sent_items :]]
        self.sent_sections, self.sent_items = sections, len(view.timeline)
        data = {"sections": changed, "items": items, "records": len(self.records)}
        return (data if changed or items else None), view.end is not None


async def follow(
    follow: Follow,
    start: int,
    *,
    poll: float = 0.25,
    refresh: float = 2.0,
    heartbeat: float = 15.0,
    lifetime: float = 600.0,
    closing: threading.Event | None = None,
) -> AsyncIterator[str]:
    """The event stream for a client whose page shows `start` records.

    It ends after `lifetime` seconds even while the run goes on, and at once when `closing` is set
    (the server got SIGTERM: an open page must not hold up the drain); the browser reconnects with the
    last event id and carries on where it was.
    """
    yield "retry: 2000\n\n"
    if not await run_in_threadpool(follow.read) or len(follow.records) < start:
        yield sse("restart", {})
        return
    await run_in_threadpool(follow.seen, start)
    began = last_refresh = last_beat = time.monotonic()
    changed = True
    while time.monotonic() - began < lifetime and not (closing and closing.is_set()):
        if changed:
            data, ended = await run_in_threadpool(follow.update)
            if data is not None:
                yield sse("update", data, len(follow.records))
                last_beat = time.monotonic()
            if follow.source.finished(ended):
                yield sse("end", {})
                return
        await asyncio.sleep(poll)
        count, now = len(follow.records), time.monotonic()
        refreshed = now - last_refresh >= refresh
        if refreshed:
            await run_in_threadpool(follow.source.refresh)
            last_refresh = now
        if not await run_in_threadpool(follow.read):
            yield sse("restart", {})
            return
        changed = refreshed or len(follow.records) > count
        if now - last_beat >= heartbeat:
            yield ": still here\n\n"
            last_beat = now
