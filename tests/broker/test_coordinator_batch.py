"""The coordinators' batches: the bytes ``build_batch`` gives for the same records, and what
kafka-python (an independent decoder) reads in them."""

from __future__ import annotations

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkalab.broker.group_log import coordinator_batch
from kafkalab.records import Record, build_batch

NOW_MS = 1_700_000_000_000
CASES = [
    [],
    [(b"\x00\x01key", b"value")],
    [(b"k1", b"v1"), (b"k2", None), (b"k3", b"")],  # a tombstone and an empty value
    [(bytes(range(200)), bytes(300))],  # lengths past one varint byte
]


@pytest.mark.parametrize("records", CASES)
@pytest.mark.parametrize("producer", [None, (4000, 3)])
def test_a_coordinator_batch_is_the_batch_build_batch_gives(records, producer):
    expected = build_batch([Record(42 + i, NOW_MS, key, value) for i, (key, value) in enumerate(records)],
                           base_offset=42, producer_id=producer[0] if producer else -1,
                           producer_epoch=producer[1] if producer else -1, is_transactional=producer is not None)
    assert coordinator_batch(records, 42, NOW_MS, producer) == expected


@pytest.mark.parametrize("producer", [None, (4000, 3)])
def test_kafka_python_reads_a_coordinator_batch(producer):
    data = coordinator_batch(CASES[2], 42, NOW_MS, producer)
    batch = MemoryRecords(data).next_batch()
    assert batch.validate_crc() and batch.is_transactional == (producer is not None)
    assert (batch.producer_id, batch.producer_epoch) == (producer or (-1, -1))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == [
        (42, NOW_MS, b"k1", b"v1"), (43, NOW_MS, b"k2", None), (44, NOW_MS, b"k3", b"")]
