"""Run a callback once after a delay: the small scheduling interface other subsystems use.

Kafka's log manager hands work such as "delete these segment files in 60 s"
(``file.delete.delay.ms``) to a ``KafkaScheduler``. kafkalab backs the same idea with its
timing wheel, so a retention pass that schedules ten thousand deletions costs ten thousand O(1)
inserts::

    scheduler = Scheduler(timer)
    handle = scheduler.schedule(60_000, lambda: segment.delete(), name="delete-file")
    ...
    handle.cancel()          # O(1); the callback will never run
    timer.advance_clock(now_ms)  # runs every callback that is due

A callback runs at most once. Not thread-safe; owned by the same owner as its ``Timer``.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalab.errors import TimerError
from kafkalab.timer.task_list import TimerTask
from kafkalab.timer.timer import Timer


class ScheduledTask(TimerTask):
    """A callback wrapped as a timer task; the handle ``Scheduler.schedule`` returns.

    Not thread-safe; owned by the scheduler's timer.
    """

    __slots__ = ("_callback", "done")

    def __init__(self, delay_ms: int, callback: Callable[[], object], name: str = "") -> None:
        super().__init__(delay_ms, name)
        self._callback = callback
        self.done = False

    def run(self) -> None:
        # The timer never runs a task twice, but a handle may be run by hand too (tests, forced
        # shutdown); the flag keeps the callback to a single call either way.
        if self.done or self.cancelled:
            return
        self.done = True
        self._callback()


class Scheduler:
    """``schedule(delay_ms, callback)`` -> a cancellable handle, backed by a ``Timer``.

    Not thread-safe; owned by the same owner as its timer.
    """

    def __init__(self, timer: Timer) -> None:
        self.timer = timer

    def schedule(
        self, delay_ms: int, callback: Callable[[], object], *, name: str = ""
    ) -> ScheduledTask:
        """Run ``callback()`` once, ``delay_ms`` from now (at once if ``delay_ms`` is 0)."""
        if not callable(callback):
            raise TimerError(f"cannot schedule {name or 'task'!r}: {callback!r} is not callable")
        task = ScheduledTask(delay_ms, callback, name)
        self.timer.add(task)
        return task
