"""Log and segment behaviour: offsets, the index rule, rolling, reads, truncation, timestamps."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from storage_helpers import batch_of_size, build_batch, exact_batch
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from kafkalab.clock import ManualClock
from kafkalab.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)
from kafkalab.storage import IndexEntryAppended, Log, LogConfig, LookupStep, SegmentRolled


def decode_all(data: bytes) -> list[tuple[int, int, bytes]]:
    """(offset, timestamp, value) of every record, decoded by kafka-python."""
    records = MemoryRecords(data)
    out = []
    while records.has_next():
        batch = records.next_batch()
        for record in batch:
            out.append((record.offset, record.timestamp, record.value))
    return out


def read_all(log: Log) -> list[tuple[int, int, bytes]]:
    """Every record from the log start, one segment-bounded read at a time."""
    got: list[tuple[int, int, bytes]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        records = [r for r in decode_all(log.read(offset, 1 << 20).read_bytes()) if r[0] >= offset]
        if not records:
            break
        got += records
        offset = records[-1][0] + 1
    return got


def test_offsets_assigned_from_log_end_offset(open_log) -> None:
    log = open_log()
    first = log.append_as_leader(build_batch(5), leader_epoch=0)
    second = log.append_as_leader(build_batch(10), leader_epoch=0)
    assert (first.first_offset, first.last_offset) == (0, 4)
    assert (second.first_offset, second.last_offset) == (5, 14)
    assert log.log_end_offset == log.high_watermark == 15
    assert [o for o, _t, _v in decode_all(log.read(0, 1 << 20).read_bytes())] == list(range(15))


def test_append_keeps_producer_crc_and_stamps_epoch(open_log) -> None:
    log = open_log()
    data = build_batch(3)
    log.append_as_leader(data, leader_epoch=7)
    stored = log.read(0, 1 << 20).read_bytes()
    assert stored[17:] == data[17:]  # CRC and everything it covers are untouched
    batch = DefaultRecordBatch(stored)
    assert batch.validate_crc() and batch.base_offset == 0
    assert int.from_bytes(stored[12:16], "big") == 7
    assert log.leader_epoch_cache.entries == [(7, 0)]


def test_log_append_time_rewrites_max_timestamp_and_crc(open_log, clock: ManualClock) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    clock.set_ms(5_000_000)
    info = log.append_as_leader(build_batch(3, timestamp_ms=10), leader_epoch=0)
    assert info.log_append_time_ms == 5_000_000
    batch = DefaultRecordBatch(log.read(0, 1 << 20).read_bytes())
    assert batch.validate_crc()
    assert batch.timestamp_type == 1 and batch.max_timestamp == 5_000_000
    assert [r.timestamp for r in batch] == [5_000_000] * 3


def test_bad_appends_raise_typed_errors(open_log) -> None:
    log = open_log(LogConfig(max_message_bytes=200))
    good = bytearray(build_batch(2))
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError) as crc:
        log.append_as_leader(bytes(corrupt), 0)
    assert crc.value.error_code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(RecordTooLargeError) as big:
        log.append_as_leader(build_batch(1, value_bytes=500), 0)
    assert big.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(bytes(good[:-3]), 0)  # torn batch
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", 0)
    wrong_count = bytearray(good)
    wrong_count[57:61] = (5).to_bytes(4, "big")  # recordsCount is inside the CRC: fix the CRC
    import crc32c
    wrong_count[17:21] = crc32c.crc32c(bytes(wrong_count[21:])).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError, match="reports 5 records"):
        log.append_as_leader(bytes(wrong_count), 0)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_leader_rejects_legacy_magic(open_log) -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=1000, key=None, value=b"old")
    legacy = bytes(builder.build())
    log = open_log()
    with pytest.raises(UnsupportedForMessageFormatError) as exc:
        log.append_as_leader(legacy, 0)
    assert exc.value.error_code == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
    info = log.append_as_follower(legacy)  # old data replicated or recovered is still readable
    assert info.last_offset == 0 and decode_all(log.read(0, 1000).read_bytes())[0][2] == b"old"


def test_index_interval_rule_example(open_log) -> None:
    """kafka-facts: batches of 1780, 160, 2790 bytes -> the next batch gets offset 3 -> 4730."""
    log = open_log()
    appended: list[IndexEntryAppended] = []
    log.subscribe(lambda e: appended.append(e) if isinstance(e, IndexEntryAppended) else None)
    for size in (1780, 160, 2790, 500):
        log.append_as_leader(batch_of_size(size), 0)
    segment = log.active_segment
    assert segment.offset_index.raw_entries() == [(3, 4730)]
    assert appended[0] == IndexEntryAppended("offset", 0, 3, 4730)
    assert segment.time_index.raw_entries() == [(1000, 3)] or segment.time_index.entries == 1


def test_worked_example_lookup_23_via_entry_20_at_320(open_log, log_dir: Path) -> None:
    """Chapter 04: the index holds (20, 320) and (43, 1220); offset 23 is found from 320."""
    log = open_log(LogConfig(index_interval_bytes=300))
    for count, size in ((10, 160), (10, 160), (1, 300), (22, 600), (1, 100)):
        log.append_as_leader(exact_batch(count, size), 0)
    segment = log.active_segment
    assert [(segment.base_offset + k, p) for k, p in segment.offset_index.raw_entries()] == [(20, 320), (43, 1220)]
    steps: list[LookupStep] = []
    log.subscribe(steps.append)
    found = log.lookup(23)
    assert found is not None and found[1].position == 620 and found[1].last_offset == 42
    kinds = [s.kind for s in steps]
    assert kinds[0] == "segment" and kinds[-2:] == ["index_result", "scan"]
    result = steps[-2]
    assert (result.slot, result.offset, result.position) == (0, 20, 320)
    assert steps[-1].position == 620 and steps[-1].bytes_scanned == 900
    assert all(s.kind == "index_probe" for s in steps[1:-2])


def test_roll_on_segment_bytes(open_log) -> None:
    log = open_log(LogConfig(segment_bytes=1000))
    rolls: list[SegmentRolled] = []
    log.subscribe(lambda e: rolls.append(e) if isinstance(e, SegmentRolled) else None)
    for _ in range(4):
        log.append_as_leader(batch_of_size(300), 0)
    assert [s.base_offset for s in log.segments] == [0, 3]
    assert rolls == [SegmentRolled("segment.bytes", 3, 0, 900)]
    old = log.segments[0]
    assert old.offset_index.path.stat().st_size == 0  # trimmed on roll
    assert old.time_index.path.stat().st_size == 12  # the final time-index entry
    assert log.active_segment.offset_index.path.stat().st_size == 10 * 1024 * 1024


def test_roll_on_segment_ms_uses_batch_timestamps(open_log) -> None:
    log = open_log(LogConfig(segment_ms=100))
    log.append_as_leader(build_batch(1, timestamp_ms=1000), 0)
    log.append_as_leader(build_batch(1, timestamp_ms=1100), 0)  # waited exactly 100: no roll
    assert len(log.segments) == 1
    rolls: list[SegmentRolled] = []
    log.subscribe(lambda e: rolls.append(e) if isinstance(e, SegmentRolled) else None)
    log.append_as_leader(build_batch(1, timestamp_ms=1101), 0)
    assert [s.base_offset for s in log.segments] == [0, 2] and rolls[0].reason == "segment.ms"


def test_segment_jitter_shortens_the_wait(log_dir: Path, clock: ManualClock) -> None:
    config = LogConfig(segment_ms=100, segment_jitter_ms=50)
    log = Log.open(log_dir, config, clock, rng=random.Random(3))
    jitter = log.active_segment.roll_jitter_ms  # drawn from the seeded rng
    assert jitter == random.Random(3).randrange(50) and jitter > 0
    log.append_as_leader(build_batch(1, timestamp_ms=1000), 0)
    log.append_as_leader(build_batch(1, timestamp_ms=1000 + 101 - jitter), 0)
    assert len(log.segments) == 2
    log.close()


def test_roll_when_offset_index_full(open_log) -> None:
    log = open_log(LogConfig(segment_index_bytes=48, index_interval_bytes=0))
    reasons: list[str] = []
    log.subscribe(lambda e: reasons.append(e.reason) if isinstance(e, SegmentRolled) else None)
    for _ in range(9):
        log.append_as_leader(build_batch(1, timestamp_ms=5), 0)  # constant time: one time entry
    assert reasons == ["offset index full"]
    assert log.segments[1].base_offset == 7


def test_roll_when_time_index_full(open_log) -> None:
    log = open_log(LogConfig(segment_index_bytes=36, index_interval_bytes=0))
    reasons: list[str] = []
    log.subscribe(lambda e: reasons.append(e.reason) if isinstance(e, SegmentRolled) else None)
    for i in range(5):
        log.append_as_leader(build_batch(1, timestamp_ms=1000 + i), 0)
    assert reasons[0] == "time index full"


def test_roll_on_relative_offset_overflow(open_log) -> None:
    log = open_log()
    log.append_as_follower(build_batch(1, base_offset=0))
    far = 2**31 + 5
    log.append_as_follower(build_batch(1, base_offset=far))
    assert [s.base_offset for s in log.segments] == [0, far]
    assert log.log_end_offset == far + 1


def test_read_is_batch_aligned_and_bounded(open_log) -> None:
    log = open_log()
    for _ in range(5):
        log.append_as_leader(batch_of_size(100), 0)
    assert log.read(0, 250).size_bytes == 200
    assert log.read(0, 10).size_bytes == 100  # min_one_message
    assert log.read(0, 10, min_one_message=False).size_bytes == 0
    assert log.read(1, 1000, max_offset=3).size_bytes == 200  # offsets 1, 2
    assert log.read(5, 1000).size_bytes == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 1000)


def test_reads_span_segments_and_round_trip_with_kafka_python(open_log) -> None:
    log = open_log(LogConfig(segment_bytes=600))
    expected = []
    for i in range(20):
        data = build_batch(3, timestamp_ms=1000 + 10 * i, value=f"m{i}".encode())
        log.append_as_leader(data, 0)
        expected += [(3 * i + j, 1000 + 10 * i + j, f"m{i}".encode()) for j in range(3)]
    assert len(log.segments) > 3
    got = []
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 400).read_bytes()
        records = decode_all(data)
        got += [r for r in records if r[0] >= offset]
        offset = records[-1][0] + 1
    assert got == expected


def test_truncate_to_inside_and_across_segments(open_log) -> None:
    log = open_log(LogConfig(segment_bytes=600))
    for _ in range(20):
        log.append_as_leader(build_batch(2), 0)
    log.truncate_to(13)  # the batch holding 12..13 straddles 13 and goes as a whole
    assert log.log_end_offset == 12
    end = log.log_end_offset
    info = log.append_as_leader(build_batch(1), 1)
    assert info.first_offset == end
    assert all(s.base_offset <= end for s in log.segments)
    assert [o for o, _t, _v in read_all(log)] == list(range(end + 1))
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, [s.base_offset for s in log.segments]) == (100, 100, [100])
    assert log.append_as_leader(build_batch(1), 2).first_offset == 100


def test_offset_for_timestamp_and_special_values(open_log) -> None:
    log = open_log(LogConfig(segment_bytes=500))
    for i in range(10):
        log.append_as_leader(build_batch(2, timestamp_ms=1000 + 100 * i), 3)
    found = log.offset_for_timestamp(1250)  # batch 2 holds 1200, 1201; batch 3 starts at 1300
    assert found is not None and (found.offset, found.timestamp, found.leader_epoch) == (6, 1300, 3)
    inside = log.offset_for_timestamp(1501)  # the second record of batch 5
    assert inside is not None and (inside.offset, inside.timestamp) == (11, 1501)
    assert log.offset_for_timestamp(-2).offset == 0
    assert log.offset_for_timestamp(-1).offset == 20
    assert log.offset_for_timestamp(-3).timestamp == 1901
    assert log.offset_for_timestamp(10**12) is None


def test_increment_log_start_offset(open_log) -> None:
    log = open_log()
    log.append_as_leader(build_batch(10), 0)
    assert log.increment_log_start_offset(4)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.increment_log_start_offset(11)


def test_flush_messages_moves_recovery_point(open_log) -> None:
    log = open_log(LogConfig(flush_messages=4))
    log.append_as_leader(build_batch(3), 0)
    assert log.recovery_point == 0
    log.append_as_leader(build_batch(1), 0)
    assert log.recovery_point == 4


def test_flush_ms(open_log, clock: ManualClock) -> None:
    log = open_log(LogConfig(flush_ms=1000))
    log.append_as_leader(build_batch(1), 0)
    assert log.recovery_point == 0
    clock.advance_ms(1000)
    log.append_as_leader(build_batch(1), 0)
    assert log.recovery_point == 2


def test_leader_epoch_checkpoint_written_on_change_only(open_log, log_dir: Path) -> None:
    log = open_log(LogConfig(flush_messages=1))
    log.append_as_leader(build_batch(2), leader_epoch=0)
    path = log_dir / "leader-epoch-checkpoint"
    assert path.read_text() == "0\n1\n0 0\n"
    mtime = path.stat().st_mtime_ns
    log.append_as_leader(build_batch(2), leader_epoch=0)
    assert path.stat().st_mtime_ns == mtime
    log.append_as_leader(build_batch(1), leader_epoch=5)
    assert path.read_text() == "0\n2\n0 0\n5 4\n"
