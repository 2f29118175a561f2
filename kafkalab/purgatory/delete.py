"""Delayed deletion: remove a segment's files ``file.delete.delay.ms`` after retention drops it.

When retention (or compaction) drops a segment, Kafka does not delete its files at once: it
renames them with a ``.deleted`` suffix, so readers that still hold the old segment can finish,
and deletes them ``file.delete.delay.ms`` later (default 60,000 ms) on a scheduler.

kafkalab models the waiting part as a delayed operation that only time completes, so it sits
on the same timing wheel as every other timeout::

    delete = DelayedDelete(60_000, lambda: segment.delete_files(), name="00000000000000000000")
    timer.add(delete)             # or purgatory.try_complete_else_watch(delete, [partition])
    ...
    timer.advance_clock(now_ms)   # at 60,000 ms past scheduling the files are removed
    delete.force_complete()       # e.g. on shutdown: delete now; the timer will not run it again

The retention code owns the file system calls; this class only decides *when*. Not thread-safe;
owned by the timer (or purgatory) it was added to.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalab.config.definitions import topic_default
from kafkalab.errors import TimerError
from kafkalab.purgatory.operation import DelayedOperation

# Kafka's file.delete.delay.ms (log.segment.delete.delay.ms at broker level) default.
FILE_DELETE_DELAY_MS_DEFAULT: int = topic_default("file.delete.delay.ms")


class DelayedDelete(DelayedOperation):
    """Runs ``delete()`` once, when ``delay_ms`` has passed or when forced.

    Not thread-safe; owned by one timer or purgatory.
    """

    __slots__ = ("_delete", "expired")

    def __init__(
        self,
        delay_ms: int,
        delete: Callable[[], object],
        *,
        name: str = "",
    ) -> None:
        if not callable(delete):
            raise TimerError(f"cannot schedule deletion {name!r}: {delete!r} is not callable")
        super().__init__(delay_ms, name)
        self._delete = delete
        self.expired = False

    def try_complete(self) -> bool:
        # No event makes files safe to delete sooner; only the delay (or force_complete) does.
        return False

    def on_complete(self) -> None:
        self._delete()

    def on_expiration(self) -> None:
        self.expired = True
