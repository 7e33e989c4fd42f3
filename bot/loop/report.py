"""How a run tells the outside what it is doing: typed phases, and free-text lines for the log."""

from __future__ import annotations

from typing import Protocol

from bot.checks.models import SetupReport
from bot.vocabulary import RunPhase


class Reporter(Protocol):
    """Called by the loop; both may raise to stop the run (the job's stop request does)."""

    def phase(self, phase: RunPhase) -> None:
        """The run entered `phase`."""

    def say(self, line: str) -> None:
        """One line of what happened (a step answered, an edit, a check result)."""

    def setup(self, report: SetupReport) -> None:
        """How the environment was prepared (setup ran or was reused, and how long it took)."""


class Silent:
    """A Reporter that reports nothing."""

    def phase(self, phase: RunPhase) -> None:
        return None

    def say(self, line: str) -> None:
        return None

    def setup(self, report: SetupReport) -> None:
        return None
