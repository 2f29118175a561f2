"""The timer benchmark's helpers: the heap baseline is a correct timer, and the counts the book
prints behave as claimed (pops ~ log2 n comparisons; wheel work independent of n)."""

from __future__ import annotations

import math

from kafkalab.bench.bench_timer import HeapTimer, Rates, heap_comparisons, measure, wheel_steps
from kafkalab.clock import ManualClock
from kafkalab.timer import Timer, TimerTask


class Log(TimerTask):
    __slots__ = ("out",)

    def __init__(self, delay_ms: int, out: list[int]) -> None:
        super().__init__(delay_ms)
        self.out = out

    def run(self) -> None:
        self.out.append(self.delay_ms)


def test_heap_baseline_fires_in_order_and_skips_cancelled() -> None:
    clock = ManualClock(0)
    heap = HeapTimer(clock)
    out: list[int] = []
    tasks = [Log(d, out) for d in (30, 10, 20, 40)]
    for task in tasks:
        heap.add(task)
    tasks[2].cancel()
    assert heap.advance_clock(35) == 3  # popped 10, 20 (cancelled) and 30
    assert out == [10, 30]


def test_heap_pop_comparisons_track_log2_n() -> None:
    for n in (1_000, 10_000):
        push, pop = heap_comparisons(n, samples=500)
        assert math.log2(n) - 1 <= pop <= math.log2(n) + 3
        assert push < 4


def test_wheel_work_per_task_does_not_grow_with_n() -> None:
    small = wheel_steps(1_000)
    large = wheel_steps(20_000)
    assert all(abs(a - b) < 0.1 for a, b in zip(small, large))


def test_measure_keeps_the_pending_count_steady() -> None:
    made: list[Timer] = []

    def make(c: ManualClock) -> Timer:
        made.append(Timer(c))
        return made[-1]

    rates = measure(make, 1_000, 2_400)
    assert isinstance(rates, Rates) and min(rates.insert_expire_ops_s, rates.insert_ops_s) > 0
    # Insert+expire keeps ~1,000 pending; cancel adds none; the insert-only phase adds 2,400.
    assert 2_800 <= made[0].size <= 3_800
