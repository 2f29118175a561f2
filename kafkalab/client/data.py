"""Produce, Fetch and ListOffsets for one partition over a :class:`BrokerConnection`.

What the console tools need and no more: send one batch, read records from an offset, and
resolve ``earliest``/``latest``/a timestamp to an offset. A fuller teaching producer (accumulator,
linger, retries) and consumer (groups, positions) build on the same requests later.

Worked example: ``produce_batch(conn, "orders", 0, [Record(0, now_ms, b"k", b"v")], acks=1)``
builds one magic-2 batch with :func:`kafkalab.records.build_batch`, sends Produce, and returns the
base offset the broker assigned, say 41 (:func:`send_batch` also returns the batch's encoded size,
70 bytes for that one record, which is what a producer's ``batch-size-avg`` reports); ``fetch_records(conn, "orders", 0, 41)`` then returns
that record with offset 41 and the partition's high watermark, 42.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.client.connection import BrokerConnection, check_error
from kafkalab.protocol import SCHEMAS
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import Compression, Record, iter_batches
from kafkalab.records import build_batch

CONSUMER_REPLICA_ID = -1
FETCH_MAX_BYTES = 50 * 1024 * 1024  # fetch.max.bytes default
PARTITION_FETCH_MAX_BYTES = 1024 * 1024  # max.partition.fetch.bytes default
PRODUCE_TIMEOUT_MS = 30_000  # request.timeout.ms default

CODECS: dict[str, Compression] = {
    "none": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4, "zstd": Compression.ZSTD,
}


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """What one produced batch cost and where it went: ``batch_bytes`` is the encoded batch as
    sent (compressed, header included), ``base_offset`` the broker's answer (-1 with acks=0)."""

    base_offset: int
    batch_bytes: int


def send_batch(conn: BrokerConnection, topic: str, partition: int, records: list[Record], *,
               acks: int = 1, compression: Compression = Compression.NONE) -> ProduceResult:
    """Send ``records`` as one batch; return its base offset and encoded size."""
    request = SCHEMAS[ApiKey.PRODUCE][0].cls
    data_cls = request.TopicProduceData
    batch = build_batch(records, compression=compression)
    body = request(transactional_id=None, acks=acks, timeout_ms=PRODUCE_TIMEOUT_MS, topic_data=(
        data_cls(name=topic, partition_data=(data_cls.PartitionProduceData(index=partition, records=batch),)),))
    response = conn.request(ApiKey.PRODUCE, body, expect_response=acks != 0)
    if response is None:
        return ProduceResult(-1, len(batch))
    (topic_response,) = response.responses
    (result,) = topic_response.partition_responses
    check_error(result.error_code, f"produce to {topic}-{partition}", getattr(result, "error_message", None))
    return ProduceResult(int(result.base_offset), len(batch))


def produce_batch(conn: BrokerConnection, topic: str, partition: int, records: list[Record], *,
                  acks: int = 1, compression: Compression = Compression.NONE) -> int:
    """Send ``records`` as one batch; return the base offset (-1 with ``acks=0``)."""
    return send_batch(conn, topic, partition, records, acks=acks, compression=compression).base_offset


def list_offset(conn: BrokerConnection, topic: str, partition: int, timestamp_ms: int, *,
                isolation_level: int = 0) -> int:
    """ListOffsets: -2 earliest, -1 latest, else the first offset with timestamp >= it (-1: none).
    ``isolation_level`` 1 (read_committed) bounds the answer by the last stable offset."""
    request = SCHEMAS[ApiKey.LIST_OFFSETS][0].cls
    topic_cls = request.ListOffsetsTopic
    body = request(replica_id=CONSUMER_REPLICA_ID, isolation_level=isolation_level, topics=(topic_cls(
        name=topic, partitions=(topic_cls.ListOffsetsPartition(partition_index=partition, timestamp=timestamp_ms),)),))
    (topic_response,) = conn.request(ApiKey.LIST_OFFSETS, body).topics
    (result,) = topic_response.partitions
    check_error(result.error_code, f"list offsets of {topic}-{partition} at {timestamp_ms}")
    return int(result.offset)


def fetch_records(conn: BrokerConnection, topic: str, partition: int, offset: int, *,
                  max_wait_ms: int = 500, partition_max_bytes: int = PARTITION_FETCH_MAX_BYTES,
                  ) -> tuple[list[Record], int]:
    """Records at or after ``offset`` (whole batches may start earlier; those are dropped) and
    the high watermark. An empty list means nothing new arrived within ``max_wait_ms``."""
    request = SCHEMAS[ApiKey.FETCH][0].cls
    topic_cls = request.FetchTopic
    body = request(replica_id=CONSUMER_REPLICA_ID, max_wait_ms=max_wait_ms, min_bytes=1,
                   max_bytes=FETCH_MAX_BYTES, isolation_level=0, topics=(topic_cls(
                       topic=topic, partitions=(topic_cls.FetchPartition(
                           partition=partition, fetch_offset=offset,
                           partition_max_bytes=partition_max_bytes),)),))
    response: Any = conn.request(ApiKey.FETCH, body)
    check_error(getattr(response, "error_code", 0), f"fetch from {topic}-{partition}")
    (topic_response,) = response.responses
    (result,) = topic_response.partitions
    check_error(result.error_code, f"fetch from {topic}-{partition} at offset {offset}")
    records = []
    for batch in iter_batches(result.records or b""):
        if batch.header.is_control:
            continue
        records += [r for r in batch.records if r.offset >= offset]
    return records, int(result.high_watermark)
