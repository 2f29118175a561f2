"""Shallow header reading, cross-checked against kafka-python's builders and readers."""

from __future__ import annotations

import mmap

import numpy as np

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkalab.errors import CorruptRecordError
from kafkalab.records import (
    Compression,
    TimestampType,
    iter_headers,
    patch_base_offset,
    patch_partition_leader_epoch,
    read_header,
    verify_crc,
)


def kp_v2(count: int = 3, *, codec: int = 0, base_offset: int = 0, pid: int = -1,
          epoch: int = -1, seq: int = -1, txn: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, txn, pid, epoch, seq, 1 << 20)
    for i in range(count):
        value = b"v" * (i + 200 * bool(codec))  # long enough that compression pays
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=value, headers=[])
    buf = bytearray(builder.build())
    buf[0:8] = base_offset.to_bytes(8, "big")
    return bytes(buf)


def kp_legacy(magic: int, offset: int, *, codec: int = 0, count: int = 1) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i in range(count):
        value = b"x" * (1 + 200 * bool(codec))
        builder.append(offset + i, timestamp=1_600_000_000_000 + i if magic else None, key=None, value=value)
    return bytes(builder.build())


def test_v2_header_fields_match_kafka_python() -> None:
    data = kp_v2(5, base_offset=100, pid=42, epoch=3, seq=7, txn=True)
    header = read_header(data, 0)
    ref = DefaultRecordBatch(data)
    assert (header.base_offset, header.last_offset) == (100, 104)
    assert header.size_bytes == len(data) == ref.size_in_bytes
    assert header.records_count == 5 and header.magic == 2
    assert header.crc == ref.crc
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 7)
    assert header.last_sequence == 11 and header.next_offset == 105
    assert header.is_transactional and not header.is_control
    assert header.base_timestamp == 1_700_000_000_000
    assert header.max_timestamp == 1_700_000_000_004
    assert header.timestamp_type is TimestampType.CREATE_TIME
    assert header.compression is Compression.NONE
    assert verify_crc(data, header)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_v2_compressed_header(codec: int) -> None:
    data = kp_v2(4, codec=codec)
    header = read_header(data, 0)
    assert header.compression == Compression(codec)
    assert header.records_count == 4
    assert verify_crc(data, header)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_header(magic: int) -> None:
    data = kp_legacy(magic, 9)
    header = read_header(data, 0)
    assert (header.base_offset, header.last_offset, header.magic) == (9, 9, magic)
    assert header.records_count == 1 and header.partition_leader_epoch == -1
    assert header.producer_id == -1 and header.last_sequence == -1
    assert header.max_timestamp == (1_600_000_000_000 if magic else -1)
    assert header.timestamp_type == (TimestampType.CREATE_TIME if magic else TimestampType.NO_TIMESTAMP_TYPE)
    assert verify_crc(data, header)


def test_legacy_compressed_wrapper_counts_as_one_entry() -> None:
    data = kp_legacy(1, 0, codec=1, count=3)
    headers = list(iter_headers(data))
    assert len(headers) == 1
    assert headers[0].compression is Compression.GZIP
    assert headers[0].records_count == -1
    # A producer leaves the wrapper offset at 0; the broker later stamps the last inner offset.
    assert headers[0].last_offset == 0


def test_walker_stops_at_partial_trailing_entry_and_reports_remaining() -> None:
    one = kp_v2(2)
    two = kp_v2(3, base_offset=2)
    for cut in range(1, len(two)):
        buf = one + two[:cut]
        walker = iter_headers(buf)
        headers = list(walker)
        assert [h.base_offset for h in headers] == [0]
        assert walker.valid_end == len(one)
        assert walker.remaining_bytes == cut


def test_walker_walks_mixed_magics_over_mmap(tmp_path) -> None:
    parts = [kp_legacy(0, 0), kp_legacy(1, 1), kp_v2(3, base_offset=2)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        walker = iter_headers(mm)
        headers = list(walker)
        assert [h.magic for h in headers] == [0, 1, 2]
        assert [h.position for h in headers] == [0, len(parts[0]), len(parts[0]) + len(parts[1])]
        assert all(verify_crc(mm, h) for h in headers)
        assert walker.remaining_bytes == 0


def test_patch_base_offset_and_epoch_keep_crc_valid() -> None:
    buf = bytearray(kp_v2(3))
    patch_base_offset(buf, 0, 1_000)
    patch_partition_leader_epoch(buf, 0, 17)
    header = read_header(buf, 0)
    assert (header.base_offset, header.last_offset, header.partition_leader_epoch) == (1_000, 1_002, 17)
    assert verify_crc(buf, header)
    assert DefaultRecordBatch(bytes(buf)).validate_crc()


def test_patch_refuses_legacy_entry() -> None:
    with pytest.raises(CorruptRecordError):
        patch_base_offset(bytearray(kp_legacy(1, 0)), 0, 5)


def test_crc_detects_a_flipped_payload_bit() -> None:
    buf = bytearray(kp_v2(3))
    buf[-1] ^= 0x01
    assert not verify_crc(buf, read_header(buf, 0))


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (lambda b: b.__setitem__(16, 7), "unknown magic"),
        (lambda b: b.__setitem__(slice(8, 12), (-5).to_bytes(4, "big", signed=True)), "size"),
        (lambda b: b.__setitem__(slice(8, 12), (30).to_bytes(4, "big")), "minimum"),
        (lambda b: b.__setitem__(22, 7), "codec"),
    ],
)
def test_corrupt_prefix_raises_typed_error(mutate, reason: str) -> None:
    buf = bytearray(kp_v2(2))
    mutate(buf)
    with pytest.raises(CorruptRecordError, match=reason) as info:
        list(iter_headers(buf))
    assert info.value.position == 0


def test_read_header_on_truncated_buffer_raises() -> None:
    data = kp_v2(2)
    for cut in (0, 5, 16, 40, len(data) - 1):
        with pytest.raises(CorruptRecordError):
            read_header(data[:cut], 0)


def test_max_batch_bytes_limit() -> None:
    data = kp_v2(10)
    with pytest.raises(CorruptRecordError, match="exceeds the limit"):
        list(iter_headers(data, max_batch_bytes=len(data) - 1))
    assert len(list(iter_headers(data, max_batch_bytes=len(data)))) == 1


def test_v2_header_layout_is_kafka_pythons():
    """The one declaration of the v2 header (struct, offsets, the prefix storage scans, the
    columnar dtype) agrees with kafka-python's DefaultRecordBatch layout."""
    from kafkalab.records import header as h
    from kafkalab.records.columnar import V2_HEADER_DTYPE

    assert h.V2_HEADER.format == DefaultRecordBatch.HEADER_STRUCT.format.replace(" ", "")
    assert h.V2_ATTRIBUTES_OFFSET == DefaultRecordBatch.ATTRIBUTES_OFFSET
    assert h.V2_CRC_OFFSET == DefaultRecordBatch.CRC_OFFSET
    batch = kp_v2(3, base_offset=100)
    fields = dict(zip([name for name, _ in h.V2_HEADER_FIELDS], h.V2_HEADER.unpack_from(batch)))
    kp = DefaultRecordBatch(batch)
    assert (fields["base_offset"], fields["last_offset_delta"], fields["max_timestamp"],
            fields["records_count"]) == (kp.base_offset, kp.last_offset_delta, kp.max_timestamp, 3)
    assert h.V2_PREFIX.unpack_from(batch) == (100, fields["batch_length"], 2, 2, kp.max_timestamp)
    row = np.frombuffer(batch[: h.V2_HEADER_SIZE], V2_HEADER_DTYPE)[0]
    assert tuple(row.tolist()) == tuple(fields.values())
