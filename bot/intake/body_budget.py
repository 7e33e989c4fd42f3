"""The request bodies one process holds at once: a budget shared by every connection, answered 503 beyond it.

A webhook's body must be read whole before its signature can be checked, so anyone can make the intake
hold what they send. Every body is counted against one process-wide budget while it is read and handled:
a body that declares more than SMALL_BODY bytes reserves all of it before a byte is read (a client that
declares 24 MiB and stalls is refused at once when they do not fit), any other counts as its bytes arrive;
and large bodies never take the last SMALL_RESERVE bytes, so ordinary deliveries (a few KiB each) still
fit while large ones are held. A body the budget cannot take is answered 503 and its connection closed.
"""

from __future__ import annotations

SMALL_BODY = 1 << 20
"""A body declared (or grown) past this many bytes is large; GitHub's deliveries are almost always far smaller."""
SMALL_RESERVE = 8 << 20
"""What large bodies leave for small ones: a few thousand ordinary deliveries at once."""


class OverBudget(Exception):
    """The budget cannot hold this body now; the caller answers 503."""


class BodyBudget:
    """Bytes of request bodies held across the process (all on the event loop's thread: no lock)."""

    def __init__(self, limit: int) -> None:
        if limit < SMALL_RESERVE + SMALL_BODY:
            raise ValueError(f"a body budget needs at least {SMALL_RESERVE + SMALL_BODY} bytes")
        self.limit = limit
        self.held = 0

    def hold(self) -> Held:
        """One request's share, empty until its body is declared or arrives; release it once answered."""
        return Held(self)

    def _take(self, size: int, *, large: bool) -> None:
        ceiling = self.limit - SMALL_RESERVE if large else self.limit
        if self.held + size > ceiling:
            raise OverBudget
        self.held += size


class Held:
    """What one request holds of the budget."""

    def __init__(self, budget: BodyBudget) -> None:
        self.budget = budget
        self.size = 0

    def declared(self, size: int) -> None:
        """The body's declared length: a large one is reserved whole now, before any of it is read."""
        if size > SMALL_BODY:
            self.grow(size)

    def grow(self, size: int) -> None:
        """The body now holds `size` bytes (OverBudget when the budget cannot take the growth)."""
        if size > self.size:
            self.budget._take(size - self.size, large=size > SMALL_BODY)
            self.size = size

    def release(self) -> None:
        self.budget.held -= self.size
        self.size = 0
