"""Transaction verification (KIP-890 part 1): a partition leader asks the coordinator first.

Theory of operation
-------------------
A transactional producer adds a partition to its transaction (AddPartitionsToTxn, to the
coordinator) and then produces to it (Produce, to the partition leader). The two requests go to
different brokers, so nothing stopped a *late* Produce -- retried after its transaction was
aborted, or sent by a producer that never added the partition -- from landing in the log after
the ABORT marker. Its records then open a transaction the coordinator knows nothing about: no
marker will ever close it, and the partition's last stable offset stays behind it for good. A
*hanging transaction*: every read_committed consumer of the partition stops there.

Since Kafka 3.6 the leader checks before it appends (``transaction.partition.verification.enable``,
default true, a cluster-wide dynamic config). A transactional batch for a producer with no
transaction open in the partition is held back, and the leader asks the transaction
coordinator, with an AddPartitionsToTxn v4 ``verify_only`` request, whether the partition is in
that producer's transaction (Kafka's ``ReplicaManager.handleProduceAppend`` and
``AddPartitionsToTxnManager``). Only if the answer is yes does the batch reach the log. Once the
batch is in, the partition itself remembers the open transaction (its producer state's
``current_txn_first_offset``), so later batches of the same transaction skip the question; after
the marker closes it, the next transaction's first batch is verified again.

When the coordinator is on another broker the answer arrives later, and meanwhile the
transaction may have ended: the coordinator's ABORT marker can reach the partition before its
"yes" does. So each verification leaves a *guard* for its (partition, producer) (Kafka's
``VerificationGuard``); a marker or a transactional batch of that producer written to the
partition removes it, and a batch whose guard is gone when the answer comes is refused
INVALID_TXN_STATE, as if unverified -- unless the producer's transaction is open in the
partition by then (a retry of the same Produce got in first), as Kafka's append allows. Without it the stale "yes" would let the batch open a
transaction after the marker: the very hanging transaction verification is there to prevent.

The coordinator's answer per partition becomes the Produce error as Kafka maps it:

====================================== =================================================
coordinator says                       the producer gets
====================================== =================================================
NONE                                   the append goes ahead
TRANSACTION_ABORTABLE (not in the txn) INVALID_TXN_STATE (Produce <= v10; later versions
                                       keep TRANSACTION_ABORTABLE)
PRODUCER_FENCED                        INVALID_PRODUCER_EPOCH
CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
NETWORK_EXCEPTION (no answer)          NOT_ENOUGH_REPLICAS: retriable for every client,
                                       and no metadata refresh
anything else                          itself
====================================== =================================================

The question travels through :class:`TxnVerificationChannel`, a sans-I/O seam like the
coordinator's marker channel: it asks the coordinator in process
when it is on the same broker (always, on a lone broker); otherwise it queues an
AddPartitionsToTxn v4 request with ``verify_only`` for the coordinator's broker, which the
simulation carries as a message, and the Produce waits for the answer.

Worked example: producer 4000 (epoch 0, ``app-1``) added ``orders-0`` only. Its first batch to
``orders-0`` is verified (NONE) and appended at offset 0; its second is appended without a
question (the transaction is open there). A batch to ``orders-1`` is verified, the coordinator
answers TRANSACTION_ABORTABLE, and Produce v9 answers INVALID_TXN_STATE: ``orders-1`` stays
empty and its last stable offset stays at its high watermark.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalab.broker.coordinator_partitions import coordinator_of
from kafkalab.config.resolve import broker_value
from kafkalab.errors import ErrorCode
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC
from kafkalab.txn.records import TopicPartition

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

VERIFICATION_ENABLE = "transaction.partition.verification.enable"
VERIFY_VERSION = 4  # AddPartitionsToTxn: the first version with verify_only, the brokers' form
# Each Produce connection has one request in flight, so this many waiting verifications means
# something is wrong with the coordinator's broker; more are refused with a retriable error.
VERIFICATIONS_IN_FLIGHT_MAX = 10_000
GUARDS_MAX = 2 * VERIFICATIONS_IN_FLIGHT_MAX  # each waiting verification holds a few
TRANSACTION_ABORTABLE_MIN_PRODUCE_VERSION = 11  # KIP-890: older producers get INVALID_TXN_STATE

VerificationResults = dict[TopicPartition, int]

# Kafka's ReplicaManager: retriable coordinator errors become one every client retries.
_RETRIABLE = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
})


@dataclass(frozen=True, slots=True)
class VerifyRequest:
    """Are ``partitions`` in the open transaction of this producer (id and epoch)?"""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]

    def __post_init__(self) -> None:
        assert self.transactional_id and self.producer_id >= 0, self
        assert self.partitions, "a verification names at least one partition"


@dataclass(frozen=True, slots=True)
class VerificationBatch:
    """One AddPartitionsToTxn ``verify_only`` request for the adapter to deliver to broker
    ``destination``, the coordinator of the transactional id."""

    destination: int
    request_id: int
    body: dict[str, Any]


class TxnVerificationChannel:
    """Kafka's ``AddPartitionsToTxnManager``: asks the coordinator of a transactional id.

    When this broker coordinates the id (always, on a lone broker) its coordinator answers at
    once, in process. Otherwise the question is queued as an AddPartitionsToTxn v4 request for
    the coordinator's broker, which the adapter takes (:meth:`take_requests`) and whose answer
    it hands back (:meth:`on_response`; :meth:`on_failure` when none came). Not thread-safe;
    owned by the broker, drained by the adapter.
    """

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.queued: list[VerificationBatch] = []
        self.in_flight: dict[int, tuple[VerifyRequest, Callable[[VerificationResults], None]]] = {}
        self._request_ids = itertools.count(1)
        # (partition, producer id) -> the guard of the verification under way there
        self.guards: dict[tuple[TopicPartition, int], object] = {}

    def start_guards(self, request: VerifyRequest) -> dict[TopicPartition, object]:
        """The guard of each partition of ``request``, made before the question leaves; one
        already under way for the same producer and partition (a retried Produce) is shared."""
        if len(self.guards) >= GUARDS_MAX:
            self.guards.clear()  # verifications under way then fail safe: their batches are refused
        return {tp: self.guards.setdefault((tp, request.producer_id), object()) for tp in request.partitions}

    def guard_holds(self, tp: TopicPartition, producer_id: int, guard: object) -> bool:
        """True if no marker or batch of ``producer_id`` was written to ``tp`` since ``guard``."""
        return self.guards.get((tp, producer_id)) is guard

    def drop_guards(self, producer_id: int, guards: dict[TopicPartition, object], refused: Collection[
            TopicPartition]) -> None:
        """The batches of ``refused`` partitions will not be written: their guards go."""
        for tp in refused:
            if tp in guards and self.guard_holds(tp, producer_id, guards[tp]):
                del self.guards[(tp, producer_id)]

    def written(self, tp: TopicPartition, producer_id: int) -> None:
        """A transactional batch or a marker of ``producer_id`` is in ``tp``'s log now (Kafka's
        ``clearVerificationStateEntry``)."""
        if self.guards:
            self.guards.pop((tp, producer_id), None)

    def verify(self, request: VerifyRequest, on_complete: Callable[[VerificationResults], None]) -> None:
        broker = self.broker
        partition = broker.txn_coordinator.partition_of(request.transactional_id)
        found = coordinator_of(broker.image, TRANSACTION_STATE_TOPIC, partition)
        # A lone broker coordinates every id, also before its first write creates the topic.
        if found.node_id == broker.settings.node_id or (broker.lone and found.error_code != ErrorCode.NONE):
            on_complete(broker.txn_coordinator.verify_partitions(
                request.transactional_id, request.producer_id, request.producer_epoch, request.partitions))
        elif found.error_code:
            on_complete({tp: found.error_code for tp in request.partitions})
        elif len(self.in_flight) >= VERIFICATIONS_IN_FLIGHT_MAX:
            on_complete({tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in request.partitions})
        else:
            request_id = next(self._request_ids)
            self.in_flight[request_id] = (request, on_complete)
            self.queued.append(VerificationBatch(found.node_id, request_id, _request_body(request)))

    def take_requests(self) -> list[VerificationBatch]:
        """Every request queued since the last call, in order."""
        queued, self.queued = self.queued, []
        return queued

    def on_response(self, request_id: int, response: Any) -> None:
        """The coordinator's AddPartitionsToTxn answer; a partition it left out is unverified."""
        if request_id not in self.in_flight:
            return  # answered already (a duplicate), or given up on
        request, on_complete = self.in_flight.pop(request_id)
        if response.error_code:
            on_complete({tp: response.error_code for tp in request.partitions})
            return
        on_complete({(topic.name, answer.partition_index): answer.partition_error_code
                     for result in response.results_by_transaction
                     if result.transactional_id == request.transactional_id
                     for topic in result.topic_results for answer in topic.results_by_partition})

    def on_failure(self, request_id: int) -> None:
        """No answer (the coordinator's broker is down, the network cut): retriable."""
        if request_id not in self.in_flight:
            return
        request, on_complete = self.in_flight.pop(request_id)
        on_complete({tp: ErrorCode.NETWORK_EXCEPTION for tp in request.partitions})


def _request_body(request: VerifyRequest) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in request.partitions:
        by_topic.setdefault(topic, []).append(index)
    return {"transactions": [{
        "transactional_id": request.transactional_id, "producer_id": request.producer_id,
        "producer_epoch": request.producer_epoch, "verify_only": True,
        "topics": [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]}]}


def verification_enabled(broker: Broker) -> bool:
    """``transaction.partition.verification.enable`` as this broker resolves it now (dynamic)."""
    return broker_value(broker.config_store.layers(), str(broker.settings.node_id), VERIFICATION_ENABLE) is True


def needs_verification(broker: Broker, topic: str, partition: int, producer_id: int) -> bool:
    """True unless ``producer_id`` already has a transaction open in the partition (Kafka's
    ``UnifiedLog.hasOngoingTransaction``): only a transaction's first batch is verified."""
    hosted = broker.topics.partition(topic, partition)
    if hosted is None:
        return False  # the append itself answers UNKNOWN_TOPIC_OR_PARTITION
    entry = hosted.log.producer_state.producers.get(producer_id)
    return entry is None or entry.current_txn_first_offset is None


def produce_error(coordinator_error: int, produce_version: int) -> int:
    """The Produce error for one partition's verification answer (the table above)."""
    if coordinator_error == ErrorCode.TRANSACTION_ABORTABLE and \
            produce_version < TRANSACTION_ABORTABLE_MIN_PRODUCE_VERSION:
        return ErrorCode.INVALID_TXN_STATE
    if coordinator_error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if coordinator_error in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return coordinator_error


def refused(results: VerificationResults, wanted: Sequence[TopicPartition], produce_version: int) -> dict[
        TopicPartition, int]:
    """The partitions whose batch must not be appended, with the Produce error for each; a
    partition the answer left out counts as unverified."""
    errors = {tp: produce_error(results.get(tp, ErrorCode.NETWORK_EXCEPTION), produce_version) for tp in wanted}
    return {tp: error for tp, error in errors.items() if error != ErrorCode.NONE}


__all__ = [
    "TxnVerificationChannel", "VERIFICATION_ENABLE", "VERIFY_VERSION", "VerificationBatch",
    "VerificationResults", "VerifyRequest", "needs_verification", "produce_error", "refused", "verification_enabled",
]
