"""The broker's periodic tasks: retention runs every log.retention.check.interval.ms."""

from __future__ import annotations

from collections.abc import Callable

from kafkalab.broker.housekeeping import Housekeeping, HousekeepingIntervals
from kafkalab.clock import ManualClock
from kafkalab.storage.log_config import LogConfig
from tests.storage.test_retention import FakeLog, bases, four_segments


class FakeScheduler:
    """Runs callbacks when the test moves time (the timing wheel's scheduler contract)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.tasks: list[tuple[int, Callable[[], object]]] = []

    def schedule(self, delay_ms: int, callback: Callable[[], object], *, name: str = "") -> None:
        self.tasks.append((self.clock.milliseconds() + delay_ms, callback))

    def advance(self, delta_ms: int) -> None:
        self.clock.advance_ms(delta_ms)
        due = sorted((t for t in self.tasks if t[0] <= self.clock.milliseconds()), key=lambda t: t[0])
        self.tasks = [t for t in self.tasks if t[0] > self.clock.milliseconds()]
        for _, callback in due:
            callback()


class NoProducers:
    """A log's producer state with no idempotent producers to expire."""

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        return 0


class OneLogStore:
    """The housekeeping surface of the log store over one in-memory log; the other tasks'
    work does nothing here."""

    def __init__(self, log: FakeLog) -> None:
        self.log = log
        log.producer_state = NoProducers()  # type: ignore[attr-defined]

    def live_logs(self) -> list[FakeLog]:
        return [self.log]

    def flush_dirty_logs(self) -> None: ...
    def checkpoint_recovery_points(self) -> None: ...
    def checkpoint_log_start_offsets(self) -> None: ...
    def checkpoint_high_watermarks(self) -> None: ...


def test_retention_task_runs_every_interval_and_sees_config_changes() -> None:
    clock = ManualClock(now_ms=1_000)
    scheduler = FakeScheduler(clock)
    log = four_segments(config=LogConfig(retention_ms=-1))
    intervals = HousekeepingIntervals(retention_check_ms=300_000)
    housekeeping = Housekeeping(scheduler, OneLogStore(log), intervals, clock.milliseconds)  # type: ignore[arg-type]
    task = housekeeping.tasks["kafka-log-retention"]
    scheduler.advance(29_999)
    assert task.runs == 0
    scheduler.advance(1)
    assert task.runs == 1 and bases(log) == [0, 11, 23, 30]
    log.config = LogConfig(retention_ms=100_000)  # a dynamic config change lowers retention
    scheduler.advance(299_999)
    assert task.runs == 1
    scheduler.advance(1)
    assert task.runs == 2 and bases(log) == [35]
    housekeeping.stop()
    scheduler.advance(300_000)
    assert task.runs == 2 and housekeeping.retention_deleted_segments == 4  # all four; the roll left [35]
