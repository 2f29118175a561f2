"""What a clean keeps: Kafka's batch and record retention rules, shared by both copy paths.

Theory of operation
-------------------
Kafka's ``LogCleaner.cleanInto`` hands ``MemoryRecords.filterTo`` a filter with two
questions. First, per batch (``checkBatchRetention``)::

    RETAIN_EMPTY  the batch holds the last data offset of a still-active idempotent producer
                  (or is that producer's latest marker when it has no data left), or it is the
                  last batch of this cleaning round (its next offset is the round's upper
                  bound): if all its records go, a 61-byte header with no records stays
    DELETE        an aborted transaction's data batch, or a transaction marker that may go
                  (below): everything goes
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

Transactions (Kafka's ``CleanedTransactionMetadata``). :class:`CleanedTransactions` walks the
batches in offset order, fed with the aborted transactions of the ``.txnindex`` files of the
range being cleaned. A transactional data batch of an aborted transaction is discarded (and
its keys are never mapped, so it cannot hide an older committed value). A marker may go only
once nothing of its transaction is left: an ABORT whose data batches this clean saw stays, and
its ``AbortedTxn`` entry is copied into the cleaned segment's ``.txnindex``; a COMMIT stays
while data batches of its transaction remain. A marker that may go is first kept with a delete
horizon (``now + delete.retention.ms``), as a tombstone is, so a consumer that already read
the data still meets the marker; a clean after the horizon removes it -- unless it is the last
batch of its still-active producer, which stays as an empty batch so the producer's epoch
survives. Example: producer 9 aborts ``a@10 b@11``, marker at 12, ``delete.retention.ms`` 100.
Clean 1 at t=1000 drops 10 and 11, keeps the marker and the index entry. Clean 2 at t=1050
sees no data of it: the marker stays with horizon 1150, the entry is dropped. Clean 3 at 1200
removes the marker.
"""

from __future__ import annotations

import enum
import struct
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from typing import NamedTuple

import crc32c as _crc32c

from kafkalab.records.codec import decode_batch
from kafkalab.records.control import ControlRecord, ControlRecordType, parse_control_record
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
    Buffer,
)
from kafkalab.storage.txn_index import AbortedTxn

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


class CleanedTransactions:
    """Which transactional batches one clean may drop (Kafka's ``CleanedTransactionMetadata``).

    Fed the aborted transactions of the range with :meth:`add_aborted`, then every
    transactional batch in offset order. Not thread-safe; lives for one phase of one clean."""

    __slots__ = ("_pending", "_known", "_aborted", "_committed", "kept_index")

    def __init__(self, aborted: Iterable[AbortedTxn] = ()) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._known: set[AbortedTxn] = set()
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}  # producer -> (txn, a batch seen)
        self._committed: set[int] = set()  # producers with data of an undecided-here transaction
        self.kept_index: list[AbortedTxn] = []  # entries for the cleaned segment's .txnindex
        self.add_aborted(aborted)

    def add_aborted(self, aborted: Iterable[AbortedTxn]) -> None:
        for txn in aborted:
            if txn not in self._known:
                self._known.add(txn)
                heapq.heappush(self._pending, (txn.first_offset, txn.last_offset, txn))

    def _open_aborted_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._aborted.setdefault(txn.producer_id, (txn, False))

    def on_data_batch(self, header: BatchHeader) -> bool:
        """True when the batch belongs to an aborted transaction (Kafka's ``onBatchRead``)."""
        self._open_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        open_abort = self._aborted.get(header.producer_id)
        if open_abort is not None:
            self._aborted[header.producer_id] = (open_abort[0], True)
            return True
        self._committed.add(header.producer_id)
        return False

    def on_marker(self, header: BatchHeader, control: ControlRecord | None) -> bool:
        """True when the control batch may be discarded (Kafka's ``onControlBatchRead``); an
        ABORT that must stay has its index entry added to :attr:`kept_index`."""
        self._open_aborted_up_to(header.last_offset)
        if control is None:
            return True  # an empty control batch: an earlier clean emptied it
        if control.type is ControlRecordType.ABORT:
            open_abort = self._aborted.pop(header.producer_id, None)
            if open_abort is not None and open_abort[1]:
                self.kept_index.append(open_abort[0])
                return False
            return True
        if control.type is ControlRecordType.COMMIT:
            if header.producer_id in self._committed:
                self._committed.discard(header.producer_id)
                return False
            return True
        return False

    def on_batch(self, header: BatchHeader, data: Buffer) -> bool:
        """Either of the above for one batch of ``data`` (the buffer ``header`` points into)."""
        if header.is_control:
            return self.on_marker(header, control_record_of(data, header))
        return self.on_data_batch(header)


def control_record_of(data: Buffer, header: BatchHeader) -> ControlRecord | None:
    records = decode_batch(data, header).records
    return parse_control_record(records[0]) if records else None


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """Everything that decides the fate of batches and records during one clean."""

    now_ms: int
    delete_retention_ms: int
    upper_bound_offset: int  # the round's first uncleanable offset
    active_producers: Mapping[int, LastRecord] = field(default_factory=dict)
    transactions: CleanedTransactions = field(default_factory=CleanedTransactions)


class BatchDecision(NamedTuple):
    """:func:`batch_retention`'s answer: what happens to the batch, whether all its records go,
    and whether it is a marker that may go once a delete horizon is set and has passed."""

    retention: BatchRetention
    discard: bool
    marker_may_go: bool = False


def skip_in_map(header: BatchHeader, data: Buffer, transactions: CleanedTransactions) -> bool:
    """Map phase: control batches and aborted transactions' batches put no keys in the map.
    Every transactional batch must pass here, in offset order."""
    aborted = transactions.on_batch(header, data) if header.is_transactional else False
    return header.is_control or aborted


def is_last_batch_of_active_producer(header: BatchHeader, producers: Mapping[int, LastRecord]) -> bool:
    last = producers.get(header.producer_id)
    if last is None or header.producer_id < 0:
        return False
    if last.last_data_offset is not None:
        return header.last_offset == last.last_data_offset
    return header.is_control and header.producer_epoch == last.producer_epoch


def batch_retention(header: BatchHeader, rule: RetentionRule, data: Buffer) -> BatchDecision:
    """What happens to one batch (``checkBatchRetention``); ``data`` is the buffer the header
    points into. Every transactional batch must pass here, in offset order."""
    can_discard = rule.transactions.on_batch(header, data) if header.is_transactional else False
    if header.is_control:
        horizon = header.delete_horizon_ms
        discard = can_discard and horizon is not None and horizon <= rule.now_ms
    else:
        discard = can_discard
    marker_may_go = can_discard and header.is_control
    if header.magic >= 2 and is_last_batch_of_active_producer(header, rule.active_producers):
        return BatchDecision(BatchRetention.RETAIN_EMPTY, discard, marker_may_go)
    if header.magic >= 2 and header.next_offset == rule.upper_bound_offset:
        return BatchDecision(BatchRetention.RETAIN_EMPTY, discard, marker_may_go)
    return BatchDecision(BatchRetention.DELETE if discard else BatchRetention.DELETE_EMPTY, discard, marker_may_go)


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
