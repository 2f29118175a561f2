"""The leader's append pass (``log_append.analyze_and_assign``) and the index append checks.

Batches are built by kafka-python, an independent codec, and read back with it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    LogDirFailureError,
    RecordTooLargeError,
    StorageError,
)
from kafkalab.storage import Log, LogConfig, log_append
from kafkalab.storage.offset_index import RELATIVE_OFFSET_MAX, OffsetIndex
from kafkalab.storage.producer_state import AppendOrigin


def batches_of(data: bytes) -> list:
    records = MemoryRecords(data)
    out = []
    while records.has_next():
        out.append(records.next_batch())
    return out


def with_count(batch: bytes, count: int) -> bytes:
    """``batch`` claiming ``count`` records, with its CRC fixed so only the count is wrong."""
    data = bytearray(batch)
    data[57:61] = count.to_bytes(4, "big")
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def test_request_of_three_batches_gets_consecutive_offsets_and_the_epoch(open_log) -> None:
    log = open_log()
    log.append_as_leader(build_batch(2), leader_epoch=0)
    request = bytearray(build_batch(3) + build_batch(1) + build_batch(4))
    untouched = bytes(request)
    info = log.append_as_leader(request, leader_epoch=5)
    assert bytes(request) == untouched  # the leader stamps a copy, never the caller's buffer
    assert (info.first_offset, info.last_offset, info.records_count, info.batches_count) == (2, 9, 8, 3)
    stored = batches_of(log.read(2, 1 << 20).read_bytes())
    assert [(b.base_offset, b.next_offset - 1) for b in stored] == [(2, 4), (5, 5), (6, 9)]
    assert all(b.validate_crc() for b in stored)
    assert [r.offset for b in stored for r in b] == list(range(2, 10))
    assert log.leader_epoch_cache.entries == [(0, 0), (5, 2)]


@pytest.mark.parametrize("log_append_time", [False, True])
def test_in_place_append_stamps_the_callers_buffer_and_writes_the_same_bytes(tmp_path, clock,
                                                                              log_append_time) -> None:
    """The broker owns its request frame and lets the log stamp it (Kafka's LogValidator does
    the same to the request buffer): the segment gets exactly the bytes a copy would give."""
    config = LogConfig(message_timestamp_type="LogAppendTime" if log_append_time else "CreateTime")
    copied, in_place = Log.open(tmp_path / "copied-0", config, clock), Log.open(tmp_path / "inplace-0", config, clock)
    clock.set_ms(7_000_000)
    frame = bytearray(b"header" + build_batch(3) + build_batch(2) + b"trailer")
    records = memoryview(frame)[6:-7]  # as the request decoder hands them out
    for log in (copied, in_place):
        log.append_as_leader(build_batch(4), leader_epoch=0)
    copied.append_as_leader(records, leader_epoch=3)
    assert records.tobytes() == bytes(build_batch(3) + build_batch(2))  # untouched by default
    in_place.append_as_leader(records, leader_epoch=3, in_place=True)
    stored = in_place.read(4, 1 << 20).read_bytes()
    assert stored == copied.read(4, 1 << 20).read_bytes() == records.tobytes()  # stamped where it lay
    assert frame[:6] == b"header" and frame[-7:] == b"trailer"
    assert [(b.base_offset, b.validate_crc()) for b in batches_of(stored)] == [(4, True), (7, True)]
    in_place.append_as_leader(bytes(build_batch(1)), leader_epoch=3, in_place=True)  # read-only: copied
    assert in_place.log_end_offset == 10
    copied.close()
    in_place.close()


def test_one_bad_batch_rejects_the_whole_request(open_log) -> None:
    log = open_log(LogConfig(max_message_bytes=400))
    good = build_batch(2)
    corrupt = bytearray(build_batch(2))
    corrupt[-1] ^= 0x01
    cases = [
        (good + bytes(corrupt), CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (good + with_count(build_batch(2), 3), InvalidRecordError, ErrorCode.INVALID_RECORD),
        (good + with_count(build_batch(1), 0), InvalidRecordError, ErrorCode.INVALID_RECORD),
        (good + build_batch(1, value_bytes=500), RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
        (good + good[:20], CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
    ]
    for request, error, code in cases:
        with pytest.raises(error) as raised:
            log.append_as_leader(request, 0)
        assert raised.value.error_code == code
    assert log.log_end_offset == 0 and log.size_bytes == 0
    assert log.active_segment.offset_index.entries == 0


def test_crc_is_checked_before_the_record_count(open_log) -> None:
    # A batch that breaks both rules reports the corruption, as before the single-pass rewrite.
    log = open_log()
    data = bytearray(with_count(build_batch(2), 5))
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        log.append_as_leader(bytes(data), 0)


def test_log_append_time_restamps_every_batch_of_a_request(open_log, clock) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    clock.set_ms(7_000_000)
    info = log.append_as_leader(build_batch(2, timestamp_ms=5) + build_batch(3, timestamp_ms=9), 0)
    assert info.max_timestamp == 7_000_000 and info.log_append_time_ms == 7_000_000
    stored = batches_of(log.read(0, 1 << 20).read_bytes())
    assert [(b.base_offset, b.max_timestamp, b.timestamp_type) for b in stored] == [
        (0, 7_000_000, 1), (2, 7_000_000, 1),
    ]
    assert all(b.validate_crc() for b in stored)
    # Kafka's shallowOffsetOfMaxTimestamp under LogAppendTime: the last offset of the append.
    assert info.offset_of_max_timestamp == 4


def test_offset_of_max_timestamp_is_the_batch_last_offset_or_none(open_log) -> None:
    """Kafka's LogAppendInfo keeps the max timestamp's offset per batch (KAFKA-16310): the last
    offset of the first batch with the largest timestamp; -1 when no record has a timestamp."""
    log = open_log()
    info = log.append_as_leader(build_batch(2, timestamp_ms=9) + build_batch(3, timestamp_ms=5), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (10, 1)
    info = log.append_as_leader(build_batch(2, timestamps=[-1, -1]), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (-1, -1)


def test_offset_index_append_reports_each_broken_rule(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "100.index", 100, 16)
    with pytest.raises(InvalidRecordError, match="cannot be stored relative"):
        index.append(99, 0)  # below the base offset
    with pytest.raises(InvalidRecordError, match="cannot be stored relative"):
        index.append(100 + RELATIVE_OFFSET_MAX + 1, 0)
    index.append(105, 0)
    with pytest.raises(InvalidRecordError, match="no larger than the last offset"):
        index.append(105, 10)
    index.append(106, 10)
    with pytest.raises(StorageError, match="full offset index"):
        index.append(107, 20)
    assert index.raw_entries() == [(5, 0), (6, 10)]
    assert (tmp_path / "100.index").read_bytes() == bytes.fromhex("00000005 00000000 00000006 0000000a")
    index.close()


def v2_batch(keys: list[bytes | None], timestamps: list[int] | None = None, compression: int = 0) -> bytes:
    """A v2 batch built by kafka-python with these keys (None = null key) and timestamps."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for i, key in enumerate(keys):
        builder.append(i, timestamp=timestamps[i] if timestamps else 1_000 + i, key=key, value=b"v", headers=[])
    return bytes(builder.build())


def keyed_batch(keys: list[bytes | None], compression: int = 0) -> bytes:
    return v2_batch(keys, compression=compression)


def test_a_compacted_topic_refuses_a_record_without_a_key(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "c-0", LogConfig(cleanup_policy="compact,delete"), ManualClock(0))
    log.append_as_leader(keyed_batch([b"k1", b"k2"]), 0)
    for codec in (0, DefaultRecordBatchBuilder.CODEC_LZ4):  # compressed records are decoded too
        request = keyed_batch([b"k3"]) + keyed_batch([b"k4", None, b"k5"], codec)
        with pytest.raises(InvalidRecordError, match="record 1 of the batch at byte 71 has a null key") as caught:
            log.append_as_leader(request, 0)
        assert caught.value.error_code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 2  # no part of a refused request is written
    log.close()
    plain = Log.open(tmp_path / "d-0", LogConfig(cleanup_policy="delete"), ManualClock(0))
    assert plain.append_as_leader(keyed_batch([None]), 0).first_offset == 0
    plain.close()


@pytest.mark.parametrize("records", [3, log_append.FEW_RECORDS_MAX + 1])
def test_few_and_many_records_get_the_same_verdicts(tmp_path: Path, records: int) -> None:
    """A handful of records is checked by decoding them one by one, more by the compiled
    columnar decoder: the same refusals, with the same words."""
    now = 1_700_000_000_000
    keys: list[bytes | None] = [b"k%d" % i for i in range(records)]
    log = Log.open(tmp_path / "c-0", LogConfig(cleanup_policy="compact"), ManualClock(now))
    log.append_as_leader(v2_batch([b"first"], [now]), 0)
    with pytest.raises(InvalidRecordError, match=f"record {records - 1} of the batch at byte 0 has a null key"):
        log.append_as_leader(v2_batch([*keys[:-1], None], [now] * records), 0)
    late = [now] * (records - 1) + [now + 2 * HOUR_MS]
    with pytest.raises(InvalidTimestampError, match=f"Timestamp {now + 2 * HOUR_MS} of message with offset "
                                                    f"{records - 1} is out of range"):
        log.append_as_leader(v2_batch(keys, late), 0)
    assert log.append_as_leader(v2_batch(keys, [now] * records), 0).first_offset == 1
    log.close()


HOUR_MS = 3_600_000


def timed_batch(timestamps: list[int]) -> bytes:
    return v2_batch([b"k"] * len(timestamps), timestamps)


def test_create_time_beyond_message_timestamp_after_max_ms_is_refused(tmp_path: Path) -> None:
    now = 1_700_000_000_000
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock(now))  # after.max.ms: one hour
    assert log.append_as_leader(timed_batch([now - 10 * HOUR_MS, now + HOUR_MS]), 0).last_offset == 1
    with pytest.raises(InvalidTimestampError) as caught:
        log.append_as_leader(timed_batch([now, now + HOUR_MS + 1]), 0)
    assert caught.value.error_code == ErrorCode.INVALID_TIMESTAMP
    assert str(caught.value) == (f"Timestamp {now + HOUR_MS + 1} of message with offset 1 is out of range. "
                                 f"The timestamp should be within [{now - (2**63 - 1)}, {now + HOUR_MS}]")
    assert log.log_end_offset == 2
    log.close()


def test_message_timestamp_before_max_ms_checks_every_record(tmp_path: Path) -> None:
    now = 1_700_000_000_000
    config = LogConfig(message_timestamp_before_max_ms=60_000)
    log = Log.open(tmp_path / "t-0", config, ManualClock(now))
    # The batch's maxTimestamp is fine; only its first record is too old.
    with pytest.raises(InvalidTimestampError, match=f"Timestamp {now - 60_001} of message with offset 0"):
        log.append_as_leader(timed_batch([now - 60_001, now]), 0)
    assert log.append_as_leader(timed_batch([now - 60_000, now]), 0).first_offset == 0
    log.close()


def test_log_append_time_topics_do_not_check_the_producers_timestamps(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), ManualClock(5_000))
    assert log.append_as_leader(timed_batch([10 * HOUR_MS]), 0).log_append_time_ms == 5_000
    log.close()


def plain_batches() -> list[bytes]:
    """Single batches a plain producer sends: codecs, sizes, timestamps (one without any)."""
    batches = [v2_batch([b"k%d" % i for i in range(n)], compression=codec)
               for n in (1, 7, 300) for codec in (0, 1, 3)]
    batches.append(timed_batch([-1, -1]))
    batches.append(timed_batch([1_700_000_000_000 - 5, 1_700_000_000_000 + HOUR_MS]))
    return batches


def test_the_plain_batch_path_writes_what_the_general_path_writes(tmp_path: Path) -> None:
    """One batch from a plain producer takes the fused path; stamping, the info, the bytes
    on disk and both indexes must equal the general path's, which is taken by calling it."""
    now = 1_700_000_000_000
    config = LogConfig(index_interval_bytes=100)
    fused = Log.open(tmp_path / "fused-0", config, ManualClock(now))
    general = Log.open(tmp_path / "general-0", config, ManualClock(now))
    for epoch, batch in enumerate(plain_batches()):
        probe = bytearray(batch)
        assert log_append.assign_plain_batch(probe, 0, 0, now, config, 0) is not None  # takes the fused path
        info = fused.append_as_leader(batch, epoch)
        assert info == general._append_batches(bytearray(batch), epoch, now, AppendOrigin.CLIENT)
    written = b"".join(segment.log_path.read_bytes() for segment in fused.segments)  # rolled by timestamp
    assert written == b"".join(segment.log_path.read_bytes() for segment in general.segments)
    assert [b.validate_crc() for b in batches_of(written)] == [True] * len(plain_batches())
    for mine, theirs in zip(fused.segments, general.segments, strict=True):
        assert mine.offset_index.raw_entries() == theirs.offset_index.raw_entries()
        assert mine.time_index.raw_entries() == theirs.time_index.raw_entries()
    assert fused.segments[0].offset_index.entries > 3
    assert fused.leader_epoch_cache.entries == general.leader_epoch_cache.entries
    fused.close()
    general.close()


def keyed_record_batches() -> list[bytes]:
    """Uncompressed batches a compacted topic gets from a coordinator or a keyed producer:
    one record (an OffsetCommit), a few, and FEW_RECORDS_MAX."""
    return [v2_batch([b"k%d" % i for i in range(n)]) for n in (1, 2, log_append.FEW_RECORDS_MAX)]


def test_a_compacted_topics_small_keyed_batch_takes_the_plain_path_with_the_general_paths_result(
        tmp_path: Path) -> None:
    """The fused path checks a compacted topic's keys by decoding the records as the general
    path does; what it writes and reports must equal the general path's."""
    now = 1_700_000_000_000
    config = LogConfig(cleanup_policy="compact", index_interval_bytes=100)
    fused = Log.open(tmp_path / "fused-0", config, ManualClock(now))
    general = Log.open(tmp_path / "general-0", config, ManualClock(now))
    for epoch, batch in enumerate(keyed_record_batches() * 3):
        probe = bytearray(batch)
        assert log_append.assign_plain_batch(probe, 0, 0, now, config, 0) is not None
        info = fused.append_as_leader(batch, epoch)
        assert info == general._append_batches(bytearray(batch), epoch, now, AppendOrigin.CLIENT)
    written = fused.active_segment.log_path.read_bytes()
    assert written == general.active_segment.log_path.read_bytes()
    assert [[r.key for r in b] for b in batches_of(written)][:3] == [[b"k0"], [b"k0", b"k1"], [b"k%d" % i for i in range(8)]]
    assert fused.active_segment.offset_index.raw_entries() == general.active_segment.offset_index.raw_entries()
    assert fused.active_segment.offset_index.entries > 1
    fused.close()
    general.close()


def with_bad_record_length(batch: bytes) -> bytes:
    """``batch`` whose first record claims one byte more than it has, CRC fixed."""
    data = bytearray(batch)
    data[61] += 2  # the zig-zag varint length of the first record: one more
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


@pytest.mark.parametrize(("case", "error"), [
    ("null key", InvalidRecordError), ("second key null", InvalidRecordError),
    ("corrupt record", CorruptRecordError), ("compressed", None), ("many records", None)])
def test_a_compacted_topics_other_batches_go_to_the_general_path(tmp_path: Path, case: str,
                                                                 error: type[Exception] | None) -> None:
    now = 1_700_000_000_000
    config = LogConfig(cleanup_policy="compact")
    request = {
        "null key": v2_batch([None]),
        "second key null": v2_batch([b"a", None]),
        "corrupt record": with_bad_record_length(v2_batch([b"a"])),
        "compressed": v2_batch([b"a" * 200] * 2, compression=1),
        "many records": v2_batch([b"k%d" % i for i in range(log_append.FEW_RECORDS_MAX + 1)]),
    }[case]
    assert request[22] & 0x07 == (1 if case == "compressed" else 0)
    buf = bytearray(request)
    assert log_append.assign_plain_batch(buf, 42, 3, now, config, 0) is None
    assert buf == request  # untouched: the general path decides
    log = Log.open(tmp_path / "t-0", config, ManualClock(now))
    if error is None:
        assert log.append_as_leader(request, 0).first_offset == 0
    else:
        with pytest.raises(error):
            log.append_as_leader(request, 0)
        assert log.log_end_offset == 0
    log.close()


def test_the_key_walk_accepts_only_batches_the_decoder_accepts_with_every_key() -> None:
    """Seeded kafka-python batches (null keys, headers, empty values) and single-byte
    corruptions of their records with the CRC fixed: whenever the fused path's key walk says
    yes, the general path's decoder reads every record and finds every key; for the plain
    keyed, headerless batches a coordinator writes it says yes."""
    from kafkalab.records.codec import decode_batch
    from kafkalab.records.header import read_header

    rng = random.Random(15)
    agreed = 0
    for _ in range(300):
        count = rng.randint(1, log_append.FEW_RECORDS_MAX)
        keys = [None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 20)) for _ in range(count)]
        with_headers = rng.random() < 0.2
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                            producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        for i, key in enumerate(keys):
            value = None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 40))
            builder.append(i, timestamp=1_000 + i, key=key, value=value,
                           headers=[("h", b"x")] if with_headers else [])
        batch = bytearray(builder.build())
        if rng.random() < 0.6:  # a corrupted record byte, or a cut record region
            if rng.random() < 0.8:
                batch[rng.randrange(61, len(batch))] = rng.randrange(256)
            else:
                del batch[rng.randrange(62, len(batch)):]
                batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
            batch[17:21] = crc32c.crc32c(bytes(batch[21:])).to_bytes(4, "big")
        try:
            decoded = decode_batch(batch, read_header(batch, 0), check_crc=False)
            decodes_keyed = all(r.key is not None for r in decoded.records)
        except CorruptRecordError:
            decoded, decodes_keyed = None, False
        walked = log_append._all_keyed(batch, count)
        if walked:
            assert decodes_keyed
        elif decodes_keyed and not with_headers:
            raise AssertionError(f"a decodable keyed batch without headers was refused: {bytes(batch).hex()}")
        agreed += walked
    assert agreed > 50  # the walk did say yes often enough to be tested


def idempotent_batch() -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=7,
                                        producer_epoch=0, base_sequence=0, batch_size=1 << 20)
    builder.append(0, timestamp=1_000, key=b"k", value=b"v", headers=[])
    return bytes(builder.build())


def claiming_log_append_time(batch: bytes) -> bytes:
    data = bytearray(batch)
    data[22] |= 0x08  # the low byte of attributes: timestamp type LogAppendTime
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


@pytest.mark.parametrize("case", ["two batches", "idempotent", "claims LogAppendTime", "bad CRC", "bad count",
                                  "too large", "future timestamp", "before.max.ms", "compacted, a null key",
                                  "LogAppendTime topic", "short"])
def test_the_plain_batch_path_leaves_every_other_request_to_the_general_path(case: str) -> None:
    now = 1_700_000_000_000
    plain = v2_batch([b"a", b"b"])
    corrupt = bytearray(plain)
    corrupt[-1] ^= 1
    request, config = {
        "two batches": (plain + plain, LogConfig()),
        "idempotent": (idempotent_batch(), LogConfig()),
        "claims LogAppendTime": (claiming_log_append_time(plain), LogConfig()),
        "bad CRC": (bytes(corrupt), LogConfig()),
        "bad count": (with_count(plain, 3), LogConfig()),
        "too large": (plain, LogConfig(max_message_bytes=len(plain) - 1)),
        "future timestamp": (timed_batch([now + HOUR_MS + 1]), LogConfig()),
        "before.max.ms": (plain, LogConfig(message_timestamp_before_max_ms=60_000)),
        "compacted, a null key": (v2_batch([b"a", None]), LogConfig(cleanup_policy="compact")),
        "LogAppendTime topic": (plain, LogConfig(message_timestamp_type="LogAppendTime")),
        "short": (plain[:60], LogConfig()),
    }[case]
    buf = bytearray(request)
    assert log_append.assign_plain_batch(buf, 42, 3, now, config, 0) is None
    assert buf == request  # untouched: the general path decides, and names a broken rule


def test_a_failed_write_on_the_plain_batch_path_takes_the_directory_offline(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock(0))
    log.append_as_leader(v2_batch([b"a"]), 0)
    segment = log.active_segment
    read_only = os.open(segment.log_path, os.O_RDONLY)
    os.dup2(read_only, segment.fd)  # the disk "fails": the next write gets EBADF
    os.close(read_only)
    with pytest.raises(LogDirFailureError) as caught:
        log.append_as_leader(v2_batch([b"b"]), 0)
    assert caught.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR and caught.value.log_dir == str(tmp_path)
    assert isinstance(caught.value.__cause__, OSError)
    assert log.log_end_offset == 1
    log.close_handlers()
