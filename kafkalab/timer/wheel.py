"""The hierarchical timing wheel: O(1) insert and cancel for millions of timeouts.

Mirrors Kafka's ``TimingWheel`` (``org.apache.kafka.server.util.timer``), after the hashed and
hierarchical timing wheels of Varghese and Lauck (1987).

One wheel is a circular array of ``wheel_size`` buckets, each covering ``tick_ms`` of time, so
the wheel spans ``interval_ms = tick_ms * wheel_size``. ``current_time_ms`` is always a multiple
of ``tick_ms`` (rounded down) and marks the bucket now under the hand. A task due at time ``t``
is placed by these rules, in order:

1. ``t < current + tick``      -> already due: refuse it (``add`` returns None; the timer runs it);
2. ``t < current + interval``  -> bucket ``(t // tick) % wheel_size``, whose expiration becomes
                                  ``(t // tick) * tick`` -- the start of that tick;
3. otherwise                   -> hand it to the *overflow wheel*, created on first need, whose
                                  tick is this wheel's whole interval (same wheel size).

Worked example (tick 1 ms, wheel size 20, clock at 0)::

    level 0: tick    1 ms, interval    20 ms  -> due 0..19 ms
    level 1: tick   20 ms, interval   400 ms  -> due 20..399 ms
    level 2: tick  400 ms, interval  8000 ms  -> due 400..7999 ms

A task due at 200 ms lands in level 1, bucket 200 // 20 % 20 = 10, bucket expiration 200.
A task due at 840 ms lands in level 2, bucket 840 // 400 % 20 = 2, bucket expiration 800.
When the timer reaches 800 ms, that bucket is flushed and the task re-inserted: now
level 1 (current 800) takes it in bucket 840 // 20 % 20 = 2 with expiration 840 -- the
task *cascades* down a level instead of waiting in a coarse bucket.

Why bucket indices can be reused: after the hand passes a bucket, that bucket's range of
``virtual ids`` (``t // tick``) rolls forward by exactly ``wheel_size``, and rule 2 only admits
tasks within one interval of ``current``, so a bucket never mixes two rounds of the wheel. A
bucket is offered to the timer's delay queue only when its expiration *changes* (it was idle),
so each bucket appears in the queue at most once per round.

Cost: placing a task walks up at most ``levels`` wheels (a small constant: 13 levels cover
2**53 ms with the defaults) and touches one bucket -- O(1) in the number of pending tasks.
Cancelling is an O(1) unlink. A binary heap of tasks pays O(log n) for both.

Not thread-safe. Owned by one ``Timer``, which alone calls ``add`` and ``advance_clock``.
"""

from __future__ import annotations

import heapq

from kafkalab.errors import TimerError
from kafkalab.timer.events import OverflowWheelCreated, TimerListener
from kafkalab.timer.task_list import TimerTask, TimerTaskList

# A wheel of more than a million buckets costs more memory than it saves; Kafka uses 20 (and 512
# in its system timer for some purgatories). The bound keeps the bucket array a sane size.
WHEEL_SIZE_MAX = 1 << 20
# The deepest wheel kafkalab will build. With tick 1 ms and size 2 (the smallest hierarchy),
# 54 levels span 2**54 ms, which covers DELAY_MS_MAX; no legal task needs more.
WHEEL_LEVELS_MAX = 54

# The delay queue: a heap of (bucket expiration ms, wheel level, bucket). Within one level no two
# queued buckets share an expiration (each covers a different tick), so (expiration, level) is
# unique and the heap never has to compare two buckets.
DelayQueue = list[tuple[int, int, TimerTaskList]]


class TimingWheel:
    """One level of the hierarchy: ``wheel_size`` buckets of ``tick_ms`` each.

    ``delay_queue`` and ``listeners`` are shared by every level of one timer.

    Not thread-safe; owned by one ``Timer``.
    """

    __slots__ = (
        "tick_ms",
        "wheel_size",
        "interval_ms",
        "current_time_ms",
        "level",
        "buckets",
        "overflow_wheel",
        "_queue",
        "_listeners",
    )

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        delay_queue: DelayQueue,
        listeners: list[TimerListener],
        *,
        level: int = 0,
    ) -> None:
        if tick_ms < 1:
            raise TimerError(f"cannot build a timing wheel with tick {tick_ms} ms: must be >= 1")
        if not 2 <= wheel_size <= WHEEL_SIZE_MAX:
            raise TimerError(
                f"cannot build a timing wheel of {wheel_size} buckets: must be in "
                f"[2, {WHEEL_SIZE_MAX}]"
            )
        if start_ms < 0:
            raise TimerError(f"cannot start a timing wheel at {start_ms} ms: must be >= 0")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self.current_time_ms = start_ms - start_ms % tick_ms
        self.level = level
        self.buckets = [TimerTaskList(level, i, listeners) for i in range(wheel_size)]
        self.overflow_wheel: TimingWheel | None = None
        self._queue = delay_queue
        self._listeners = listeners

    def add(self, task: TimerTask) -> TimerTaskList | None:
        """Place ``task`` by its ``expiration_ms``; the bucket it landed in, or None if due now.

        Rule 3 climbs to coarser wheels in a loop rather than by recursion: this is the timer's
        hot path, and a Python call per level costs more than the placement itself. The climb
        is bounded by WHEEL_LEVELS_MAX, enforced where overflow wheels are created.
        """
        expiration_ms = task.expiration_ms
        wheel = self
        while True:
            current_ms = wheel.current_time_ms
            tick_ms = wheel.tick_ms
            if expiration_ms < current_ms + tick_ms:
                return None
            if expiration_ms < current_ms + wheel.interval_ms:
                virtual_id = expiration_ms // tick_ms
                bucket = wheel.buckets[virtual_id % wheel.wheel_size]
                bucket.add(task)
                bucket_expiration_ms = virtual_id * tick_ms
                if bucket.expiration_ms != bucket_expiration_ms:
                    # The bucket was idle: queue it for its new tick.
                    bucket.expiration_ms = bucket_expiration_ms
                    heapq.heappush(self._queue, (bucket_expiration_ms, wheel.level, bucket))
                return bucket
            overflow = wheel.overflow_wheel
            wheel = overflow if overflow is not None else wheel._add_overflow_wheel()

    def advance_clock(self, time_ms: int) -> None:
        """Move the hand to the tick containing ``time_ms`` on this and every coarser wheel.

        Time never moves backwards: a ``time_ms`` inside the current tick changes nothing.
        """
        wheel: TimingWheel | None = self
        while wheel is not None:
            if time_ms < wheel.current_time_ms + wheel.tick_ms:
                # A coarser wheel's tick is longer, so it cannot move either.
                return
            wheel.current_time_ms = time_ms - time_ms % wheel.tick_ms
            wheel = wheel.overflow_wheel

    def levels(self) -> list[TimingWheel]:
        """This wheel and every overflow wheel above it, finest first."""
        wheels: list[TimingWheel] = []
        wheel: TimingWheel | None = self
        while wheel is not None:
            wheels.append(wheel)
            wheel = wheel.overflow_wheel
        return wheels

    def _add_overflow_wheel(self) -> TimingWheel:
        if self.level + 1 >= WHEEL_LEVELS_MAX:
            raise TimerError(
                f"cannot add a timing wheel at level {self.level + 1}: the limit is "
                f"{WHEEL_LEVELS_MAX} levels"
            )
        overflow = TimingWheel(
            self.interval_ms,
            self.wheel_size,
            self.current_time_ms,
            self._queue,
            self._listeners,
            level=self.level + 1,
        )
        self.overflow_wheel = overflow
        if self._listeners:
            event = OverflowWheelCreated(
                overflow.level,
                overflow.tick_ms,
                overflow.wheel_size,
                overflow.interval_ms,
                overflow.current_time_ms,
            )
            for listener in self._listeners:
                listener(event)
        return overflow

    def __repr__(self) -> str:
        return (
            f"TimingWheel(level={self.level}, tick_ms={self.tick_ms}, "
            f"wheel_size={self.wheel_size}, interval_ms={self.interval_ms}, "
            f"current_time_ms={self.current_time_ms})"
        )
