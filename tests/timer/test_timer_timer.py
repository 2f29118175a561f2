"""Timer: the delay queue of buckets, cascades, running, cancelling and trace events."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import TimerError
from kafkalab.timer import Timer, TimerTask
from kafkalab.timer.events import (
    BucketFlushed,
    ClockAdvanced,
    OverflowWheelCreated,
    TaskCancelled,
    TaskCascaded,
    TaskExpired,
    TaskScheduled,
)


class Recorder(TimerTask):
    """A task that appends (name, wheel time at run) to a shared log when it runs."""

    __slots__ = ("log", "timer")

    def __init__(self, delay_ms: int, name: str, log: list[tuple[str, int]], timer: Timer):
        super().__init__(delay_ms, name)
        self.log = log
        self.timer = timer

    def run(self) -> None:
        self.log.append((self.name, self.timer.current_time_ms))


def setup(start_ms: int = 0, **kwargs: int) -> tuple[ManualClock, Timer, list]:
    clock = ManualClock(start_ms)
    return clock, Timer(clock, **kwargs), []


def test_the_200_ms_and_840_ms_example_takes_three_advances_none_empty(
    invariants: Callable[[Timer], None],
) -> None:
    clock, timer, log = setup()
    events: list = []
    timer.add_listener(events.append)
    timer.add(Recorder(200, "a", log, timer))
    timer.add(Recorder(840, "b", log, timer))
    invariants(timer)
    assert [e for e, _, _ in sorted(timer._queue)] == [200, 800]

    clock.set_ms(10_000)
    flushed = timer.advance_clock(10_000)

    assert log == [("a", 200), ("b", 840)]
    advances = [e.to_ms for e in events if isinstance(e, ClockAdvanced)]
    assert advances == [200, 800, 840]
    assert flushed == 3
    flushes = [e for e in events if isinstance(e, BucketFlushed)]
    assert [(f.level, f.bucket_index, f.task_count) for f in flushes] == [(1, 10, 1), (2, 2, 1), (1, 2, 1)]
    assert [
        (c.from_level, c.level, c.bucket_index, c.bucket_expiration_ms)
        for c in events
        if isinstance(c, TaskCascaded)
    ] == [(2, 1, 2, 840)]
    assert timer.size == 0 and timer.next_expiration_ms() is None


def test_event_sequence_for_one_task() -> None:
    clock, timer, log = setup()
    events: list = []
    timer.add_listener(events.append)
    task = Recorder(30, "x", log, timer)
    timer.add(task)
    timer.advance_clock(30)
    key = id(task)
    assert events == [
        OverflowWheelCreated(1, 20, 20, 400, 0),
        TaskScheduled(key, "x", 30, 1, 1, 20),
        ClockAdvanced(20, (20, 20)),
        BucketFlushed(1, 1, 20, 1),
        TaskCascaded(key, "x", 30, 1, 0, 10, 30),
        ClockAdvanced(30, (30, 20)),
        BucketFlushed(0, 10, 30, 1),
        TaskExpired(key, "x", 30, 30),
    ]


def test_advance_before_expiration_runs_nothing() -> None:
    clock, timer, log = setup()
    timer.add(Recorder(50, "x", log, timer))
    assert timer.advance_clock(49) == 1  # the level-1 bucket at 40 cascades
    assert log == []
    assert timer.advance_clock(50) == 1
    assert log == [("x", 50)]


def test_zero_delay_runs_at_once_when_the_hand_is_on_the_clock() -> None:
    clock, timer, log = setup(start_ms=100)
    assert timer.add(Recorder(0, "now", log, timer)) is False
    assert log == [("now", 100)]


def test_added_while_wheel_lags_the_clock_fires_on_the_next_advance() -> None:
    clock, timer, log = setup()
    clock.set_ms(1_000)  # nobody advanced the timer: its hand is still at 0
    timer.add(Recorder(5, "late-hand", log, timer))
    assert log == []
    timer.advance_clock(1_004)
    assert log == []
    timer.advance_clock(1_005)
    assert log == [("late-hand", 1_005)]


def test_cancelled_task_never_runs_and_leaves_size() -> None:
    clock, timer, log = setup()
    keep = Recorder(10, "keep", log, timer)
    drop = Recorder(10, "drop", log, timer)
    timer.add(keep)
    timer.add(drop)
    assert timer.size == 2
    drop.cancel()
    assert timer.size == 1
    timer.advance_clock(100)
    assert log == [("keep", 10)]
    assert timer.add(drop) is False  # a cancelled task stays cancelled


def test_readding_a_pending_task_reschedules_it(invariants: Callable[[Timer], None]) -> None:
    clock, timer, log = setup()
    task = Recorder(10, "x", log, timer)
    timer.add(task)
    clock.set_ms(5)
    timer.add(task)
    invariants(timer)
    assert timer.size == 1 and task.expiration_ms == 15
    timer.advance_clock(10)
    assert log == []
    timer.advance_clock(15)
    assert log == [("x", 15)]


@pytest.mark.parametrize("traced", [False, True])
def test_task_cancelling_a_sibling_in_the_same_flush(traced: bool) -> None:
    clock, timer, log = setup()
    events: list = []
    if traced:
        timer.add_listener(events.append)

    class Canceller(TimerTask):
        __slots__ = ("victim",)

        def run(self) -> None:
            log.append(("canceller", timer.current_time_ms))
            self.victim.cancel()

    victim = Recorder(10, "victim", log, timer)
    canceller = Canceller(10)
    canceller.victim = victim
    timer.add(canceller)
    timer.add(victim)
    timer.advance_clock(10)
    assert log == [("canceller", 10)]
    assert timer.size == 0
    if traced:
        # The victim was still linked in the bucket being flushed, so its cancel is traced there.
        cancelled = [e for e in events if isinstance(e, TaskCancelled)]
        assert [(e.task_key, e.level) for e in cancelled] == [(id(victim), 0)]
        assert not any(isinstance(e, TaskExpired) and e.task_key == id(victim) for e in events)


@pytest.mark.parametrize("traced", [False, True])
def test_task_that_raises_leaves_its_bucket_mates_for_the_next_advance(
    traced: bool, invariants: Callable[[Timer], None]
) -> None:
    # Regression: the flush used to detach the whole bucket before running anything, so the
    # tasks after a raising one were silently dropped -- never run, never counted.
    clock, timer, log = setup()
    if traced:
        timer.add_listener(lambda event: None)

    class Failing(TimerTask):
        __slots__ = ()

        def run(self) -> None:
            raise RuntimeError("request handler failed")

    timer.add(Recorder(10, "before", log, timer))
    timer.add(Failing(10))
    timer.add(Recorder(10, "after", log, timer))
    with pytest.raises(RuntimeError, match="handler failed"):
        timer.advance_clock(10)
    assert log == [("before", 10)]
    assert timer.size == 1 and timer.next_expiration_ms() == 10
    invariants(timer)
    timer.advance_clock(10)
    assert log == [("before", 10), ("after", 10)]
    assert timer.size == 0 and timer.next_expiration_ms() is None


def test_task_scheduling_another_from_run() -> None:
    clock, timer, log = setup()

    class Chain(TimerTask):
        __slots__ = ("left",)

        def run(self) -> None:
            log.append((self.name, timer.current_time_ms))
            if self.left:
                nxt = Chain(7, f"hop{self.left - 1}")
                nxt.left = self.left - 1
                # Expirations are stamped from the clock, which the test keeps in step.
                timer.add(nxt)

    first = Chain(7, "hop3")
    first.left = 3
    timer.add(first)
    for now in range(1, 40):
        clock.set_ms(now)
        timer.advance_clock(now)
    assert log == [("hop3", 7), ("hop2", 14), ("hop1", 21), ("hop0", 28)]


def test_coarse_tick_fires_at_the_start_of_the_tick() -> None:
    clock, timer, log = setup(tick_ms=10, wheel_size=8)
    timer.add(Recorder(25, "x", log, timer))
    timer.advance_clock(19)
    assert log == []
    timer.advance_clock(20)
    assert log == [("x", 20)]  # Kafka's rule: due once expiration < current + tick


def test_queue_holds_buckets_not_tasks() -> None:
    clock, timer, log = setup()
    for i in range(10_000):
        timer.add(Recorder(1 + i % 19, f"t{i}", log, timer))
    assert timer.size == 10_000
    assert timer.queued_bucket_count() == 19


def test_listener_unsubscribes_and_must_be_callable() -> None:
    clock, timer, log = setup()
    events: list = []
    unsubscribe = timer.add_listener(events.append)
    unsubscribe()
    timer.add(Recorder(5, "x", log, timer))
    assert events == []
    with pytest.raises(TimerError, match="not callable"):
        timer.add_listener(42)  # type: ignore[arg-type]


def test_no_events_are_built_when_nobody_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalab.timer.timer as timer_module

    def boom(*args: object) -> None:
        raise AssertionError("an event was built with no listener")

    for name in ("TaskScheduled", "TaskCascaded", "TaskExpired", "BucketFlushed", "ClockAdvanced"):
        monkeypatch.setattr(timer_module, name, boom)
    clock, timer, log = setup()
    for delay in (0, 3, 30, 900, 9_000):
        timer.add(Recorder(delay, f"d{delay}", log, timer))
    timer.advance_clock(20_000)
    assert len(log) == 5


def test_repr_mentions_levels_and_size() -> None:
    clock, timer, log = setup()
    timer.add(Recorder(500, "x", log, timer))
    assert "levels=3" in repr(timer) and "size=1" in repr(timer)


def test_advance_to_a_fractional_time_is_a_typed_error() -> None:
    clock, timer, log = setup()
    with pytest.raises(TimerError, match="not whole milliseconds"):
        timer.advance_clock(1.5)  # type: ignore[arg-type]
