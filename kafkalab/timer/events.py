"""Trace events the timer emits for the book's timing-wheel widget and for curious learners.

The timer builds an event only when somebody listens: every emitting site first checks that the
listener list is non-empty, so a broker with no listeners pays one truth test per operation and
allocates nothing. A listener is any callable taking one event; register it with
``Timer.add_listener``.

One timer operation produces a short, ordered burst of events. Worked example (tick 1 ms,
wheel size 20, clock at 0 ms, one task due at 200 ms)::

    timer.add(task)        -> OverflowWheelCreated(level=1, tick_ms=20, interval_ms=400, ...)
                              TaskScheduled(level=1, bucket_index=10, bucket_expiration_ms=200)
    timer.advance_clock(200) -> ClockAdvanced(to_ms=200, current_ms_by_level=(200, 200))
                                BucketFlushed(level=1, bucket_index=10, expiration_ms=200, ...)
                                TaskExpired(expiration_ms=200, now_ms=200)

A widget replays these events to redraw the wheels (see ``kafkalab.viz.timing_wheel``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TaskScheduled:
    """A task added by a caller was placed in a bucket of the wheel at ``level`` (0 = finest)."""

    task_key: int
    name: str
    expiration_ms: int
    level: int
    bucket_index: int
    bucket_expiration_ms: int


@dataclass(frozen=True, slots=True)
class TaskCascaded:
    """A task from a flushed bucket of wheel ``from_level`` was re-inserted into a finer bucket."""

    task_key: int
    name: str
    expiration_ms: int
    from_level: int
    level: int
    bucket_index: int
    bucket_expiration_ms: int


@dataclass(frozen=True, slots=True)
class TaskExpired:
    """A task reached its expiration and was run at ``now_ms`` (the wheel's current time)."""

    task_key: int
    name: str
    expiration_ms: int
    now_ms: int


@dataclass(frozen=True, slots=True)
class TaskCancelled:
    """A pending task was unlinked from its bucket; it will never run."""

    task_key: int
    name: str
    expiration_ms: int
    level: int
    bucket_index: int


@dataclass(frozen=True, slots=True)
class ClockAdvanced:
    """The timer moved its wheels to ``to_ms``; ``current_ms_by_level[i]`` is wheel i's time."""

    to_ms: int
    current_ms_by_level: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BucketFlushed:
    """An expired bucket was emptied; its ``task_count`` tasks are re-inserted or run next."""

    level: int
    bucket_index: int
    expiration_ms: int
    task_count: int


@dataclass(frozen=True, slots=True)
class OverflowWheelCreated:
    """A coarser wheel was created on demand; its tick is the finer wheel's interval."""

    level: int
    tick_ms: int
    wheel_size: int
    interval_ms: int
    current_ms: int


TimerEvent = (
    TaskScheduled
    | TaskCascaded
    | TaskExpired
    | TaskCancelled
    | ClockAdvanced
    | BucketFlushed
    | OverflowWheelCreated
)
TimerListener = Callable[[TimerEvent], None]
