"""Every way out of the loop is one of these exceptions, carrying what the ending needs to record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from bot.vocabulary import ACCEPTED, FAILED, HANDED_OFF, NEEDS_CLARIFICATION, UNVERIFIED, Outcome


class RunEnded(Exception):
    """The run is over; `bot.loop.ending.conclude` turns it into the RunResult."""

    outcome: ClassVar[Outcome]

    def __init__(self, reason: str, *, question: str = "", next_steps: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.question = question
        """What the person is asked, when the run stops to ask."""
        self.next_steps = list(next_steps)


class Accepted(RunEnded):
    """`finish` was verified by the harness."""

    outcome = ACCEPTED


class Unverified(RunEnded):
    """The checks pass but the harness could not show every criterion met; the work is kept, not vouched for."""

    outcome = UNVERIFIED


class HandedOff(RunEnded):
    """A person takes over: the environment is broken, a limit was reached, or the same failure came back."""

    outcome = HANDED_OFF


class NeedsClarification(RunEnded):
    """The contract is incomplete; nothing ran."""

    outcome = NEEDS_CLARIFICATION


class Failed(RunEnded):
    """An error outside the task (the model API failing after its retries, a git failure)."""

    outcome = FAILED
