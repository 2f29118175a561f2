"""Fixtures for the timer tests: a structural invariant checker.

The project runs pytest with ``--import-mode=importlib``, so helpers reach tests as fixtures."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalab.timer import Timer


def check_invariants(timer: Timer) -> None:
    """Every pending task sits in the one bucket its expiration maps to, at its level; every
    non-empty bucket is queued exactly once, at its expiration; ``size`` counts the tasks."""
    queued = [id(bucket) for _, _, bucket in timer._queue]
    assert len(queued) == len(set(queued)), "a bucket is queued twice"
    queued_expiration = {id(b): e for e, _, b in timer._queue}
    pending = 0
    for wheel in timer.wheel.levels():
        for index, bucket in enumerate(wheel.buckets):
            assert (bucket.level, bucket.index) == (wheel.level, index)
            tasks = bucket.tasks()
            assert len(tasks) == bucket.task_count
            pending += len(tasks)
            if not tasks:
                continue
            assert queued_expiration.get(id(bucket)) == bucket.expiration_ms
            for task in tasks:
                virtual_id = task.expiration_ms // wheel.tick_ms
                assert bucket.expiration_ms == virtual_id * wheel.tick_ms, (task, bucket)
                assert virtual_id % wheel.wheel_size == index
                # Rule 2 admitted it within one interval of the hand, and hands only move forward.
                assert task.expiration_ms < wheel.current_time_ms + wheel.interval_ms
    assert timer.size == pending


@pytest.fixture
def invariants() -> Callable[[Timer], None]:
    return check_invariants

