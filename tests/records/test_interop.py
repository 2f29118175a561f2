"""Cross-check against kafka-python's independent codec, in both directions, all magics and codecs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalab.records import Header, Record, build_batch, decode_records, iter_headers, verify_crc

CODECS = {0: [0, 1, 2, 3], 1: [0, 1, 2, 3], 2: [0, 1, 2, 3, 4]}
CASES = [(magic, codec) for magic, codecs in CODECS.items() for codec in codecs]
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

maybe_bytes = st.none() | st.binary(max_size=60)
header_st = st.builds(Header, st.text(max_size=8), maybe_bytes)


@st.composite
def record_lists(draw, magic: int) -> list[Record]:
    count = draw(st.integers(1, 12))
    base_ts = draw(st.integers(0, 2**41))
    records = []
    for i in range(count):
        ts = base_ts + draw(st.integers(0, 10_000)) if magic else -1
        headers = tuple(draw(st.lists(header_st, max_size=3))) if magic == 2 else ()
        records.append(Record(i, ts, draw(maybe_bytes), draw(maybe_bytes), headers))
    return records


def kp_build(records: list[Record], magic: int, codec: int) -> bytes:
    if magic == 2:
        builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 22)
        for r in records:
            builder.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value,
                           headers=[(h.key, h.value) for h in r.headers])
    else:
        builder = LegacyRecordBatchBuilder(magic, codec, 1 << 22)
        for r in records:
            builder.append(r.offset, timestamp=r.timestamp if magic else None, key=r.key, value=r.value)
    return bytes(builder.build())


def kp_decode(data: bytes) -> list[tuple]:
    out = []
    memory = MemoryRecords(data)
    while (batch := memory.next_batch()) is not None:
        for r in batch:
            ts = -1 if r.timestamp is None else r.timestamp
            headers = tuple((k, v) for k, v in getattr(r, "headers", []) or [])
            out.append((r.offset, ts, r.key, r.value, headers))
    return out


def as_tuples(records: list[Record]) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers))
            for r in records]


@pytest.mark.parametrize("magic, codec", CASES)
@SETTINGS
@given(data=st.data())
def test_kafka_python_batches_decode_identically(magic: int, codec: int, data) -> None:
    records = data.draw(record_lists(magic))
    encoded = kp_build(records, magic, codec)
    assert as_tuples(decode_records(encoded)) == kp_decode(encoded)
    assert all(verify_crc(encoded, h) for h in iter_headers(encoded))


@pytest.mark.parametrize("magic, codec", CASES)
@SETTINGS
@given(data=st.data())
def test_kafkalab_batches_decode_in_kafka_python(magic: int, codec: int, data) -> None:
    records = data.draw(record_lists(magic))
    encoded = build_batch(records, magic=magic, compression=codec)
    assert kp_decode(encoded) == as_tuples(records)
    assert decode_records(encoded) == records


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_uncompressed_bytes_are_identical_to_kafka_python(magic: int) -> None:
    records = [Record(i, 1_700_000_000_000 + 3 * i if magic else -1, b"key-%d" % i if i % 2 else None,
                      b"value-%d" % i, (Header("trace", b"t%d" % i),) if magic == 2 else ())
               for i in range(5)]
    # kafka-python's producer stamps partitionLeaderEpoch 0 where Kafka's writes -1.
    assert build_batch(records, magic=magic, partition_leader_epoch=0) == kp_build(records, magic, 0)


def test_v2_producer_fields_match_kafka_python_bytes() -> None:
    records = [Record(i, 1_000 + i, b"k", b"v") for i in range(3)]
    builder = DefaultRecordBatchBuilder(2, 0, True, 4242, 7, 100, 1 << 20)
    for r in records:
        builder.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=[])
    ours = build_batch(records, producer_id=4242, producer_epoch=7, base_sequence=100,
                       is_transactional=True, partition_leader_epoch=0)
    assert ours == bytes(builder.build())
