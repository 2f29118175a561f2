"""The records a transaction coordinator writes to ``__transaction_state``, in Kafka's schemas.

Theory of operation
-------------------
One compacted record per transactional id holds everything the coordinator must not forget
(Kafka's ``TransactionLog``). Like ``__consumer_offsets`` records, the key starts with an int16
record type and the value with an int16 version (Kafka's ``CoordinatorRecordSerde``)::

    key   = [int16 0][TransactionalId]                              TransactionLogKey, type 0
    value = [int16 0][int64 ProducerId][int16 ProducerEpoch][int32 TransactionTimeoutMs]
            [int8 TransactionStatus][TransactionPartitions: [topic, [int32 partition]] or null]
            [int64 TransactionLastUpdateTimestampMs][int64 TransactionStartTimestampMs]

Value version 1 (flexible, written by Kafka once ``transaction.version`` 2 is finalized,
KIP-890) adds tagged fields: the previous and next producer ids and the client's transaction
version. kafkalab writes version 0, as Kafka does at transaction version 0/1, and reads both.
``TransactionStatus`` is the state's id (:class:`kafkalab.txn.state.TransactionState`); an Empty
transaction stores null partitions. A null value (a tombstone) is a transactional id that
expired (``transactional.id.expiration.ms``).

These declarations are the only ones: the coordinator writes and replays with them, and
``kafkalab dump-log --transaction-log-decoder`` prints with them.

Worked example: ``app-1`` Ongoing with producer id 1000, epoch 2, timeout 60 000 ms and
``orders`` partitions 0 and 3 is the key ``0000 0005 "app-1"`` (9 bytes) and a 57-byte value
``0000 00000000000003e8 0002 0000ea60 01 00000001 0006 "orders" 00000002 00000000 00000003
<last update ms> <start ms>``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from kafkalab.errors import CorruptRecordError, KafkaError
from kafkalab.protocol.schema import f, message
from kafkalab.protocol.types import Reader, Writer

TRANSACTION_LOG_KEY = message("TransactionLogKey", valid="0", flexible="none", fields=[
    f("transactional_id", "string"),
])

TRANSACTION_LOG_VALUE = message("TransactionLogValue", valid="0-1", flexible="1+", fields=[
    f("producer_id", "int64"),
    f("previous_producer_id", "int64", "1+", tag=0, default=-1),
    f("next_producer_id", "int64", "1+", tag=1, default=-1),
    f("producer_epoch", "int16"),
    f("transaction_timeout_ms", "int32"),
    f("transaction_status", "int8"),
    f("transaction_partitions", "[]PartitionsSchema", nullable="0+", fields=[
        f("topic", "string"),
        f("partition_ids", "[]int32"),
    ]),
    f("transaction_last_update_timestamp_ms", "int64"),
    f("transaction_start_timestamp_ms", "int64"),
    f("client_transaction_version", "int16", "1+", tag=2, default=0),
])

TRANSACTION_LOG_TYPE = 0  # the only record type of __transaction_state
KEY_VERSION = 0
VALUE_VERSION = 0  # Kafka's transactionLogValueVersion() below transaction.version 2
KEYS_CACHED = 4096  # encoded keys kept: the transactional ids a busy coordinator serves

TransactionLogValue = TRANSACTION_LOG_VALUE.cls
PartitionsSchema = TransactionLogValue.PartitionsSchema
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """A decoded ``__transaction_state`` value: what one transactional id looked like."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1


@functools.lru_cache(maxsize=KEYS_CACHED)
def transaction_log_key(transactional_id: str) -> bytes:
    """A producer writes its id's record several times per transaction: each key is encoded once."""
    writer = Writer()
    writer.int16(TRANSACTION_LOG_TYPE)
    TRANSACTION_LOG_KEY.encode_into(writer, TRANSACTION_LOG_KEY.cls(transactional_id=transactional_id), KEY_VERSION)
    return writer.to_bytes()


def transaction_log_value(record: TxnRecord) -> bytes:
    """Version 0; an Empty transaction (no partitions) stores null, as Kafka's ``valueToBytes``."""
    writer = Writer()
    writer.int16(VALUE_VERSION)
    value = TransactionLogValue(
        producer_id=record.producer_id, producer_epoch=record.producer_epoch,
        transaction_timeout_ms=record.timeout_ms, transaction_status=record.status,
        transaction_partitions=_grouped(record.partitions) if record.partitions else None,
        transaction_last_update_timestamp_ms=record.last_update_ms,
        transaction_start_timestamp_ms=record.start_ms)
    TRANSACTION_LOG_VALUE.encode_into(writer, value, VALUE_VERSION)
    return writer.to_bytes()


def _grouped(partitions: Iterable[TopicPartition]) -> tuple[object, ...]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple(PartitionsSchema(topic=t, partition_ids=tuple(ids)) for t, ids in by_topic.items())


def decode_key(data: bytes) -> str:
    """The transactional id of a record key; CorruptRecordError for another record type."""
    reader = Reader(data)
    record_type = _prefix(reader, data, "TransactionLogKey")
    if record_type != TRANSACTION_LOG_TYPE:
        raise CorruptRecordError(f"__transaction_state record type {record_type} is not {TRANSACTION_LOG_TYPE}",
                                 position=0)
    try:
        return str(TRANSACTION_LOG_KEY.read(reader, KEY_VERSION).transactional_id)
    except KafkaError as error:
        raise CorruptRecordError(f"__transaction_state key: {error}", position=0) from None


def decode_value(data: bytes) -> TxnRecord:
    reader = Reader(data)
    try:
        value = TRANSACTION_LOG_VALUE.read(reader, _prefix(reader, data, "TransactionLogValue"))
    except CorruptRecordError:
        raise
    except KafkaError as error:
        raise CorruptRecordError(f"__transaction_state value: {error}", position=0) from None
    partitions = frozenset((p.topic, i) for p in value.transaction_partitions or () for i in p.partition_ids)
    return TxnRecord(value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
                     value.transaction_status, partitions, value.transaction_last_update_timestamp_ms,
                     value.transaction_start_timestamp_ms, value.previous_producer_id)


def _prefix(reader: Reader, data: bytes, what: str) -> int:
    if len(data) < 2:
        raise CorruptRecordError(f"{what} of {len(data)} bytes is too short for its int16 version", position=0)
    return reader.int16()
