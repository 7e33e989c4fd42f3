"""Requests waiting for their delivery to be stored, and answering them on their own event loop's thread."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from bot.intake.apply import Ack, Incoming

Answer = tuple[asyncio.Future[Ack], Ack | Exception]


@dataclass(frozen=True)
class Waiting:
    item: Incoming
    future: asyncio.Future[Ack]
    loop: asyncio.AbstractEventLoop
    timer: asyncio.TimerHandle | None = None
    """The refusal its batch gets if it is not stored durably in time."""


def answer_on_loops(batch: list[Waiting], answers: list[Answer]) -> None:
    """From another thread: each answer settled on its request's loop, with the batch's refusal timers cancelled."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Answer]] = {}
    timers: dict[asyncio.AbstractEventLoop, set[asyncio.TimerHandle]] = {}
    for waiting, answer in zip(batch, answers):
        by_loop.setdefault(waiting.loop, []).append(answer)
        if waiting.timer is not None:
            timers.setdefault(waiting.loop, set()).add(waiting.timer)
    for loop, loop_answers in by_loop.items():
        try:
            loop.call_soon_threadsafe(settle, loop_answers, timers.get(loop, ()))
        except RuntimeError:  # that loop has closed: nobody is waiting any more
            pass


def settle(answers: list[Answer], timers: Iterable[asyncio.TimerHandle] = ()) -> None:
    """Answer on the loop's thread, and cancel the timers of the batches answered (they held them)."""
    for timer in timers:
        timer.cancel()
    for future, result in answers:
        if future.done():
            continue
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)
