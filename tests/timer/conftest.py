"""Fixtures for the timer tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalab.timer import Timer


def check_invariants(timer: Timer) -> None:
    """The timer's own structural check, plus: ``size`` equals the tasks found in buckets."""
    timer.check_invariants()
    found = sum(len(b.tasks()) for wheel in timer.wheel.levels() for b in wheel.buckets)
    assert timer.size == found


@pytest.fixture
def invariants() -> Callable[[Timer], None]:
    return check_invariants
