"""The timer: a hierarchical timing wheel advanced through a delay queue of buckets.

Mirrors Kafka's ``SystemTimer`` (``org.apache.kafka.server.util.timer``). The wheel alone only
knows where tasks are; something must decide *when* to move its hand. A naive timer would tick
every millisecond and look at each bucket, mostly finding nothing. Kafka instead keeps a
*delay queue of buckets* -- a priority queue holding only the non-empty buckets, ordered by
their expiration -- and jumps the clock straight to the earliest one:

    advance_clock(now_ms):
        while the earliest bucket in the delay queue has expiration <= now_ms:
            pop it; move the wheels' hands to its expiration;
            flush it: re-add each task -- it lands in a finer bucket (cascade) or is due and runs.

The heap holds buckets, not tasks: at most ``wheel_size`` per level, a few hundred at most, so
the O(log buckets) heap work is a small constant however many millions of tasks are pending.

Worked example (tick 1 ms, wheel size 20, clock at 0, tasks due at 200 ms and 840 ms)::

    delay queue: [200 (level 1, bucket 10), 800 (level 2, bucket 2)]
    advance_clock(10_000):
        pop 200 -> hands to 200 -> flush: the 200 ms task is due -> runs
        pop 800 -> hands to 800 -> flush: the 840 ms task cascades to level 1, bucket 2 (840)
        pop 840 -> hands to 840 -> flush: the 840 ms task is due -> runs
    three advances, none of them empty; a per-millisecond ticker would have stepped 840 times.

Time comes from an injected ``Clock``: ``add`` stamps ``expiration_ms = delay_ms + now``, using
the clock's monotonic milliseconds (``nanoseconds() // 1_000_000``), like Kafka's
``hiResClockMs``; ``advance_clock`` takes a time on that same scale. Tests and simulations use a
``ManualClock``; the asyncio server drives the timer through ``kafkalab.timer.driver``.

Tasks run synchronously inside ``add`` (when already due) or ``advance_clock`` (Kafka hands them
to an executor thread). A task that raises propagates its exception to the caller; the timer's
structures are consistent at that point -- a bucket flushes one task at a time, and one cut
short goes back into the delay queue -- and the remaining due tasks run at the next advance.

Not thread-safe; owned by one broker or simulation, and tasks must not call ``advance_clock``.
"""

from __future__ import annotations

from heapq import heappop, heappush
from collections.abc import Callable

from kafkalab.clock import Clock
from kafkalab.errors import TimerError
from kafkalab.timer.events import (
    BucketFlushed,
    ClockAdvanced,
    TaskCascaded,
    TaskExpired,
    TaskScheduled,
    TimerEvent,
    TimerListener,
)
from kafkalab.timer.task_list import TimerTask, TimerTaskList
from kafkalab.timer.wheel import DelayQueue, TimingWheel

# Kafka's SystemTimer defaults: 1 ms ticks, 20 buckets per wheel.
TICK_MS_DEFAULT = 1
WHEEL_SIZE_DEFAULT = 20
# Bounds the buckets one advance_clock call may flush, so a caller that jumps the clock far ahead
# of a huge backlog gets control back; the rest are flushed by the next call. Ten million buckets
# is far beyond any real backlog (a bucket holds every task due within one tick).
FLUSHES_PER_ADVANCE_MAX = 10_000_000


def monotonic_ms(clock: Clock) -> int:
    """The clock's monotonic time in whole milliseconds (Kafka's ``Time.hiResClockMs``)."""
    return clock.nanoseconds() // 1_000_000


class Timer:
    """Schedules ``TimerTask`` objects on a hierarchical timing wheel driven by a clock.

    ``add(task)`` -> O(1); ``task.cancel()`` -> O(1); ``advance_clock(now_ms)`` -> runs every task
    due by ``now_ms``. ``size`` counts pending tasks.

    Not thread-safe; owned by one broker or simulation.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        tick_ms: int = TICK_MS_DEFAULT,
        wheel_size: int = WHEEL_SIZE_DEFAULT,
        start_ms: int | None = None,
    ) -> None:
        self._clock = clock
        self._queue: DelayQueue = []
        self._listeners: list[TimerListener] = []
        start = monotonic_ms(clock) if start_ms is None else start_ms
        self._wheel = TimingWheel(tick_ms, wheel_size, start, self._queue, self._listeners)

    # -- adding and running tasks ------------------------------------------------------------

    def add(self, task: TimerTask) -> bool:
        """Schedule ``task`` to run ``task.delay_ms`` from now; False if it ran (or was dropped)
        at once because it was already due (or cancelled)."""
        if task._bucket is not None:
            # Re-adding a pending task reschedules it (Kafka replaces its TimerTaskEntry).
            task._bucket.remove(task)
        if task.cancelled:
            return False
        task.expiration_ms = task.delay_ms + self._clock.nanoseconds() // 1_000_000
        bucket = self._wheel.add(task)
        if bucket is None:
            self._run(task)
            return False
        if self._listeners:
            self._emit(
                TaskScheduled(
                    id(task),
                    task.label(),
                    task.expiration_ms,
                    bucket.level,
                    bucket.index,
                    bucket.expiration_ms,
                )
            )
        return True

    def advance_clock(self, now_ms: int | None = None) -> int:
        """Flush every bucket due by ``now_ms`` (default: the clock's time); tasks that are due
        run, the rest cascade into finer buckets. Returns how many buckets were flushed."""
        if now_ms is None:
            now_ms = monotonic_ms(self._clock)
        elif not isinstance(now_ms, int):
            raise TimerError(f"cannot advance the timer to {now_ms!r}: not whole milliseconds")
        queue = self._queue
        wheel = self._wheel
        wheel_add = wheel.add
        listeners = self._listeners
        flushed = 0
        bucket: TimerTaskList | None = None
        try:
            while queue and queue[0][0] <= now_ms and flushed < FLUSHES_PER_ADVANCE_MAX:
                expiration_ms, _, bucket = heappop(queue)
                wheel.advance_clock(expiration_ms)
                flushed += 1
                if listeners:
                    self._flush_traced(bucket)
                # The untraced flush, inlined: with sparse timeouts a task pays for about one
                # and a half flushes of its own, so this loop is as hot as add().
                elif bucket.task_count == 1:
                    # Sparse timeouts: most buckets hold one task; skip the generator.
                    task = bucket.flush_single()
                    if wheel_add(task) is None:
                        task.run()
                else:
                    for task in bucket.flush():
                        if wheel_add(task) is None:
                            task.run()
        except BaseException:
            # A task raised: the tasks it left behind in its bucket must still run, so that
            # bucket goes back into the delay queue; the exception is the caller's.
            if bucket is not None:
                self._requeue(bucket)
            raise
        return flushed

    def _flush_traced(self, bucket: TimerTaskList) -> None:
        """The flush of ``advance_clock``, emitting an event for it and for every task's fate."""
        level, expiration_ms = bucket.level, bucket.expiration_ms
        self._emit_advance(expiration_ms)
        self._emit(BucketFlushed(level, bucket.index, expiration_ms, bucket.task_count))
        wheel_add = self._wheel.add
        for task in bucket.flush():
            landed = wheel_add(task)
            if landed is None:
                now_ms = self.current_time_ms
                self._emit(TaskExpired(id(task), task.label(), task.expiration_ms, now_ms))
                task.run()
            else:
                self._emit(
                    TaskCascaded(
                        id(task),
                        task.label(),
                        task.expiration_ms,
                        level,
                        landed.level,
                        landed.index,
                        landed.expiration_ms,
                    )
                )

    def _requeue(self, bucket: TimerTaskList) -> None:
        """Put a bucket whose flush was cut short back into the delay queue (or mark it idle)."""
        if bucket.task_count:
            heappush(self._queue, (bucket.expiration_ms, bucket.level, bucket))
        else:
            bucket.expiration_ms = -1

    def _run(self, task: TimerTask) -> None:
        if task.cancelled:
            return
        if self._listeners:
            self._emit(
                TaskExpired(id(task), task.label(), task.expiration_ms, self.current_time_ms)
            )
        task.run()

    # -- inspection --------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Pending tasks (Kafka's ``Timer.size``).

        Summed over the buckets -- O(levels × wheel_size), a few hundred additions -- rather than
        kept in a counter, because cancellation happens on the task, which does not know its
        timer; the insert and cancel paths stay free of bookkeeping.
        """
        return sum(bucket.task_count for wheel in self._wheel.levels() for bucket in wheel.buckets)

    @property
    def current_time_ms(self) -> int:
        """The finest wheel's current time: a multiple of ``tick_ms``, at most the clock."""
        return self._wheel.current_time_ms

    @property
    def wheel(self) -> TimingWheel:
        """The finest wheel (level 0); ``wheel.levels()`` lists the whole hierarchy."""
        return self._wheel

    def now_ms(self) -> int:
        """The clock's monotonic milliseconds, the scale of ``advance_clock`` and expirations."""
        return monotonic_ms(self._clock)

    def next_expiration_ms(self) -> int | None:
        """Expiration of the earliest queued bucket, or None when nothing is pending.

        The bucket may have become empty by cancellation; advancing to it is then a no-op flush,
        exactly as in Kafka.
        """
        return self._queue[0][0] if self._queue else None

    def queued_bucket_count(self) -> int:
        """Buckets currently in the delay queue (never more than wheel_size per level)."""
        return len(self._queue)

    def check_invariants(self) -> None:
        """Raise AssertionError if the wheels are inconsistent (for tests and fault campaigns).

        Every pending task sits in the bucket its expiration maps to at its level, within one
        interval of that wheel's hand; every non-empty bucket is queued exactly once, at its
        expiration; ``size`` counts the tasks. Explicit checks, so ``python -O`` keeps them.
        """
        queued = {id(bucket): expiration for expiration, _, bucket in self._queue}
        if len(queued) != len(self._queue):
            raise AssertionError("a bucket is in the delay queue twice")
        for wheel in self._wheel.levels():
            for bucket in wheel.buckets:
                if bucket.task_count and queued.get(id(bucket)) != bucket.expiration_ms:
                    raise AssertionError(f"{bucket!r} holds tasks but is not queued")
                for task in bucket.tasks():
                    _check_placement(wheel, bucket, task)

    # -- trace events ------------------------------------------------------------------------

    def add_listener(self, listener: TimerListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every trace event; returns a function that unsubscribes."""
        if not callable(listener):
            raise TimerError(f"cannot add timer listener {listener!r}: it is not callable")
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _emit(self, event: TimerEvent) -> None:
        for listener in self._listeners:
            listener(event)

    def _emit_advance(self, to_ms: int) -> None:
        levels = tuple(wheel.current_time_ms for wheel in self._wheel.levels())
        self._emit(ClockAdvanced(to_ms, levels))

    def __repr__(self) -> str:
        wheel = self._wheel
        return (
            f"Timer(tick_ms={wheel.tick_ms}, wheel_size={wheel.wheel_size}, "
            f"levels={len(wheel.levels())}, current_time_ms={wheel.current_time_ms}, "
            f"size={self.size})"
        )


def _check_placement(wheel: TimingWheel, bucket: TimerTaskList, task: TimerTask) -> None:
    virtual_id = task.expiration_ms // wheel.tick_ms
    if (
        bucket.expiration_ms != virtual_id * wheel.tick_ms
        or bucket.index != virtual_id % wheel.wheel_size
        or task.expiration_ms >= wheel.current_time_ms + wheel.interval_ms
    ):
        raise AssertionError(f"{task!r} is misplaced in {bucket!r} of {wheel!r}")
