from __future__ import annotations

import pytest

from kafkalab.clock import Clock, ManualClock, SystemClock


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(now_ms=1_000)
    assert clock.milliseconds() == 1_000
    assert clock.nanoseconds() == 1_000_000_000
    clock.advance_ms(250)
    assert clock.milliseconds() == 1_250
    clock.set_ms(2_000)
    assert clock.milliseconds() == 2_000


@pytest.mark.parametrize("bad", [-1, -1_000])
def test_manual_clock_refuses_to_go_backwards(bad: int) -> None:
    clock = ManualClock(now_ms=10)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance_ms(bad)
    with pytest.raises(ValueError, match="cannot move a ManualClock back"):
        clock.set_ms(9)
    with pytest.raises(ValueError):
        ManualClock(now_ms=bad)


def test_system_clock_is_a_clock() -> None:
    clock: Clock = SystemClock()
    first = clock.nanoseconds()
    assert clock.nanoseconds() >= first
    assert clock.milliseconds() > 1_600_000_000_000  # after 2020
