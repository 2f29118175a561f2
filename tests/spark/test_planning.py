"""Split planning from names and indexes, and pushdown filters -> bounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kafkalab.errors import StorageError
from kafkalab.spark import planning
from kafkalab.spark.planning import ScanBounds, find_partition_dirs, plan_splits


def _segment(directory: Path, base: int, size: int, index: list[tuple[int, int]] = (), max_ts: int | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{base:020d}.log").write_bytes(b"\x00" * size)
    entries = np.array([(o - base, p) for o, p in index] + [(0, 0)] * 3, dtype=">i4")
    (directory / f"{base:020d}.index").write_bytes(entries.tobytes())
    if max_ts is not None:
        (directory / f"{base:020d}.timeindex").write_bytes(
            np.array([max_ts - 5], ">i8").tobytes() + b"\x00" * 4 + np.array([max_ts], ">i8").tobytes() + b"\x00" * 4 + b"\x00" * 24)


def test_resolves_data_dir_topic_and_partition_dir(tmp_path: Path) -> None:
    for name in ("orders-0", "orders-1", "my-topic-0"):
        _segment(tmp_path / name, 0, 10)
    assert [(t, p) for t, p, _ in find_partition_dirs(tmp_path)] == [("my-topic", 0), ("orders", 0), ("orders", 1)]
    assert [(t, p) for t, p, _ in find_partition_dirs(tmp_path / "orders")] == [("orders", 0), ("orders", 1)]
    assert [(t, p) for t, p, _ in find_partition_dirs(tmp_path / "my-topic-0")] == [("my-topic", 0)]
    assert [(t, p) for t, p, _ in find_partition_dirs(tmp_path, "my-topic")] == [("my-topic", 0)]
    with pytest.raises(StorageError, match="no Kafka partition directories"):
        find_partition_dirs(tmp_path / "missing")


def test_large_segment_splits_at_index_entries(tmp_path: Path) -> None:
    mib = 1024 * 1024
    index = [(1000 + i * 100, i * mib // 4) for i in range(1, 40)]  # an entry every 256 KiB
    _segment(tmp_path / "t-0", 1000, 10 * mib, index)
    splits = plan_splits(find_partition_dirs(tmp_path), split_bytes=4 * mib)
    assert [(s.start_position, s.end_position) for s in splits] == [(0, 4 * mib), (4 * mib, 8 * mib), (8 * mib, 10 * mib)]
    # offsets: the split starting at entry (2600, 4 MiB) holds nothing at or below entry (2500, ...)
    assert [(s.offset_low, s.offset_high) for s in splits] == [(1000, 2600), (2501, 4200), (4101, 2**63 - 1)]


def test_corrupt_index_means_no_split_not_a_failure(tmp_path: Path) -> None:
    mib = 1024 * 1024
    _segment(tmp_path / "t-0", 0, 3 * mib, [(500, mib), (400, 2 * mib)])  # offsets decrease
    assert len(plan_splits(find_partition_dirs(tmp_path), split_bytes=mib)) == 1


def test_pruning_by_partition_offset_and_time(tmp_path: Path) -> None:
    for p in (0, 1):
        _segment(tmp_path / f"t-{p}", 0, 100, max_ts=1000)
        _segment(tmp_path / f"t-{p}", 300, 100, max_ts=2000)
        _segment(tmp_path / f"t-{p}", 600, 100)  # active
    dirs = find_partition_dirs(tmp_path)
    assert len(plan_splits(dirs)) == 6
    pruned = plan_splits(dirs, ScanBounds(partitions=frozenset({1}), offset_min=300, offset_max=599))
    assert [(s.partition, s.base_offset) for s in pruned] == [(1, 300)]
    by_time = plan_splits(dirs, ScanBounds(topics=frozenset({"t"}), timestamp_min=1500))
    assert [(s.partition, s.base_offset) for s in by_time] == [(0, 300), (0, 600), (1, 300), (1, 600)]
    assert plan_splits(dirs, ScanBounds(topics=frozenset({"other"}))) == []


def test_split_bytes_has_a_floor(tmp_path: Path) -> None:
    _segment(tmp_path / "t-0", 0, 10)
    with pytest.raises(StorageError, match="below the minimum"):
        plan_splits(find_partition_dirs(tmp_path), split_bytes=10)


def test_pushdown_filters_become_bounds() -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, LessThanOrEqual

    from kafkalab.spark.pushdown import bounds_from_filters

    filters = [EqualTo(("topic",), "orders"), In(("partition",), (1, 2)), GreaterThan(("offset",), 99),
               LessThanOrEqual(("offset",), 500), IsNotNull(("key",)), GreaterThan(("timestamp",), 7)]
    assert bounds_from_filters(filters, "records") == ScanBounds(
        topics=frozenset({"orders"}), partitions=frozenset({1, 2}), offset_min=100, offset_max=500,
        timestamp_min=8)
    batch = bounds_from_filters([GreaterThan(("last_offset",), 9), LessThanOrEqual(("base_offset",), 20)], "batches")
    assert (batch.offset_min, batch.offset_max) == (10, 20)
    assert planning.INT64_MIN == bounds_from_filters([GreaterThan(("offset",), 1)], "batches").offset_min
