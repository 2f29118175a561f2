"""A deleted segment's files go file.delete.delay.ms later, on the broker's timing wheel.

The log renames a dropped segment's files to ``.deleted`` at once and hands their removal to
the scheduler (Kafka's ``delete-file`` task); here the real ``Scheduler`` over a ``Timer``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_helpers import batch_of_size

from kafkalab.clock import ManualClock
from kafkalab.errors import TimerError
from kafkalab.storage import Log, LogConfig
from kafkalab.timer import Scheduler, Timer

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=100)  # Kafka's 60 s file.delete.delay.ms


def _segment_zero(log_dir: Path) -> list[str]:
    return sorted(n for n in os.listdir(log_dir) if n.startswith("00000000000000000000"))


def test_files_go_after_the_delay_and_only_once(log_dir: Path) -> None:
    clock = ManualClock(5_000)
    timer = Timer(clock)
    log = Log.open(log_dir, SMALL, clock, scheduler=Scheduler(timer))
    for _ in range(14):
        log.append_as_leader(batch_of_size(150), leader_epoch=0)
    assert log.delete_segments(log.segments[:1], "retention") == 1
    assert _segment_zero(log_dir) and all(n.endswith(".deleted") for n in _segment_zero(log_dir))
    assert timer.size == 1
    timer.advance_clock(5_000 + 59_999)
    assert _segment_zero(log_dir)
    timer.advance_clock(5_000 + 60_000)
    assert _segment_zero(log_dir) == [] and timer.size == 0
    log.close()


def test_a_cancelled_task_never_runs_and_a_forced_one_runs_once() -> None:
    calls: list[str] = []
    timer = Timer(ManualClock(0))
    scheduler = Scheduler(timer)
    cancelled = scheduler.schedule(10, lambda: calls.append("cancelled"))
    forced = scheduler.schedule(60_000, lambda: calls.append("forced"))
    cancelled.cancel()
    forced.run()  # e.g. deleting at once instead of waiting
    timer.advance_clock(120_000)
    assert calls == ["forced"]


def test_not_callable_is_a_typed_error() -> None:
    with pytest.raises(TimerError, match="not callable"):
        Scheduler(Timer(ManualClock(0))).schedule(10, "rm -rf")  # type: ignore[arg-type]
