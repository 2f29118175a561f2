"""Produce: validate each partition's record batch, append it, answer per ``acks``.

Checks before the log sees the bytes, each with Kafka's error code:
``acks`` in {-1, 0, 1} (INVALID_REQUIRED_ACKS, for the whole request); the partition exists
(UNKNOWN_TOPIC_OR_PARTITION: Produce never creates a topic -- as in Kafka, only a Metadata
request may, so a topic name corrupted on the way cannot leave a stray topic on disk); the
rules Kafka applies only to what a *client* sends (``AppendOrigin.CLIENT``), each INVALID_RECORD: exactly one v2 batch per
partition, no control batch (markers are the transaction coordinator's), and no producer id
without a base sequence; zstd only from Produce v7 (UNSUPPORTED_COMPRESSION_TYPE). The log
itself checks CRCs (CORRUPT_MESSAGE), sizes (MESSAGE_TOO_LARGE), record counts and, on
compacted topics, keys; a partition in an offline log directory answers KAFKA_STORAGE_ERROR.
After each append the parked fetches watching that partition are re-checked.

With ``acks=0`` there is no response; if any partition failed, the connection is closed so the
producer learns something went wrong (Kafka's ``closeConnection`` for acks=0 errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.handlers.fetch import on_partition_appended
from kafkalab.broker.request import NO_RESPONSE, Request
from kafkalab.broker.topics import TopicError
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.produce import PRODUCE_RESPONSE
from kafkalab.records.header import Compression, iter_headers

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker
    from kafkalab.broker.log_store import PartitionLog

_R = PRODUCE_RESPONSE.cls
_P = _R.TopicProduceResponse.PartitionProduceResponse
LEADER_EPOCH = 0  # a single broker leads every partition in epoch 0
ZSTD_MIN_PRODUCE_VERSION = 7  # KIP-110


class CloseConnection(KafkaError):
    """acks=0 produce failed: the only way to tell the producer is to close the connection."""


def handle_produce(broker: Broker, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    if body.acks not in (-1, 0, 1):
        code = ErrorCode.INVALID_REQUIRED_ACKS
        return _R(responses=tuple(
            _R.TopicProduceResponse(t.name, tuple(_P(index=p.index, error_code=code) for p in t.partition_data))
            for t in body.topic_data
        ))
    topics = []
    failed = False
    for topic in body.topic_data:
        results = []
        for partition in topic.partition_data:
            result = _append(broker, topic.name, partition.index, partition.records, version)
            failed = failed or result.error_code != 0
            results.append(result)
        topics.append(_R.TopicProduceResponse(topic.name, tuple(results)))
    if body.acks == 0:
        if failed:
            raise CloseConnection("a Produce with acks=0 failed on at least one partition")
        return NO_RESPONSE
    return _R(responses=tuple(topics))


def _append(broker: Broker, topic: str, partition: int, records: bytes | memoryview | None, version: int) -> Any:
    try:
        log = _log_for_produce(broker, topic, partition)
        _check_batches(records, version)
        assert records is not None
        info = log.append_as_leader(records, LEADER_EPOCH, in_place=True)  # the frame is ours
    except KafkaError as error:
        broker.on_storage_error(error)
        return _P(index=partition, error_code=error.error_code, error_message=str(error))
    on_partition_appended(broker, topic, partition)
    return _P(
        index=partition, error_code=0, base_offset=info.first_offset,
        log_append_time_ms=info.log_append_time_ms, log_start_offset=info.log_start_offset,
    )


def _log_for_produce(broker: Broker, topic: str, partition: int) -> PartitionLog:
    log = broker.topics.log(topic, partition)
    if log is None:
        raise TopicError(
            f"This server does not host this topic-partition: {topic}-{partition}",
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        )
    broker.check_online(log)
    return log


def _check_batches(records: bytes | memoryview | None, version: int) -> None:
    if not records:
        raise KafkaError("Produce carries no record batch", error_code=ErrorCode.INVALID_RECORD)
    headers = iter(iter_headers(records))
    header = next(headers, None)
    if header is None:
        return  # no complete batch: the log reports the torn bytes as CORRUPT_MESSAGE
    if header.magic != 2:
        raise KafkaError(
            f"Produce v{version} requires magic 2 record batches, got magic {header.magic}",
            error_code=ErrorCode.INVALID_RECORD,
        )
    if next(headers, None) is not None:
        raise KafkaError(  # a v2 producer sends one batch per partition per request
            "One and only one record batch is expected per partition; found more than one",
            error_code=ErrorCode.INVALID_RECORD,
        )
    if header.is_control:
        raise KafkaError("Clients are not allowed to write control records",
                         error_code=ErrorCode.INVALID_RECORD)
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise KafkaError(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}", error_code=ErrorCode.INVALID_RECORD,
        )
    if header.compression == Compression.ZSTD and version < ZSTD_MIN_PRODUCE_VERSION:
        raise KafkaError(
            f"zstd batches need Produce v{ZSTD_MIN_PRODUCE_VERSION}+, got v{version}",
            error_code=ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        )
