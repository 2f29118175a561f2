"""Golden vectors: one record (key b"k", value b"v", timestamp 1000, offset 0) in each magic,
written out field by field from Kafka's format description; CRCs double-checked independently."""

from __future__ import annotations

import zlib

from kafka.record._crc32c import crc as kp_crc32c
from kafka.record.memory_records import MemoryRecords

from kafkalab.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_end_txn_marker,
    decode_records,
    iter_batches,
    parse_control_record,
    read_header,
)
from kafkalab.records.varint import encode_varint, encode_varlong, read_varint

V2 = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "0000003a"  # batchLength 58 = 70 - 12
    "ffffffff"  # partitionLeaderEpoch -1
    "02"  # magic 2
    "716a6189"  # crc (CRC-32C over the bytes from attributes on)
    "0000"  # attributes: no codec, CreateTime, not transactional, not control
    "00000000"  # lastOffsetDelta 0
    "00000000000003e8"  # baseTimestamp 1000
    "00000000000003e8"  # maxTimestamp 1000
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # recordsCount 1
    "10"  # record length 8 (zig-zag)
    "00"  # record attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "02" "6b"  # keyLength 1, "k"
    "02" "76"  # valueLength 1, "v"
    "00"  # headerCount 0
)
V1 = bytes.fromhex(
    "0000000000000000"  # offset 0
    "00000018"  # size 24: crc 4 + magic 1 + attributes 1 + timestamp 8 + key 4+1 + value 4+1
    "e4e321bc"  # crc (CRC-32 over magic..end)
    "01"  # magic 1
    "00"  # attributes: no codec, CreateTime
    "00000000000003e8"  # timestamp 1000
    "00000001" "6b"  # key length 1, "k"
    "00000001" "76"  # value length 1, "v"
)
V0 = bytes.fromhex(
    "0000000000000000"  # offset 0
    "00000010"  # size 16: crc 4 + magic 1 + attributes 1 + key 4+1 + value 4+1
    "1fecd70a"  # crc
    "00"  # magic 0
    "00"  # attributes
    "00000001" "6b"
    "00000001" "76"
)


def test_v2_golden_bytes() -> None:
    assert build_batch([Record(0, 1000, b"k", b"v")]) == V2
    assert kp_crc32c(V2[21:]) == 0x716A6189
    assert decode_records(V2) == [Record(0, 1000, b"k", b"v")]


def test_v1_golden_bytes() -> None:
    assert build_batch([Record(0, 1000, b"k", b"v")], magic=1) == V1
    assert zlib.crc32(V1[16:]) == 0xE4E321BC
    assert decode_records(V1) == [Record(0, 1000, b"k", b"v")]


def test_v0_golden_bytes() -> None:
    assert build_batch([Record(0, -1, b"k", b"v")], magic=0) == V0
    assert zlib.crc32(V0[16:]) == 0x1FECD70A
    assert decode_records(V0) == [Record(0, -1, b"k", b"v")]
    assert all(MemoryRecords(raw).next_batch().validate_crc() for raw in (V0, V1, V2))


def test_varint_table_from_the_module_docstring() -> None:
    table = {0: "00", -1: "01", 1: "02", -2: "03", 63: "7e", 64: "8001", 300: "d804"}
    for value, hex_bytes in table.items():
        assert encode_varint(value).hex() == hex_bytes
        assert read_varint(bytes.fromhex(hex_bytes), 0, len(hex_bytes) // 2) == (value, len(hex_bytes) // 2)
    assert encode_varlong(-(2**63)).hex() == "ff" * 9 + "01"


def test_commit_marker_is_78_bytes_with_key_4_value_6() -> None:
    marker = build_end_txn_marker(commit=True, offset=10, timestamp_ms=5_000, producer_id=1000,
                                  producer_epoch=2, coordinator_epoch=7)
    header = read_header(marker, 0)
    assert header.size_bytes == 78 and header.is_control and header.is_transactional
    assert header.base_sequence == -1 and header.producer_id == 1000
    (record,) = decode_records(marker)
    assert (record.key_size, record.value_size) == (4, 6)
    assert record.key == bytes.fromhex("00000001")  # version 0, type 1 (COMMIT)
    assert record.value == bytes.fromhex("0000" "00000007")  # version 0, coordinator epoch 7
    control = parse_control_record(record)
    assert control.type is ControlRecordType.COMMIT and control.coordinator_epoch == 7


def test_log_append_time_overrides_record_timestamps() -> None:
    records = [Record(0, 10, None, b"a"), Record(1, 20, None, b"b")]
    for magic, codec in ((2, 0), (2, 1), (1, 0), (1, 1)):
        data = build_batch(records, magic=magic, compression=codec, timestamp_type=1,
                           log_append_time_ms=999)
        assert [r.timestamp for r in decode_records(data)] == [999, 999]
        assert all(b.timestamp_type == 1 for b in iter_batches(data))


def test_delete_horizon_flag_and_base_timestamp() -> None:
    data = build_batch([Record(0, 1_000, b"k", None)], delete_horizon_ms=86_400_000)
    header = read_header(data, 0)
    assert header.has_delete_horizon and header.delete_horizon_ms == 86_400_000
    assert decode_records(data)[0].timestamp == 1_000


def test_v1_wrapper_carries_last_inner_offset() -> None:
    records = [Record(40 + i, 100 + i, None, b"x" * 50) for i in range(3)]
    data = build_batch(records, magic=1, compression=1)
    header = read_header(data, 0)
    assert header.last_offset == 42 and header.max_timestamp == 102
    assert [r.offset for r in decode_records(data)] == [40, 41, 42]
