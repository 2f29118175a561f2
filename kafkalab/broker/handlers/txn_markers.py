"""WriteTxnMarkers: the partition leader's half of ending a transaction.

Theory of operation
-------------------
When a transaction commits or aborts, its coordinator has already written the decision to
``__transaction_state``; what is left is to tell every partition the transaction wrote to. For
each marker and each of its partitions the leader appends one control batch (COMMIT or ABORT,
:func:`kafkalab.records.control.build_end_txn_marker`) through the same leader append path as
a Produce -- ``Partition.append_records_to_leader`` with ``acks=all`` and origin COORDINATOR --
so the marker gets the leader epoch, replicates to followers like any batch, and passes the
producer-state checks of :mod:`kafkalab.storage.producer_state`. Mirrors Kafka's
``KafkaApis.handleWriteTxnMarkersRequest`` and ``ReplicaManager.appendRecords`` with
``AppendOrigin.COORDINATOR``::

    marker (pid 4000, epoch 2, COMMIT, coordinator epoch 7) for orders-0, orders-3
      orders-0: leader here -> append control batch at offset 145 -> wait for HW > 145 -> NONE
      orders-3: hosted, but a follower here             -> NOT_LEADER_OR_FOLLOWER (6)

Per-partition errors, as Kafka answers them:

* UNKNOWN_TOPIC_OR_PARTITION (3): this broker holds no replica of the partition;
* NOT_LEADER_OR_FOLLOWER (6): it holds one but does not lead it (or lost leadership while
  the marker waited for the ISR);
* INVALID_PRODUCER_EPOCH (47): the marker's producer epoch is older than the partition's;
* TRANSACTION_COORDINATOR_FENCED (52): its coordinator epoch is older than the one of the last
  marker this producer wrote here;
* NOT_ENOUGH_REPLICAS (19) / NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), REQUEST_TIMED_OUT (7) and
  KAFKA_STORAGE_ERROR (56), exactly as for an acks=all Produce.

Calling it in-process (the transaction coordinator on the same node)
--------------------------------------------------------------------
:func:`write_txn_markers` is the whole operation: it appends every marker now and calls
``on_complete(results)`` once -- at once when every partition is settled (always so on a lone
broker, where the HW moves with the append), otherwise when the ISR has caught up or after
``timeout_ms`` (the produce purgatory, on the broker's timer)::

    write_txn_markers(broker, [TxnMarker(4000, 2, 7, commit=True, partitions=(("orders", 0),))],
                      now_ms, on_complete=lambda results: ...)
    # results == [TxnMarkerResult(4000, "orders", 0, ErrorCode.NONE)]

:func:`append_txn_markers` is the lower level: it appends and returns one
:class:`MarkerAppend` per partition, each with the ``check`` that says when an acks=all append
is replicated (None once settled). The handler below uses :func:`write_txn_markers` and only
translates between the request, :class:`TxnMarker` and the response.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalab.broker.delayed_produce import DELAYED_PRODUCES_MAX, Check, DelayedProduce, PendingPartition
from kafkalab.broker.handlers.fetch import on_partition_appended
from kafkalab.broker.request import PENDING, Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.txn_markers import WRITE_TXN_MARKERS_RESPONSE
from kafkalab.records.control import build_end_txn_marker
from kafkalab.storage.producer_state import AppendOrigin

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_R = WRITE_TXN_MARKERS_RESPONSE.cls
ACKS_ALL = -1  # markers are written with acks=all, as Kafka's coordinator writes them
MARKER_TIMEOUT_MS = 30_000  # request.timeout.ms default: how long Kafka waits for the ISR
MARKERS_PER_REQUEST_MAX = 10_000  # a bug guard; the coordinator batches per destination broker


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """One transaction's end, to be written into each of ``partitions`` (topic, index)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        assert self.producer_id >= 0, f"a marker needs a producer id, got {self.producer_id}"


@dataclass(frozen=True, slots=True)
class TxnMarkerResult:
    """The answer for one partition of one marker."""

    producer_id: int
    topic: str
    partition: int
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class MarkerAppend:
    """A partition's marker right after the append: its error so far, the marker's offset
    (-1 if nothing was appended) and, while the ISR has not caught up, how to check it."""

    result: TxnMarkerResult
    offset: int
    check: Check | None


def append_txn_markers(broker: Broker, markers: Sequence[TxnMarker], now_ms: int) -> list[MarkerAppend]:
    """Append each marker to each of its partitions, as leader; see the module docstring."""
    assert len(markers) <= MARKERS_PER_REQUEST_MAX, len(markers)
    return [_append_one(broker, marker, topic, index, now_ms)
            for marker in markers for topic, index in marker.partitions]


def write_txn_markers(
    broker: Broker, markers: Sequence[TxnMarker], now_ms: int,
    on_complete: Callable[[list[TxnMarkerResult]], None], *, timeout_ms: int = MARKER_TIMEOUT_MS,
    name: str = "txn-markers",
) -> None:
    """Append every marker, then call ``on_complete`` once, when each partition is settled.
    Markers that landed in ``__consumer_offsets`` also settle the transaction's pending offset
    commits in the group coordinator first, whoever sent them (Kafka's handler does the same)."""
    on_complete = _completing_offset_commits(broker, markers, on_complete)
    appends = append_txn_markers(broker, markers, now_ms)
    waiting = {slot: PendingPartition(a.check) for slot, a in enumerate(appends) if a.check is not None}
    results = [a.result for a in appends]
    if not waiting:
        on_complete(results)
        return
    if broker.produce_purgatory.watched() >= DELAYED_PRODUCES_MAX:
        for slot in waiting:
            results[slot] = _with_error(results[slot], ErrorCode.REQUEST_TIMED_OUT)
        on_complete(results)
        return

    def respond(errors: dict[Any, ErrorCode]) -> None:
        for slot, error in errors.items():
            if error != ErrorCode.NONE:
                results[slot] = _with_error(results[slot], error)
        on_complete(results)

    operation = DelayedProduce(timeout_ms, waiting, respond, name=name)
    keys = sorted({(appends[slot].result.topic, appends[slot].result.partition) for slot in waiting})
    broker.produce_purgatory.try_complete_else_watch(operation, keys)


def _completing_offset_commits(broker: Broker, markers: Sequence[TxnMarker],
                               on_complete: Callable[[list[TxnMarkerResult]], None]
                               ) -> Callable[[list[TxnMarkerResult]], None]:
    def done(results: list[TxnMarkerResult]) -> None:
        position = 0
        for marker in markers:
            mine = results[position:position + len(marker.partitions)]
            position += len(marker.partitions)
            landed = [r.partition for r in mine if r.topic == OFFSETS_TOPIC and r.error_code == ErrorCode.NONE]
            if landed:
                broker.group_coordinator.offsets.complete_transaction(marker.producer_id, marker.commit, landed)
        on_complete(results)
    return done


def handle_write_txn_markers(broker: Broker, request: Request) -> Any:
    body = request.body
    if len(body.markers) > MARKERS_PER_REQUEST_MAX or any(m.producer_id < 0 for m in body.markers):
        raise KafkaError(f"WriteTxnMarkers with {len(body.markers)} markers or a negative producer id",
                         error_code=ErrorCode.INVALID_REQUEST)
    markers = [
        TxnMarker(m.producer_id, m.producer_epoch, m.coordinator_epoch, m.transaction_result,
                  tuple((t.name, index) for t in m.topics for index in t.partition_indexes))
        for m in body.markers
    ]
    header, connection_id = request.header, request.connection_id
    answered: list[Any] = []

    def on_complete(results: list[TxnMarkerResult]) -> None:
        body = _response(markers, results)
        if not answered:  # answered at once: the dispatcher sends the return value
            answered.append(body)
            return
        broker.respond(connection_id, ApiKey.WRITE_TXN_MARKERS, header.api_version, header.correlation_id, body)

    write_txn_markers(broker, markers, request.now_ms, on_complete,
                      name=f"txn-markers-{connection_id}-{header.correlation_id}")
    if answered:
        return answered[0]
    answered.append(None)  # from now on on_complete sends the response itself
    return PENDING


def _append_one(broker: Broker, marker: TxnMarker, topic: str, index: int, now_ms: int) -> MarkerAppend:
    hosted = broker.topics.partition(topic, index)
    try:
        if hosted is None:
            raise KafkaError(f"This server does not host this topic-partition: {topic}-{index}",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        broker.check_online(hosted.log)
        batch = build_end_txn_marker(
            commit=marker.commit, offset=0, timestamp_ms=now_ms, producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch, coordinator_epoch=marker.coordinator_epoch)
        info = hosted.partition.append_records_to_leader(
            bytearray(batch), ACKS_ALL, now_ms, in_place=True, origin=AppendOrigin.COORDINATOR)
    except KafkaError as error:
        broker.on_storage_error(error)
        return MarkerAppend(TxnMarkerResult(marker.producer_id, topic, index, ErrorCode(error.error_code)), -1, None)
    on_partition_appended(broker, topic, index)
    broker.txn_verification.written((topic, index), marker.producer_id)  # a KIP-890 guard is void now
    check = hosted.partition.check_enough_replicas_reach_offset
    required_offset = info.last_offset + 1
    done, outcome = check(required_offset)
    result = TxnMarkerResult(marker.producer_id, topic, index, outcome if done else ErrorCode.NONE)
    return MarkerAppend(result, info.last_offset, None if done else lambda: check(required_offset))


def _with_error(result: TxnMarkerResult, error: ErrorCode) -> TxnMarkerResult:
    return TxnMarkerResult(result.producer_id, result.topic, result.partition, error)


def _response(markers: Sequence[TxnMarker], results: list[TxnMarkerResult]) -> Any:
    """One result entry per marker, topics in the order the request named them."""
    out, slot = [], 0
    for marker in markers:
        by_topic: dict[str, list[Any]] = {}
        for _ in marker.partitions:
            result = results[slot]
            slot += 1
            by_topic.setdefault(result.topic, []).append(
                _R.WritableTxnMarkerResult.WritableTxnMarkerTopicResult.WritableTxnMarkerPartitionResult(
                    partition_index=result.partition, error_code=result.error_code))
        topics = tuple(_R.WritableTxnMarkerResult.WritableTxnMarkerTopicResult(name=name, partitions=tuple(parts))
                       for name, parts in by_topic.items())
        out.append(_R.WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    return _R(markers=tuple(out))
