"""TimingWheel placement rules, overflow wheels and hand movement (Kafka's TimingWheel)."""

from __future__ import annotations

import pytest

from kafkalab.errors import TimerError
from kafkalab.timer.task_list import TimerTask
from kafkalab.timer.wheel import WHEEL_SIZE_MAX, TimingWheel


class Due(TimerTask):
    __slots__ = ()

    def __init__(self, expiration_ms: int) -> None:
        super().__init__(0)
        self.expiration_ms = expiration_ms

    def run(self) -> None:
        pass


def wheel(tick_ms: int = 1, wheel_size: int = 20, start_ms: int = 0) -> TimingWheel:
    return TimingWheel(tick_ms, wheel_size, start_ms, [], [])


def test_interval_and_current_time_rounded_down_to_tick() -> None:
    w = wheel(tick_ms=10, wheel_size=8, start_ms=1_234)
    assert w.interval_ms == 80
    assert w.current_time_ms == 1_230


@pytest.mark.parametrize(
    "expiration_ms, level, index, bucket_expiration_ms",
    [
        (1, 0, 1, 1),  # first bucket after the hand
        (19, 0, 19, 19),  # last bucket of level 0
        (20, 1, 1, 20),  # one interval away: level 1, tick 20
        (200, 1, 10, 200),  # the source articles' first example
        (399, 1, 19, 380),
        (400, 2, 1, 400),
        (840, 2, 2, 800),  # the second example: level 2, tick 400
        (7_999, 2, 19, 7_600),
        (8_000, 3, 1, 8_000),
    ],
)
def test_placement_levels_buckets_and_expirations(
    expiration_ms: int, level: int, index: int, bucket_expiration_ms: int
) -> None:
    w = wheel()
    bucket = w.add(Due(expiration_ms))
    assert bucket is not None
    assert (bucket.level, bucket.index, bucket.expiration_ms) == (level, index, bucket_expiration_ms)


def test_due_task_is_refused() -> None:
    w = wheel(tick_ms=10, start_ms=100)
    assert w.add(Due(109)) is None  # inside the current tick [100, 110)
    assert w.add(Due(50)) is None  # in the past
    assert w.add(Due(110)) is not None


def test_overflow_wheels_are_created_lazily_with_parent_interval_as_tick() -> None:
    w = wheel()
    assert w.overflow_wheel is None
    w.add(Due(5))
    assert w.overflow_wheel is None
    w.add(Due(9_000))
    ticks = [(x.level, x.tick_ms, x.interval_ms) for x in w.levels()]
    assert ticks == [(0, 1, 20), (1, 20, 400), (2, 400, 8_000), (3, 8_000, 160_000)]


def test_bucket_is_queued_once_per_round() -> None:
    queue: list = []
    w = TimingWheel(1, 20, 0, queue, [])
    w.add(Due(5))
    w.add(Due(5))
    assert len(queue) == 1
    # After the hand passes bucket 5 and the bucket is flushed, time 25 maps to the same slot
    # with a new expiration, so it is queued again.
    _, _, bucket = queue.pop()
    bucket.flush()
    w.advance_clock(6)
    w.add(Due(25))
    assert [(e, b.index) for e, _, b in queue] == [(25, 5)]


def test_advance_clock_moves_every_level_and_never_backwards() -> None:
    w = wheel()
    w.add(Due(9_000))
    w.advance_clock(845)
    assert [x.current_time_ms for x in w.levels()] == [845, 840, 800, 0]
    w.advance_clock(100)
    assert [x.current_time_ms for x in w.levels()] == [845, 840, 800, 0]


@pytest.mark.parametrize(
    "tick_ms, wheel_size, start_ms, message",
    [
        (0, 20, 0, "tick 0 ms"),
        (1, 1, 0, "of 1 buckets"),
        (1, WHEEL_SIZE_MAX + 1, 0, "buckets"),
        (1, 20, -5, "at -5 ms"),
    ],
)
def test_bad_parameters_are_typed_errors(
    tick_ms: int, wheel_size: int, start_ms: int, message: str
) -> None:
    with pytest.raises(TimerError, match=message):
        TimingWheel(tick_ms, wheel_size, start_ms, [], [])


def test_hierarchy_depth_is_bounded() -> None:
    w = TimingWheel(1, 2, 0, [], [])
    with pytest.raises(TimerError, match="levels"):
        w.add(Due(2**60))


def test_longest_legal_delay_fits_the_smallest_hierarchy() -> None:
    from kafkalab.timer.task_list import DELAY_MS_MAX

    start_ms = 2**40 + 12_345
    w = TimingWheel(1, 2, start_ms, [], [])
    bucket = w.add(Due(start_ms + DELAY_MS_MAX))
    assert bucket is not None and bucket.level <= 53
