"""Time as a parameter: the only module in kafkalab that reads the real clock.

Everything in the core takes a :class:`Clock` (or a plain ``now_ms``) instead of calling
``time.time()``. Simulations, tests and notebooks use :class:`ManualClock`, which moves only
when told to, so every run replays exactly; the network server uses :class:`SystemClock`.
This mirrors Kafka's ``org.apache.kafka.common.utils.Time`` and its ``MockTime``.

Example::

    >>> clock = ManualClock(now_ms=1_000)
    >>> clock.advance_ms(250)
    >>> clock.milliseconds()
    1250
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock and monotonic time in milliseconds and nanoseconds."""

    def milliseconds(self) -> int:
        """Wall-clock time: milliseconds since the Unix epoch (used for record timestamps)."""
        ...

    def nanoseconds(self) -> int:
        """Monotonic time in nanoseconds (used for measuring intervals)."""
        ...


class SystemClock:
    """The real clock. Thread-safe; stateless."""

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return time.monotonic_ns()


class ManualClock:
    """A clock that moves only when told to. Not thread-safe; owned by one simulation or test.

    Both readings advance together: ``advance_ms(5)`` moves wall-clock time by 5 ms and
    monotonic time by 5,000,000 ns. Time never goes backwards.
    """

    def __init__(self, now_ms: int = 0) -> None:
        if now_ms < 0:
            raise ValueError(f"ManualClock start time must be >= 0 ms, got {now_ms}")
        self._now_ns = now_ms * 1_000_000

    def milliseconds(self) -> int:
        return self._now_ns // 1_000_000

    def nanoseconds(self) -> int:
        return self._now_ns

    def advance_ms(self, delta_ms: int) -> None:
        """Move time forward by ``delta_ms`` (>= 0) milliseconds."""
        if delta_ms < 0:
            raise ValueError(f"cannot move a ManualClock backwards by {delta_ms} ms")
        self._now_ns += delta_ms * 1_000_000

    def set_ms(self, now_ms: int) -> None:
        """Jump to ``now_ms``, which must not be earlier than the current time."""
        if now_ms * 1_000_000 < self._now_ns:
            raise ValueError(
                f"cannot move a ManualClock back from {self.milliseconds()} ms to {now_ms} ms"
            )
        self._now_ns = now_ms * 1_000_000
