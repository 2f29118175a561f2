"""Idempotent producers on the partition side: sequence checks and duplicate detection.

Mirrors Kafka's ``ProducerStateEntry``, ``BatchMetadata`` and ``ProducerAppendInfo`` (KIP-98,
with the KIP-360 rules for producers the partition has forgotten). The files that hold this
state across restarts are :mod:`kafkalab.storage.producer_snapshot` (format) and
:mod:`kafkalab.storage.producer_state_manager` (snapshots, recovery, expiration).

Theory of operation
-------------------
An idempotent producer stamps every batch with its producer id, its epoch and the sequence
number of the batch's first record; sequence numbers count records per partition, from 0, and
wrap from INT32_MAX back to 0. For each producer id the leader remembers its epoch and the
last five batches it appended (five is the most a producer keeps in flight,
``max.in.flight.requests.per.connection``)::

    producer 7000, epoch 0
      batch   first seq  last seq  first offset  last offset  max timestamp
      #1          0          4          100           104        1700000000000
      #2          5          9          130           134        1700000000050   <- last

Worked example with that state. A batch from producer 7000, epoch 0, arrives:

* sequences 5..9 again (the producer retried after losing the answer): a *duplicate* of #2.
  Nothing is appended; the producer is told offsets 130..134, as if it had been.
* sequences 10..14: in sequence (10 == 9 + 1): appended, and becomes the new last batch.
* sequences 12..14: a gap (10 and 11 never came): OUT_OF_ORDER_SEQUENCE_NUMBER (45), nothing
  appended. A retry of a batch older than the five remembered is out of order too (and after a
  restart from a snapshot, which keeps only the last batch, so is a retry of #1).
* epoch 1, sequence 0: the producer bumped its epoch (InitProducerId again); sequences restart
  at 0 and the remembered batches are forgotten. Epoch 1 with sequence 3 is out of order.
* epoch 0 again after the producer moved to epoch 1 (a zombie): INVALID_PRODUCER_EPOCH
  (47). The produce path answers 47 at every Produce version; PRODUCER_FENCED (90) is the
  transaction coordinator's answer, never a partition's.
* a producer id the partition has never seen (or forgot, by expiration): any sequence is
  accepted. Since Kafka 2.5 (KAFKA-8710, part of KIP-360, which lets producers recover by bumping
  their epoch) a partition no longer answers UNKNOWN_PRODUCER_ID (59); clients handle it only
  for older brokers.

Replicated batches (a follower's appends, or replaying the log on recovery) skip the sequence
checks -- the leader made them -- and an older epoch there is taken as it is, as in Kafka.

Transactions (KIP-98). A transactional batch opens the producer's transaction on this partition
at its first offset, unless one is open already; a COMMIT or ABORT marker the transaction
coordinator has the leader append (origin COORDINATOR) closes it, and the append reports a
:class:`CompletedTxn` from the transaction's first offset to the marker's offset. A marker is
refused with INVALID_PRODUCER_EPOCH (47) when its producer epoch is older than the partition's,
and with TRANSACTION_COORDINATOR_FENCED (52) when its coordinator epoch is older than the last
marker's (a coordinator that lost ``__transaction_state`` leadership). Markers are not checked
for sequences: their batch carries base sequence -1. Continuing the example, producer 7000
appends transactional offsets 140..144, then a COMMIT marker at offset 145 with coordinator
epoch 3 completes ``CompletedTxn(7000, 140, 145, is_aborted=False)``; a later marker with
coordinator epoch 2 is fenced.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.records.control import ControlRecord, ControlRecordType
from kafkalab.records.header import (
    INT32_MAX,
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    BatchHeader,
    decrement_sequence,
)
from kafkalab.storage.log_append import LogAppendInfo

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN; the producer's in-flight cap
NO_TIMESTAMP = -1


class OutOfOrderSequenceError(KafkaError):
    """A batch whose first sequence does not follow the producer's last one."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    """A batch from an epoch older than the one the partition knows (a zombie producer)."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    """A non-transactional batch while the producer has a transaction open on the partition."""

    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(KafkaError):
    """A transaction marker from a coordinator epoch older than the one the partition knows."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class AppendOrigin(enum.Enum):
    """Who is appending, which decides how much is checked (Kafka's ``AppendOrigin``)."""

    CLIENT = "client"  # a producer: epoch and sequence checks, duplicate detection
    COORDINATOR = "coordinator"  # transaction markers: epoch and coordinator epoch checks
    REPLICATION = "replication"  # a follower or recovery: the leader already checked


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a COMMIT or ABORT marker ended on this partition (Kafka's ``CompletedTxn``):
    its producer, its first data offset and the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool

    def __post_init__(self) -> None:
        assert self.first_offset < self.last_offset, self  # the marker follows the data


class BatchMetadata(NamedTuple):
    """One remembered batch of a producer (Kafka's ``BatchMetadata``). Immutable."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp_ms: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """What a partition knows of one producer: its epoch, its last five batches, and the
    transaction fields the snapshot format carries. Not thread-safe; owned by one partition's
    :class:`~kafkalab.storage.producer_state_manager.ProducerStateManager`."""

    __slots__ = ("producer_id", "producer_epoch", "coordinator_epoch", "last_timestamp_ms",
                 "current_txn_first_offset", "batches")

    def __init__(
        self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, *, coordinator_epoch: int = -1,
        last_timestamp_ms: int = NO_TIMESTAMP, current_txn_first_offset: int | None = None,
        batches: Sequence[BatchMetadata] = (),
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp_ms = last_timestamp_ms
        self.current_txn_first_offset = current_txn_first_offset
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producer_id={self.producer_id}, epoch={self.producer_epoch}, "
                f"batches={list(self.batches)}, coordinator_epoch={self.coordinator_epoch}, "
                f"current_txn_first_offset={self.current_txn_first_offset})")

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def carried_over(self) -> ProducerStateEntry:
        """A copy with the same epoch and transaction fields but no batches: where an append's
        new batches collect before they are known to be valid."""
        return ProducerStateEntry(
            self.producer_id, self.producer_epoch, coordinator_epoch=self.coordinator_epoch,
            last_timestamp_ms=self.last_timestamp_ms, current_txn_first_offset=self.current_txn_first_offset,
        )

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """A new epoch forgets the old epoch's batches: its sequences restart at 0."""
        if producer_epoch == self.producer_epoch:
            return False
        self.batches.clear()
        self.producer_epoch = producer_epoch
        return True

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp_ms: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp_ms))  # maxlen drops the oldest
        self.last_timestamp_ms = timestamp_ms

    def update(self, newer: ProducerStateEntry) -> None:
        """Take over an append's results (Kafka's ``ProducerStateEntry.update``)."""
        self.maybe_update_producer_epoch(newer.producer_epoch)
        self.batches.extend(newer.batches)
        self.coordinator_epoch = newer.coordinator_epoch
        self.current_txn_first_offset = newer.current_txn_first_offset
        self.last_timestamp_ms = newer.last_timestamp_ms

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        """The remembered batch with exactly this epoch and sequence range, if any."""
        if header.producer_epoch != self.producer_epoch:
            return None
        first_seq, last_seq = header.base_sequence, header.last_sequence
        for batch in self.batches:
            if batch.last_seq == last_seq and batch.first_seq == first_seq:
                return batch
        return None


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """``next_seq`` follows ``last_seq``, wrapping from INT32_MAX to 0."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerAppendInfo:
    """The checks and new state of one producer's batches in one append (Kafka's
    ``ProducerAppendInfo``). Nothing changes in ``current`` until the manager's ``update``.
    Not thread-safe; lives for one append."""

    __slots__ = ("producer_id", "current", "origin", "updated", "started_txn_first_offsets", "completed_txns")

    def __init__(self, producer_id: int, current: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.carried_over()
        self.started_txn_first_offsets: list[int] = []
        self.completed_txns: list[CompletedTxn] = []

    def append(self, header: BatchHeader, timestamp_ms: int, control: ControlRecord | None = None) -> None:
        """Check one batch (already given its offsets) and record it; ``control`` is the decoded
        record of a control batch. A control batch other than COMMIT/ABORT changes nothing."""
        if header.is_control:
            if control is not None and control.is_end_txn_marker and control.coordinator_epoch is not None:
                self.append_end_txn_marker(
                    header.producer_epoch, control.coordinator_epoch, header.base_offset, timestamp_ms,
                    aborted=control.type is ControlRecordType.ABORT)
            return
        self.append_data_batch(
            header.producer_epoch, header.base_sequence, header.last_sequence, timestamp_ms,
            header.base_offset, header.last_offset, header.is_transactional,
        )

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, timestamp_ms: int,
                          first_offset: int, last_offset: int, is_transactional: bool) -> None:
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        updated = self.updated
        updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, timestamp_ms)
        if updated.current_txn_first_offset is not None and not is_transactional:
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {self.producer_id} at offset "
                f"{first_offset}: its transaction from offset {updated.current_txn_first_offset} is open"
            )
        if updated.current_txn_first_offset is None and is_transactional:
            updated.current_txn_first_offset = first_offset
            self.started_txn_first_offsets.append(first_offset)

    def append_end_txn_marker(
        self, epoch: int, coordinator_epoch: int, offset: int, timestamp_ms: int, *, aborted: bool
    ) -> None:
        """A COMMIT or ABORT marker at ``offset`` closes the producer's transaction on this
        partition (Kafka's ``appendEndTxnMarker``). A transaction with data here becomes a
        :class:`CompletedTxn` in :attr:`completed_txns`; a marker with no open transaction (the
        coordinator writes to every partition it was told of) completes nothing."""
        self._check_producer_epoch(epoch, offset)
        updated = self.updated
        if coordinator_epoch < updated.coordinator_epoch and self.origin is not AppendOrigin.REPLICATION:
            raise TransactionCoordinatorFencedError(
                f"invalid coordinator epoch for producer {self.producer_id} at offset {offset}: "
                f"{coordinator_epoch} (zombie), {updated.coordinator_epoch} (current)"
            )
        if updated.current_txn_first_offset is not None:
            self.completed_txns.append(
                CompletedTxn(self.producer_id, updated.current_txn_first_offset, offset, aborted))
        updated.maybe_update_producer_epoch(epoch)
        updated.coordinator_epoch = coordinator_epoch
        updated.current_txn_first_offset = None
        updated.last_timestamp_ms = timestamp_ms

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch and self.origin is not AppendOrigin.REPLICATION:
            raise InvalidProducerEpochError(
                f"epoch of producer {self.producer_id} at offset {offset} is {epoch}, smaller "
                f"than the last seen epoch {self.updated.producer_epoch}"
            )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            # A new epoch must start at sequence 0 -- unless the producer is new to this
            # partition (no epoch known), which may start anywhere (KIP-360).
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch {epoch} of producer {self.producer_id} "
                    f"at offset {offset}: {first_seq} (it must be 0; current epoch "
                    f"{updated.producer_epoch})"
                )
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # With no epoch known (the producer's records all left the log), any sequence goes.
        if current.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {self.producer_id} at offset "
                f"{offset}: {first_seq} (incoming), {last_seq} (current end sequence number)"
            )


def has_producer_ids(headers: Sequence[BatchHeader]) -> bool:
    """Whether any batch is idempotent or transactional: the one test per batch that a plain
    producer's append pays."""
    for header in headers:
        if header.producer_id >= 0:
            return True
    return False


def duplicate_append_info(duplicate: BatchMetadata, log_start_offset: int) -> LogAppendInfo:
    """The answer to a retried batch: the offsets it got the first time, nothing appended.
    As in Kafka, the log append time reported is the original batch's timestamp."""
    return LogAppendInfo(
        first_offset=duplicate.first_offset, last_offset=duplicate.last_offset,
        max_timestamp=duplicate.timestamp_ms, offset_of_max_timestamp=duplicate.last_offset,
        log_append_time_ms=duplicate.timestamp_ms, log_start_offset=log_start_offset,
        valid_bytes=0, records_count=0, batches_count=0,
    )
