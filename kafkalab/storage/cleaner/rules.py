"""What a clean keeps: Kafka's batch and record retention rules, shared by both copy paths.

Theory of operation
-------------------
Kafka's ``LogCleaner.cleanInto`` hands ``MemoryRecords.filterTo`` a filter with two
questions. First, per batch (``checkBatchRetention``)::

    RETAIN_EMPTY  the batch holds the last data offset of a still-active idempotent producer
                  (or is that producer's latest marker when it has no data left), or it is the
                  last batch of this cleaning round (its next offset is the round's upper
                  bound): if all its records go, a 61-byte header with no records stays
    DELETE        an aborted transaction's batch: everything goes (the transactions hook)
    DELETE_EMPTY  the usual case: the batch goes only if no record survives

Then, per record (``shouldRetainRecord``), in order:

1. a control record (transaction marker) is kept;
2. a record past the map's latest offset is kept (the map never saw it);
3. an unkeyed record goes;
4. a record older than its key's mapped offset goes;
5. a tombstone (null value) goes once its batch's delete horizon has passed (v2), or, for a
   v0/v1 message, once its segment is older than the legacy delete horizon.

A batch that keeps every record and needs no new delete horizon is copied byte for byte; any
other survivor is rebuilt with the same magic, codec, producer id, epoch, base sequence, base
offset and *last offset* (Kafka's ``overrideLastOffset``: the last sequence of a producer must
not move). The first clean that keeps a tombstone stamps ``deleteHorizonMs = now +
delete.retention.ms`` into the batch (KIP-534).

Worked example: producer 7 (active, last data offset 4) wrote ``k@3 k@4`` in one batch and
``k@5`` came later from another producer. The map says ``k -> 5``, so both records go; the
batch is producer 7's last, so it stays as an empty header with base offset 3 and last offset
4, and producer 7's next sequence check still finds its last sequence.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

import crc32c as _crc32c

from kafkalab.records.header import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
    V2_HEADER,
    V2_HEADER_SIZE,
    V2_LAST_OFFSET_DELTA_OFFSET,
    BatchHeader,
)

_LAST_OFFSET_DELTA = struct.Struct(">i")
_CRC = struct.Struct(">I")


class BatchRetention(enum.Enum):
    """Kafka's ``RecordFilter.BatchRetention``."""

    DELETE = "delete"
    DELETE_EMPTY = "delete-empty"
    RETAIN_EMPTY = "retain-empty"


@dataclass(frozen=True, slots=True)
class LastRecord:
    """An active producer's last data offset (None: only markers left) and epoch (Kafka's
    ``LastRecord``, from ``UnifiedLog.lastRecordsOfActiveProducers``)."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """Everything that decides the fate of batches and records during one clean."""

    now_ms: int
    delete_retention_ms: int
    upper_bound_offset: int  # the round's first uncleanable offset
    active_producers: Mapping[int, LastRecord] = field(default_factory=dict)


def is_aborted(header: BatchHeader) -> bool:
    """Hook for the transactions issue: True for a batch of an aborted transaction.

    Kafka learns this from the aborted-transaction index while cleaning
    (``CleanedTransactionMetadata``); until kafkalab has transactions no batch is aborted, so
    no data batch is discarded and no marker is ever removed."""
    return False


def is_last_batch_of_active_producer(header: BatchHeader, producers: Mapping[int, LastRecord]) -> bool:
    last = producers.get(header.producer_id)
    if last is None or header.producer_id < 0:
        return False
    if last.last_data_offset is not None:
        return header.last_offset == last.last_data_offset
    return header.is_control and header.producer_epoch == last.producer_epoch


def batch_retention(header: BatchHeader, rule: RetentionRule) -> tuple[BatchRetention, bool]:
    """``(retention, discard records)`` for one batch (``checkBatchRetention``)."""
    can_discard = is_aborted(header)
    if header.is_control:
        horizon = header.delete_horizon_ms
        discard = can_discard and horizon is not None and horizon <= rule.now_ms
    else:
        discard = can_discard
    if header.magic >= 2 and is_last_batch_of_active_producer(header, rule.active_producers):
        return BatchRetention.RETAIN_EMPTY, discard
    if header.magic >= 2 and header.next_offset == rule.upper_bound_offset:
        return BatchRetention.RETAIN_EMPTY, discard
    return (BatchRetention.DELETE if discard else BatchRetention.DELETE_EMPTY), discard


def retains_deletes(header: BatchHeader, now_ms: int, retain_legacy_deletes: bool) -> bool:
    """May a tombstone of this batch stay? v2: until the delete horizon; v0/v1: per segment."""
    if header.magic < 2:
        return retain_legacy_deletes
    horizon = header.delete_horizon_ms
    return horizon is None or now_ms < horizon


REBUILT_ATTRIBUTES_MASK = COMPRESSION_CODEC_MASK | TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK


def rebuilt_attributes(attributes: int, has_delete_horizon: bool) -> int:
    """A rebuilt v2 batch's attributes: codec, timestamp type, transactional and control bits
    kept, the delete-horizon bit set when it carries one."""
    return (attributes & REBUILT_ATTRIBUTES_MASK) | (DELETE_HORIZON_FLAG_MASK if has_delete_horizon else 0)


def empty_batch(header: BatchHeader) -> bytes:
    """A batch with no records that keeps the producer fields and offsets of ``header``
    (Kafka's ``DefaultRecordBatch.writeEmptyHeader``): uncompressed, no delete horizon, both
    timestamps set to the original max timestamp."""
    attributes = rebuilt_attributes(header.attributes, False) & ~COMPRESSION_CODEC_MASK
    raw = bytearray(V2_HEADER.pack(
        header.base_offset, V2_HEADER_SIZE - LOG_OVERHEAD, header.partition_leader_epoch, 2, 0,
        attributes, header.last_offset - header.base_offset, header.max_timestamp,
        header.max_timestamp, header.producer_id, header.producer_epoch, header.base_sequence, 0,
    ))
    _CRC.pack_into(raw, V2_CRC_OFFSET, _crc32c.crc32c(bytes(raw[V2_ATTRIBUTES_OFFSET:])))
    return bytes(raw)


def override_last_offset(batch: bytes, header: BatchHeader) -> bytes:
    """``batch`` (one rebuilt v2 batch) with the original batch's last offset delta and a
    fresh CRC (Kafka's ``MemoryRecordsBuilder.overrideLastOffset``)."""
    delta = header.last_offset - header.base_offset
    if _LAST_OFFSET_DELTA.unpack_from(batch, V2_LAST_OFFSET_DELTA_OFFSET)[0] == delta:
        return batch
    raw = bytearray(batch)
    _LAST_OFFSET_DELTA.pack_into(raw, V2_LAST_OFFSET_DELTA_OFFSET, delta)
    _CRC.pack_into(raw, V2_CRC_OFFSET, _crc32c.crc32c(memoryview(raw)[V2_ATTRIBUTES_OFFSET:]))
    return bytes(raw)
