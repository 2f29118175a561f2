"""Timestamp rules of Produce and ListOffsets, checked with kafka-python's record codec.

Batches are built and read back by kafka-python (an independent encoder and decoder); the
expected answers are those of Kafka's ``LogValidator`` and ``UnifiedLog.fetchOffsetByTimestamp``.
"""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalab.errors import ErrorCode
from tests.broker._harness import Harness, records_of

MAX_TIMESTAMP = -3  # ListOffsetsRequest.MAX_TIMESTAMP (KIP-734)
LIST_OFFSETS_VERSION = 7  # the first version that may ask for MAX_TIMESTAMP
GZIP = 1
NOW_MS = 1_000_000  # the harness's ManualClock
PRODUCE_VERSION = 9  # error_message is carried from v8


@pytest.fixture
def harness(tmp_path):
    return Harness(tmp_path)


def timed_batch(timestamps: list[int], compression: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for index, timestamp in enumerate(timestamps):
        builder.append(index, timestamp=timestamp, key=b"k", value=b"v%d" % index, headers=[])
    return bytes(builder.build())


def claim_log_append_time(data: bytes, max_timestamp: int | None = None) -> bytes:
    """Set attributes bit 3 (LogAppendTime) as a producer might, optionally the max timestamp,
    and recompute the CRC-32C over [21, end) so only the claim is wrong."""
    buf = bytearray(data)
    (attributes,) = struct.unpack_from(">h", buf, 21)
    struct.pack_into(">h", buf, 21, attributes | 0x08)
    if max_timestamp is not None:
        struct.pack_into(">q", buf, 35, max_timestamp)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def stored_batches(harness: Harness, topic: str) -> list:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    data = records_of(harness.call(1, 11, body).responses[0].partitions[0])
    records, batches = MemoryRecords(data), []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        batches.append(batch)
    return batches


def max_timestamp_offset(harness: Harness, topic: str) -> tuple[int, int, int]:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": MAX_TIMESTAMP}]}]}
    [answer] = harness.call(2, LIST_OFFSETS_VERSION, body).topics[0].partitions
    return answer.error_code, answer.timestamp, answer.offset


# -- a producer claiming LogAppendTime --------------------------------------------------------

def test_log_append_time_claim_without_a_timestamp_is_refused_on_a_create_time_topic(harness):
    harness.create_topic("t")
    answer = harness.produce("t", 0, claim_log_append_time(timed_batch([5_000, 6_000]), -1), version=PRODUCE_VERSION)
    assert answer.error_code == ErrorCode.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime" in answer.error_message
    assert stored_batches(harness, "t") == []


def test_log_append_time_claim_is_refused_on_a_log_append_time_topic(harness):
    harness.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
    answer = harness.produce("t", 0, claim_log_append_time(timed_batch([5_000])), version=PRODUCE_VERSION)
    assert answer.error_code == ErrorCode.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime" in answer.error_message


def test_log_append_time_claim_with_a_timestamp_is_stored_as_create_time(harness):
    """Kafka checks the claimed stamp as a CreateTime and rewrites the batch's type."""
    harness.create_topic("t")
    assert harness.produce("t", 0, claim_log_append_time(timed_batch([5_000, 6_000]))).error_code == 0
    [batch] = stored_batches(harness, "t")
    assert batch.timestamp_type == 0 and batch.max_timestamp == 6_000


def test_log_append_time_claim_is_held_to_the_create_time_bounds(harness):
    harness.create_topic("t", configs={"message.timestamp.after.max.ms": "1000"})
    answer = harness.produce("t", 0, claim_log_append_time(timed_batch([5_000]), NOW_MS + 60_000))
    assert answer.error_code == ErrorCode.INVALID_TIMESTAMP


# -- ListOffsets MAX_TIMESTAMP answers a record, not a batch ---------------------------------

def test_max_timestamp_names_the_record_inside_its_batch(harness):
    harness.create_topic("t")
    harness.produce("t", 0, timed_batch([10, 30, 20]))
    assert max_timestamp_offset(harness, "t") == (0, 30, 1)  # was 2, the batch's last offset


def test_max_timestamp_prefers_the_first_record_and_batch_with_it(harness):
    harness.create_topic("t")
    harness.produce("t", 0, timed_batch([10, 30, 30, 20]))
    harness.produce("t", 0, timed_batch([30, 5]))
    assert max_timestamp_offset(harness, "t") == (0, 30, 1)


@pytest.mark.parametrize("compression", [0, GZIP], ids=["uncompressed", "gzip"])
def test_max_timestamp_under_log_append_time_is_the_batch_first_offset(harness, compression):
    harness.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
    harness.produce("t", 0, timed_batch([1, 2, 3], compression))
    harness.advance(5)
    harness.produce("t", 0, timed_batch([4, 5, 6], compression))
    assert max_timestamp_offset(harness, "t") == (0, NOW_MS + 5, 3)


def test_max_timestamp_of_an_empty_partition_is_no_offset(harness):
    harness.create_topic("t")
    assert max_timestamp_offset(harness, "t") == (0, -1, -1)
