"""Data kafkalab did not write itself: old v0/v1 segments, kafka-python batches, compression."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.storage import Log, LogConfig, index_search
from kafkalab.storage.offset_index import OffsetIndex


def legacy_entries(magic: int, first_offset: int, count: int, compression: int = 0) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=5_000 + i if magic else None, key=None, value=f"old{first_offset + i}".encode())
    data = bytearray(builder.build())
    if compression == 0:  # one message per record: give each its absolute offset
        position = 0
        for i in range(count):
            data[position:position + 8] = (first_offset + i).to_bytes(8, "big")
            position += 12 + int.from_bytes(data[position + 8:position + 12], "big")
    else:  # a wrapper carries the offset of its last inner message (KIP-31)
        data[0:8] = (first_offset + count - 1).to_bytes(8, "big")
    return bytes(data)


def decode(data: bytes) -> list[tuple[int, bytes]]:
    records, out = MemoryRecords(data), []
    while records.has_next():
        out += [(r.offset, r.value) for r in records.next_batch()]
    return out


def test_segment_of_v0_v1_entries_from_an_old_broker_opens_and_reads(tmp_path: Path) -> None:
    directory = tmp_path / "old-0"
    directory.mkdir()
    content = (legacy_entries(0, 0, 3) + legacy_entries(1, 3, 4) + legacy_entries(1, 7, 5, compression=1)
               + legacy_entries(1, 12, 40))
    (directory / "00000000000000000000.log").write_bytes(content)  # no index files at all
    log = Log.open(directory, LogConfig(index_interval_bytes=64), ManualClock(0))
    assert log.log_end_offset == 52
    assert log.active_segment.offset_index.entries > 0
    found = log.lookup(30)
    assert found is not None and found[1].last_offset == 30
    assert decode(log.read(30, 40).read_bytes())[0] == (30, b"old30")
    wrapper = log.lookup(9)
    assert wrapper is not None and wrapper[1].last_offset == 11  # inside the compressed wrapper
    info = log.append_as_leader(build_batch(2), 4)  # new data is v2 after the old entries
    assert info.first_offset == 52
    log.close()


def test_compressed_kafka_python_batches_round_trip(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "c-0", LogConfig(segment_bytes=3000), ManualClock(0))
    expected = []
    for i, codec in enumerate([1, 2, 3, 4, 0] * 6):  # gzip, snappy, lz4, zstd, none
        value = f"payload-{i}".encode() * 5
        log.append_as_leader(build_batch(4, value=value, compression=codec), 0)
        expected += [(4 * i + j, value) for j in range(4)]
    got, offset = [], 0
    while offset < log.log_end_offset:
        chunk = [r for r in decode(log.read(offset, 5000).read_bytes()) if r[0] >= offset]
        got += chunk
        offset = chunk[-1][0] + 1
    assert got == expected and len(log.segments) > 1
    log.close()


def test_offset_index_fast_path_matches_kafkas_loop(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "0.index", 1000, 80_000)
    rng = random.Random(5)
    offsets = sorted(rng.sample(range(1, 2_000_000), 3000))
    for i, offset in enumerate(offsets):
        index.append(1000 + offset, i * 10)
    keys = np.array(offsets, dtype=np.int64)
    for target in [0, 999, 1000, 1001, 2_001_000] + [1000 + rng.randrange(2_000_000) for _ in range(500)]:
        slot = index_search.floor_slot_loop(lambda s: int(keys[s]), len(keys), target - 1000, 8)
        assert index.floor_position(target) == (slot * 10 if slot >= 0 else 0)
        assert index.lookup(target).position == index.floor_position(target)
    index.close()
