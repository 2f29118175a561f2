"""Scheduler (cancellable one-shot callbacks) and TimerDriver (how long may the loop sleep)."""

from __future__ import annotations

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import TimerError
from kafkalab.timer import Scheduler, Timer, TimerDriver
from kafkalab.timer.driver import POLL_WAIT_MS_MAX


def test_schedule_runs_once_at_its_time() -> None:
    clock = ManualClock(0)
    scheduler = Scheduler(Timer(clock))
    calls: list[int] = []
    handle = scheduler.schedule(250, lambda: calls.append(clock.milliseconds()), name="x")
    assert handle.pending and not handle.done
    for now in (100, 249, 250, 400):
        clock.set_ms(now)
        scheduler.timer.advance_clock(now)
    assert calls == [250] and handle.done and not handle.pending
    handle.run()  # running a finished handle by hand does nothing
    assert calls == [250]


def test_cancel_handle() -> None:
    clock = ManualClock(0)
    scheduler = Scheduler(Timer(clock))
    calls: list[int] = []
    handle = scheduler.schedule(10, lambda: calls.append(1))
    assert handle.cancel() is True
    scheduler.timer.advance_clock(100)
    assert calls == [] and not handle.done


def test_zero_delay_runs_immediately() -> None:
    scheduler = Scheduler(Timer(ManualClock(7)))
    calls: list[int] = []
    scheduler.schedule(0, lambda: calls.append(1))
    assert calls == [1]


@pytest.mark.parametrize("delay_ms", [-1])
def test_negative_delay_rejected(delay_ms: int) -> None:
    scheduler = Scheduler(Timer(ManualClock(0)))
    with pytest.raises(TimerError, match="delay -1 ms"):
        scheduler.schedule(delay_ms, lambda: None)


def test_not_callable_rejected() -> None:
    scheduler = Scheduler(Timer(ManualClock(0)))
    with pytest.raises(TimerError, match="not callable"):
        scheduler.schedule(5, None)  # type: ignore[arg-type]


def test_driver_reports_wait_until_next_bucket_and_runs_due_tasks() -> None:
    clock = ManualClock(1_000)
    timer = Timer(clock)
    driver = TimerDriver(timer)
    assert driver.poll() == POLL_WAIT_MS_MAX  # nothing pending
    calls: list[int] = []
    Scheduler(timer).schedule(30, lambda: calls.append(clock.milliseconds()))
    # Due at 1,030 ms, beyond level 0's 20 ms reach: it waits in level 1's bucket for 1,020.
    assert driver.poll() == 20
    clock.advance_ms(12)
    assert driver.poll() == 8
    clock.advance_ms(8)
    assert driver.poll() == 10  # the bucket at 1,020 cascaded the task into level 0's 1,030
    assert calls == []
    clock.advance_ms(10)
    assert driver.poll() == POLL_WAIT_MS_MAX
    assert calls == [1_030]


def test_driver_caps_wait_and_never_goes_negative() -> None:
    clock = ManualClock(0)
    timer = Timer(clock)
    driver = TimerDriver(timer, max_wait_ms=50)
    Scheduler(timer).schedule(10_000, lambda: None)
    assert driver.poll() == 50
    assert driver.wait_ms(now_ms=1_000_000) == 0


def test_driver_loop_fires_every_task_within_its_tick() -> None:
    """A simulated event loop that sleeps exactly what poll() says runs each task on time."""
    clock = ManualClock(0)
    timer = Timer(clock)
    driver = TimerDriver(timer)
    fired: dict[int, int] = {}
    for delay in (1, 7, 199, 200, 201, 999, 4_321):
        Scheduler(timer).schedule(delay, lambda d=delay: fired.setdefault(d, clock.milliseconds()))
    polls = 0
    while clock.milliseconds() < 5_000:
        clock.advance_ms(max(1, driver.poll()))
        polls += 1
    assert fired == {d: d for d in (1, 7, 199, 200, 201, 999, 4_321)}
    assert polls < 60  # it sleeps between buckets instead of ticking every millisecond


def test_driver_bad_max_wait() -> None:
    with pytest.raises(TimerError, match="max wait 0 ms"):
        TimerDriver(Timer(ManualClock(0)), max_wait_ms=0)
