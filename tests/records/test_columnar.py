"""The numba fast path against the reference decoder and kafka-python."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.errors import CorruptRecordError, InvalidRecordError
from kafkalab.records import Header, Record, build_batch, decode_records, iter_batches, iter_headers
from kafkalab.records.columnar import decode_columns, encode_columns

maybe_bytes = st.none() | st.binary(max_size=40)


@st.composite
def batches(draw) -> tuple[bytes, list[Record]]:
    data, expected, offset = b"", [], 0
    for _ in range(draw(st.integers(1, 4))):
        count = draw(st.integers(1, 6))
        records = [Record(offset + i, draw(st.integers(0, 2**40)), draw(maybe_bytes), draw(maybe_bytes),
                          tuple(draw(st.lists(st.builds(Header, st.text(max_size=4), maybe_bytes), max_size=2))))
                   for i in range(count)]
        codec = draw(st.sampled_from([0, 0, 1, 2, 3, 4]))
        data += build_batch(records, compression=codec)
        expected += records
        offset += count
    return data, expected


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_columns_match_reference_decoder(case) -> None:
    data, expected = case
    columns = decode_columns(data)
    assert columns.to_records() == decode_records(data) == expected


def test_columns_of_kafka_python_batches() -> None:
    rng = random.Random(7)
    data = b""
    for batch in range(3):
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        for i in range(50):
            builder.append(i, timestamp=1000 + i, key=None if i % 5 == 0 else b"k%d" % i,
                           value=rng.randbytes(rng.randrange(100)), headers=[("h", b"1")] if i % 3 else [])
        data += bytes(builder.build())
    columns = decode_columns(data)
    assert len(columns) == 150
    assert columns.to_records() == decode_records(data)


def test_log_append_time_and_partial_trailing_batch() -> None:
    records = [Record(i, 5 + i, None, b"v") for i in range(3)]
    data = build_batch(records, timestamp_type=1, log_append_time_ms=999)
    columns = decode_columns(data + data[:40])
    assert list(columns.timestamp) == [999, 999, 999]


def test_encode_columns_is_byte_identical_to_reference_builder() -> None:
    rng = random.Random(3)
    n = 2_000
    keys = [None if i % 9 == 0 else b"key-%d" % rng.randrange(1000) for i in range(n)]
    values = [None if i % 13 == 0 else rng.randbytes(rng.randrange(300)) for i in range(n)]
    timestamps = [1_700_000_000_000 + rng.randrange(-10_000, 10_000) for _ in range(n)]
    data = encode_columns(keys, values, timestamps, base_offset=100, batch_bytes=4096)
    headers = list(iter_headers(data))
    assert len(headers) > 10 and all(h.size_bytes <= 4096 for h in headers)
    rebuilt = b"".join(
        build_batch([Record(o, timestamps[o - 100], keys[o - 100], values[o - 100])
                     for o in range(h.base_offset, h.last_offset + 1)])
        for h in headers)
    assert rebuilt == data


def test_oversized_record_gets_its_own_batch() -> None:
    data = encode_columns([None, None, None], [b"a", b"x" * 10_000, b"b"], [1, 2, 3], batch_bytes=1024)
    assert [h.records_count for h in iter_headers(data)] == [1, 1, 1]


def test_rejects_inconsistent_columns_and_legacy_input() -> None:
    with pytest.raises(InvalidRecordError):
        encode_columns([None], [b"a", b"b"], [1, 2])
    with pytest.raises(InvalidRecordError):
        decode_columns(build_batch([Record(0, 1, None, b"a")], magic=1))


def test_record_count_beyond_region_is_rejected_before_allocation() -> None:
    data = bytearray(build_batch([Record(0, 1, None, b"a")]))
    data[57:61] = (2**31 - 1).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="cannot fit"):
        decode_columns(bytes(data), check_crc=False)


@settings(max_examples=1_000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_columnar_fuzz_only_raises_corrupt_record(data) -> None:
    base = bytearray(build_batch([Record(i, i, b"k" if i % 2 else None, b"value-%d" % i,
                                         (Header("h", b"x"),)) for i in range(4)]))
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(base) - 1))
        base[pos] = data.draw(st.integers(0, 255))
    try:
        columns = decode_columns(bytes(base), check_crc=False)
        reference = [r for b in iter_batches(bytes(base), check_crc=False) for r in b.records]
        assert columns.to_records() == reference
    except CorruptRecordError:
        pass


def test_encode_spans_reads_repeated_spans_of_one_buffer() -> None:
    from kafkalab.records.columnar import ByteSpans, encode_spans

    table = np.frombuffer(b"user-0user-1user-22", np.uint8)
    ranks = np.array([2, 0, 2, 1])
    starts, lengths = np.array([0, 6, 12]), np.array([6, 6, 7])
    keys = ByteSpans(table, starts[ranks], lengths[ranks])
    values = ByteSpans(table, np.array([0, 0, 3, 0]), np.array([3, -1, 0, 19]))
    data = encode_spans(keys, values, [5, 6, 7, 8], base_offset=10)
    expected = encode_columns([b"user-22", b"user-0", b"user-22", b"user-1"],
                              [b"use", None, b"", b"user-0user-1user-22"], [5, 6, 7, 8], base_offset=10)
    assert data == expected
    decoded = [(r.offset, r.key, r.value) for r in decode_records(data)]
    assert decoded == [(10, b"user-22", b"use"), (11, b"user-0", None), (12, b"user-22", b""),
                       (13, b"user-1", b"user-0user-1user-22")]


def test_encode_spans_rejects_spans_outside_the_buffer() -> None:
    from kafkalab.records.columnar import ByteSpans

    with pytest.raises(InvalidRecordError, match="outside its 4-byte buffer"):
        ByteSpans(np.zeros(4, np.uint8), np.array([2]), np.array([3]))
    with pytest.raises(InvalidRecordError, match="2 span starts but 1 lengths"):
        ByteSpans(np.zeros(4, np.uint8), np.array([0, 1]), np.array([1]))
