"""One transactional id's state in the coordinator, and Kafka's rules for its producer epoch.

Theory of operation
-------------------
:class:`TransactionMetadata` is Kafka's ``TransactionMetadata``: the producer id and epoch the
id currently owns, its transaction timeout, its state and, while a transaction is open, the
partitions it wrote to. The coordinator changes it only after the matching record is in
``__transaction_state`` (:meth:`TransactionMetadata.apply`), so what is in memory is always
what a reload would rebuild.

The epoch is how producers are fenced. Every InitProducerId bumps it; a producer whose requests
carry an older epoch gets PRODUCER_FENCED. When the epoch reaches 32766 (``Short.MaxValue - 1``,
Kafka's ``isEpochExhausted``) the next InitProducerId hands out a *new producer id* at epoch 0
instead: 32767 is kept back so the coordinator can always fence once more.

KIP-360 lets a producer that hit an error keep its transactional id: it sends its current
producer id and epoch with InitProducerId. :func:`bumped_epochs` then accepts three cases
(Kafka's ``prepareIncrementProducerEpoch``): the epoch is the current one (bump it), the epoch
is the *previous* one (a retry of a bump whose answer was lost: answer the current epoch
again), or the id has no epoch yet; anything else is PRODUCER_FENCED.

Worked example: ``app-1`` at producer id 4000, epoch 5 (last epoch -1). A new producer's
InitProducerId (no expected epoch) moves it to epoch 6, last epoch -1. A KIP-360 retry with
(4000, 5) after that is fenced: 5 is neither 6 nor the last epoch. Had the first call been
(4000, 5) itself, the result would be epoch 6 with last epoch 5, and its retry (4000, 5) would
get epoch 6 again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalab.errors import ErrorCode
from kafkalab.txn.records import TopicPartition, TxnRecord
from kafkalab.txn.state import TransactionState

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
EPOCH_MAX = 32767  # Short.MaxValue
S = TransactionState


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``isEpochExhausted``: the last epoch a producer may be given has been given."""
    return epoch >= EPOCH_MAX - 1


@dataclass(slots=True)
class TransactionMetadata:
    """A transactional id's producer and transaction. Not thread-safe; owned by the coordinator."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID
    timeout_ms: int = 60_000
    state: TransactionState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    pending_write: bool = False  # a record is on its way to the ISR (Kafka's pendingState)

    def record(self, state: TransactionState, now_ms: int, **changes: object) -> TxnRecord:
        """The ``__transaction_state`` value of this id after moving to ``state``."""
        values = {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                  "timeout_ms": self.timeout_ms, "partitions": frozenset(self.partitions),
                  "start_ms": self.start_ms, "previous_producer_id": self.previous_producer_id}
        values.update(changes)
        assert values["producer_id"] >= 0 and values["producer_epoch"] >= 0, values  # type: ignore[operator]
        return TxnRecord(status=state.id, last_update_ms=now_ms, **values)  # type: ignore[arg-type]

    def apply(self, record: TxnRecord, last_producer_epoch: int | None = None) -> None:
        """Take on ``record``, once it is in the log (Kafka's ``completeTransitionTo``)."""
        self.producer_id = record.producer_id
        self.previous_producer_id = record.previous_producer_id
        self.producer_epoch = record.producer_epoch
        if last_producer_epoch is not None:
            self.last_producer_epoch = last_producer_epoch
        self.timeout_ms = record.timeout_ms
        self.state = TransactionState.from_id(record.status)
        self.partitions = set(record.partitions)
        self.start_ms = record.start_ms
        self.last_update_ms = record.last_update_ms

    @classmethod
    def loaded(cls, transactional_id: str, record: TxnRecord) -> TransactionMetadata:
        """As replayed from ``__transaction_state`` (the last epoch is not stored at v0)."""
        metadata = cls(transactional_id, record.producer_id)
        metadata.apply(record)
        return metadata


def valid_producer_id(metadata: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: may a producer that names (``producer_id``, ``epoch``) re-initialize this id?
    Yes if the id has no epoch yet, if it names the current producer id, or if it names the
    previous one at an exhausted epoch (a retry after the producer id was rotated)."""
    return (metadata.producer_epoch == NO_PRODUCER_EPOCH or producer_id == metadata.producer_id
            or (producer_id == metadata.previous_producer_id and epoch_exhausted(epoch)))


def bumped_epochs(metadata: TransactionMetadata, expected_epoch: int | None) -> tuple[int, int] | ErrorCode:
    """(new epoch, new last epoch) for InitProducerId, or PRODUCER_FENCED."""
    assert not epoch_exhausted(metadata.producer_epoch), metadata
    bumped = metadata.producer_epoch + 1
    if expected_epoch is None:
        return bumped, NO_PRODUCER_EPOCH
    if metadata.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == metadata.producer_epoch:
        return bumped, metadata.producer_epoch
    if expected_epoch == metadata.last_producer_epoch:
        return metadata.producer_epoch, metadata.last_producer_epoch
    return ErrorCode.PRODUCER_FENCED
