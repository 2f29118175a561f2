"""The timer benchmark's helpers: the heap baseline is a correct timer, and the counts the book
prints behave as claimed (pops ~ log2 n comparisons; wheel work independent of n)."""

from __future__ import annotations

import math

import random

from kafkalab.bench.bench_timer import (
    CASCADE_PERIOD_MS,
    HORIZON_MS,
    HeapTimer,
    Rates,
    heap_comparisons,
    measure,
    residual_delay_ms,
    steady_state_flushes,
    wheel_steps,
)
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
    # Insert+expire keeps ~1,000 pending (Little's law with the mean delay, not the longest:
    # stepping by the longest would let the count sag towards 500); cancel adds none; the
    # insert-only phase adds 2,400.
    assert 1_000 - 150 <= made[0].size - 2_400 <= 1_000 + 150


def test_prefill_draws_steady_state_remaining_delays() -> None:
    # For delays uniform in [0, H] the remaining delay of a pending timer averages
    # E[d^2] / (2 E[d]) = H / 3, and a fresh timer's delay averages H / 2.
    rng = random.Random(5)
    samples = [residual_delay_ms(rng) for _ in range(20_000)]
    assert all(1 <= s <= HORIZON_MS for s in samples)
    mean = sum(samples) / len(samples)
    assert abs(mean - HORIZON_MS / 3) < 0.02 * HORIZON_MS
    short = sum(s < HORIZON_MS / 2 for s in samples) / len(samples)
    assert abs(short - 0.75) < 0.02  # 1 - (1 - 1/2)^2 of them are due within half the horizon


def test_steady_state_flushes_fall_with_n_while_cascades_do_not() -> None:
    sparse_flushes, sparse_cascades = steady_state_flushes(1_000)
    dense_flushes, dense_cascades = steady_state_flushes(10_000)
    # Uniform delays to 30 s: about three quarters start on level 3, a quarter on level 2, so a
    # timer cascades at most about 0.73 * 3 + 0.25 * 2 ~ 2.7 times (a little less: one due early
    # in a coarse bucket skips a level on the way down) -- whatever n is.
    assert 2.4 < sparse_cascades < 2.8 and abs(sparse_cascades - dense_cascades) < 0.05
    # Sparse: a level-1 bucket (20 ms) holds ~1.3 timers and a level-0 bucket one, so a timer
    # pays for more than one flush of its own; ten times the timers share far more.
    assert sparse_flushes > 1.2 and dense_flushes < 0.6 * sparse_flushes


def test_cascade_period_is_the_tick_of_the_coarsest_level_the_delays_reach() -> None:
    timer = Timer(ManualClock(0))
    timer.add(Log(HORIZON_MS, []))
    (bucket,) = [b for wheel in timer.wheel.levels() for b in wheel.buckets if b.task_count]
    assert timer.wheel.levels()[bucket.level].tick_ms == CASCADE_PERIOD_MS
