"""Driving a timer in real time without doing I/O: "how long may I sleep?"

The timer itself never sleeps or reads the clock on its own schedule (STYLE.md rule 1). The
asyncio server owns the event loop, so the timer only tells it what to do next::

    driver = TimerDriver(timer)
    while serving:
        wait_ms = driver.poll()           # runs every due task, returns the wait until the next
        await asyncio.sleep(wait_ms / 1000)   # or wake early when a request adds a task

``poll`` advances the timer to the clock's current time and returns the milliseconds until the
earliest non-empty bucket, capped at ``max_wait_ms``. The cap plays the part of Kafka's
expiration reaper, which calls ``advanceClock(200)`` in a loop: even if the server forgets to
wake the driver after adding an earlier task, no task waits more than ``max_wait_ms`` past its
expiration.

Worked example: the clock reads 1,000 ms and the earliest bucket expires at 1,030 ms;
``poll()`` flushes nothing and returns 30. At 1,030 ms ``poll()`` runs that bucket's tasks and,
with nothing else pending, returns 200 (the cap).

Not thread-safe; owned by the loop that drives the timer.
"""

from __future__ import annotations

from kafkalab.errors import TimerError
from kafkalab.timer.timer import Timer

# Kafka's ExpiredOperationReaper polls the timer with a 200 ms timeout.
POLL_WAIT_MS_MAX = 200


class TimerDriver:
    """Advances a ``Timer`` to its clock's time and reports how long the caller may wait.

    Not thread-safe; owned by one event loop.
    """

    def __init__(self, timer: Timer, *, max_wait_ms: int = POLL_WAIT_MS_MAX) -> None:
        if max_wait_ms < 1:
            raise TimerError(f"cannot drive a timer with max wait {max_wait_ms} ms: must be >= 1")
        self.timer = timer
        self.max_wait_ms = max_wait_ms

    def poll(self) -> int:
        """Run every due task; return the milliseconds to wait before the next ``poll``."""
        now_ms = self.timer.now_ms()
        self.timer.advance_clock(now_ms)
        return self.wait_ms(now_ms)

    def wait_ms(self, now_ms: int) -> int:
        """Milliseconds from ``now_ms`` to the next due bucket, within [0, max_wait_ms]."""
        next_ms = self.timer.next_expiration_ms()
        if next_ms is None:
            return self.max_wait_ms
        return max(0, min(self.max_wait_ms, next_ms - now_ms))
