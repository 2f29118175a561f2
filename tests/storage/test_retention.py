"""Retention rules (Kafka's UnifiedLog.deleteOldSegments) over a minimal in-memory log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.retention import (
    delete_old_segments,
    deletable_segments,
    log_start_offset_predicate,
)


@dataclass
class Seg:
    base_offset: int
    size_bytes: int
    max_timestamp_so_far: int
    created_ms: int = 0


@dataclass
class FakeLog:
    """The retention surface of Log over plain segment records; records every call."""

    segments: list[Seg]
    log_end_offset: int
    config: LogConfig = field(default_factory=LogConfig)
    log_start_offset: int = 0
    high_watermark: int = -1
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.high_watermark < 0:
            self.high_watermark = self.log_end_offset

    def roll(self, reason: str) -> None:
        self.calls.append("roll")
        self.segments.append(Seg(self.log_end_offset, 0, -1))

    def delete_segments(self, segments: Sequence[Seg], reason: str) -> None:
        self.calls.append(f"delete {[s.base_offset for s in segments]} ({reason})")
        for segment in segments:
            self.segments.remove(segment)

    def increment_log_start_offset(self, offset: int) -> None:
        assert offset > self.log_start_offset
        self.log_start_offset = offset


def bases(log: FakeLog) -> list[int]:
    return [s.base_offset for s in log.segments]


def four_segments(**kwargs: object) -> FakeLog:
    # Base offsets 0, 11, 23, 30 (active); timestamps 1000, 2000, 3000, 4000; 100 bytes each.
    segments = [Seg(b, 100, ts) for b, ts in ((0, 1000), (11, 2000), (23, 3000), (30, 4000))]
    return FakeLog(segments, log_end_offset=35, **kwargs)  # type: ignore[arg-type]


def test_worked_example_log_start_offset_next_bases_11_23_30() -> None:
    log = four_segments(log_start_offset=25, config=LogConfig(retention_ms=-1))
    result = delete_old_segments(log, now_ms=10_000)
    assert result.log_start_offset_breached == 2
    assert bases(log) == [23, 30]
    assert log.log_start_offset == 25  # not moved back to 23


@pytest.mark.parametrize(("start", "kept"), [(10, [0, 11, 23, 30]), (11, [11, 23, 30]), (30, [30]), (35, [30])])
def test_log_start_offset_boundaries(start: int, kept: list[int]) -> None:
    log = four_segments(log_start_offset=start, config=LogConfig(retention_ms=-1))
    delete_old_segments(log, now_ms=0)
    assert bases(log) == kept


def test_time_retention_uses_largest_timestamp_and_stops_at_first_young_segment() -> None:
    log = four_segments(config=LogConfig(retention_ms=1500))
    log.segments[1].max_timestamp_so_far = 3000  # young
    log.segments[2].max_timestamp_so_far = 500  # old, but behind a young segment: kept
    result = delete_old_segments(log, now_ms=3600)  # segment 0: 2600 > 1500; segment 11: 600
    assert result.time_breached == 1
    assert bases(log) == [11, 23, 30]
    assert log.log_start_offset == 11


def test_time_retention_boundary_is_strict() -> None:
    log = four_segments(config=LogConfig(retention_ms=1000))
    delete_old_segments(log, now_ms=2000)  # 2000 - 1000 = 1000, not > 1000
    assert bases(log) == [0, 11, 23, 30]


def test_all_expired_rolls_first() -> None:
    log = four_segments(config=LogConfig(retention_ms=10))
    result = delete_old_segments(log, now_ms=1_000_000)
    assert result.time_breached == 4
    assert log.calls[0] == "roll"
    assert bases(log) == [35]
    assert log.log_start_offset == 35


def test_never_beyond_high_watermark() -> None:
    log = four_segments(config=LogConfig(retention_ms=10), high_watermark=23)
    delete_old_segments(log, now_ms=1_000_000)
    assert bases(log) == [23, 30]  # segment 23 ends at 30 > high watermark 23


def test_empty_active_segment_never_deleted() -> None:
    log = FakeLog([Seg(0, 100, 1), Seg(5, 0, -1)], log_end_offset=5, config=LogConfig(retention_ms=10))
    delete_old_segments(log, now_ms=1_000)
    assert bases(log) == [5]
    assert "roll" not in log.calls


@pytest.mark.parametrize(("retention_bytes", "kept"), [(-1, [0, 11, 23, 30]), (400, [0, 11, 23, 30]), (399, [0, 11, 23, 30]), (300, [11, 23, 30]), (250, [11, 23, 30]), (200, [23, 30]), (100, [30]), (0, [35])])
def test_size_retention_is_segment_granular(retention_bytes: int, kept: list[int]) -> None:
    log = four_segments(config=LogConfig(retention_ms=-1, retention_bytes=retention_bytes))
    delete_old_segments(log, now_ms=0)
    assert bases(log) == kept


def test_compact_only_skips_time_and_size() -> None:
    log = four_segments(config=LogConfig(retention_ms=10, retention_bytes=0, cleanup_policy="compact"), log_start_offset=11)
    result = delete_old_segments(log, now_ms=1_000_000)
    assert result.size_breached == 0 and result.time_breached == 0
    assert bases(log) == [11, 23, 30]


def test_compact_delete_applies_time() -> None:
    log = four_segments(config=LogConfig(retention_ms=1500, cleanup_policy="compact,delete"))
    assert delete_old_segments(log, now_ms=3600).time_breached == 2


def test_order_start_then_size_then_time() -> None:
    log = four_segments(config=LogConfig(retention_ms=2500, retention_bytes=200), log_start_offset=11)
    delete_old_segments(log, now_ms=5600)
    assert [c.split(" (")[1] for c in log.calls] == ["log start offset breach)", "retention size breach)", "retention time breach)"]
    assert bases(log) == [30]


def test_segment_without_timestamps_falls_back_to_creation_time() -> None:
    log = FakeLog([Seg(0, 100, -1, created_ms=5000), Seg(5, 10, 9000)], log_end_offset=6, config=LogConfig(retention_ms=1000))
    delete_old_segments(log, now_ms=5500)
    assert bases(log) == [0, 5]
    delete_old_segments(log, now_ms=6001)
    assert bases(log) == [5]


def test_deletable_segments_is_pure() -> None:
    log = four_segments(log_start_offset=25)
    assert [s.base_offset for s in deletable_segments(log, log_start_offset_predicate(25))] == [0, 11]
    assert bases(log) == [0, 11, 23, 30]
