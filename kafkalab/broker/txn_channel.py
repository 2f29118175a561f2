"""The transaction coordinator's marker channels: in process on a lone broker, WriteTxnMarkers in a cluster.

Both implement :class:`kafkalab.txn.markers.MarkerChannel`.

:class:`InProcessMarkerChannel` calls :func:`kafkalab.broker.handlers.txn_markers.write_txn_markers`,
the same leader append a WriteTxnMarkers request gets, so a lone broker needs no request to
itself. A marker that lands in a ``__consumer_offsets`` partition also ends the transaction's
pending offset commits there (Kafka's ``GroupCoordinator.onTransactionCompleted``, called by the
WriteTxnMarkers handler): a COMMIT makes the offsets of TxnOffsetCommit visible to OffsetFetch,
an ABORT drops them.

:class:`TxnMarkerChannelManager` is Kafka's ``TransactionMarkerChannelManager`` for a broker of
a cluster. It looks each partition's leader up in the metadata image and queues the marker for
that broker; the adapter (the simulation's loop) takes one WriteTxnMarkers request per broker
with every marker queued for it (:meth:`~TxnMarkerChannelManager.take_requests`), at most one in
flight per broker as Kafka's marker sender allows, and hands the answer back
(:meth:`~TxnMarkerChannelManager.on_response`, or :meth:`~TxnMarkerChannelManager.on_failure`
when the request was lost). A send completes once every one of its partitions has an answer,
whichever brokers they came from. A partition the image no longer has needs no marker (its
topic was deleted: NONE); one without a live leader, or whose request was lost, is answered
with a retriable error, and the coordinator sends it again after ``retry.backoff.ms`` -- to
the leader the image names by then, which is Kafka's retry after a metadata refresh.

Worked example: the commit of producer 4000 over ``orders-0`` (led by this broker, 1) and
``orders-1`` (led by broker 2) queues one marker for broker 1 and one for broker 2;
``take_requests()`` returns a WriteTxnMarkers for each. Broker 2 answers NOT_LEADER_OR_FOLLOWER
(it has just lost ``orders-1`` to broker 3) and broker 1 NONE: the coordinator gets
``{("orders", 0): NONE, ("orders", 1): NOT_LEADER_OR_FOLLOWER}`` and 100 ms later sends the
``orders-1`` marker again, now queued for broker 3.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalab.broker.handlers.txn_markers import (
    MARKERS_PER_REQUEST_MAX,
    TxnMarker,
    TxnMarkerResult,
    write_txn_markers,
)
from kafkalab.errors import ErrorCode
from kafkalab.txn.markers import MarkerRequest, MarkerResults
from kafkalab.txn.records import TopicPartition

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker


class InProcessMarkerChannel:
    """Markers for partitions this broker leads. Not thread-safe; owned by the broker."""

    def __init__(self, broker: Broker, clock_ms: Callable[[], int]) -> None:
        self.broker = broker
        self.clock_ms = clock_ms  # the markers' CreateTime

    def send(self, request: MarkerRequest, on_complete: Callable[[MarkerResults], None]) -> None:
        # A partition whose topic was deleted needs no marker (Kafka's channel manager drops it
        # when the metadata no longer knows the topic); every other one is appended.
        deleted = {tp for tp in request.partitions if self.broker.topics.get(tp[0]) is None}
        wanted = tuple(tp for tp in request.partitions if tp not in deleted)
        if not wanted:
            on_complete({tp: ErrorCode.NONE for tp in deleted})
            return
        marker = TxnMarker(request.producer_id, request.producer_epoch, request.coordinator_epoch,
                           request.commit, wanted)

        def done(results: list[TxnMarkerResult]) -> None:
            answers = {(r.topic, r.partition): ErrorCode(r.error_code) for r in results}
            on_complete({**answers, **{tp: ErrorCode.NONE for tp in deleted}})

        write_txn_markers(self.broker, [marker], self.clock_ms(), done,
                          name=f"txn-markers-{request.producer_id}")



WRITE_TXN_MARKERS_VERSION = 1  # the only version Kafka 4 brokers send each other
LEADER_UNKNOWN = ErrorCode.NOT_LEADER_OR_FOLLOWER  # no live leader in the image: retried
REQUEST_LOST = ErrorCode.REQUEST_TIMED_OUT  # no answer (broker down, network cut): retried


@dataclass(slots=True)
class _Send:
    """One coordinator send: the answers so far, and who waits for all of them."""

    request: MarkerRequest
    on_complete: Callable[[MarkerResults], None]
    results: MarkerResults = field(default_factory=dict)

    def settle(self, tp: TopicPartition, error: ErrorCode) -> None:
        if tp in self.results or tp not in self.request.partitions:
            return  # a duplicate answer, or a partition this send does not have
        self.results[tp] = error
        if len(self.results) == len(self.request.partitions):
            self.on_complete(self.results)


Queued = tuple[_Send, tuple[TopicPartition, ...]]  # a send's partitions led by one broker


@dataclass(frozen=True, slots=True)
class MarkerBatch:
    """One WriteTxnMarkers request for the adapter to deliver to broker ``destination``."""

    destination: int
    request_id: int
    body: dict[str, Any]


class TxnMarkerChannelManager:
    """Per-broker queues of markers for a cluster's partition leaders. Not thread-safe; owned
    by the broker, drained by the adapter."""

    def __init__(self, broker: Broker, clock_ms: Callable[[], int]) -> None:
        self.broker = broker
        self.clock_ms = clock_ms
        self.queues: dict[int, list[Queued]] = {}  # destination broker -> markers waiting
        self.in_flight: dict[int, tuple[int, list[Queued]]] = {}  # request id -> (destination, markers)
        self._request_ids = itertools.count(1)

    def send(self, request: MarkerRequest, on_complete: Callable[[MarkerResults], None]) -> None:
        pending = _Send(request, on_complete)
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in request.partitions:
            leader = self._leader(tp)
            if isinstance(leader, ErrorCode):
                pending.settle(tp, leader)
            else:
                by_leader.setdefault(leader, []).append(tp)
        for leader, partitions in sorted(by_leader.items()):
            self.queues.setdefault(leader, []).append((pending, tuple(partitions)))

    def _leader(self, tp: TopicPartition) -> int | ErrorCode:
        image = self.broker.image
        registration = image.partition(*tp)
        if registration is None:
            return ErrorCode.NONE  # deleted with its topic: nothing left to mark
        leader = image.brokers.get(registration.leader)
        return LEADER_UNKNOWN if leader is None or leader.fenced else leader.broker_id

    def take_requests(self) -> list[MarkerBatch]:
        """One request per broker that has markers queued and none in flight."""
        busy = {destination for destination, _ in self.in_flight.values()}
        batches = []
        for destination in sorted(d for d, queued in self.queues.items() if queued and d not in busy):
            queued = self.queues[destination]
            entries, self.queues[destination] = queued[:MARKERS_PER_REQUEST_MAX], queued[MARKERS_PER_REQUEST_MAX:]
            request_id = next(self._request_ids)
            self.in_flight[request_id] = (destination, entries)
            batches.append(MarkerBatch(destination, request_id, _request_body(entries)))
        return batches

    def on_response(self, request_id: int, response: Any) -> None:
        """Kafka's ``TransactionMarkerRequestCompletionHandler``, the part that reads answers."""
        _, entries = self.in_flight.pop(request_id, (None, []))
        for (pending, partitions), marker in zip(entries, response.markers, strict=False):
            assert marker.producer_id == pending.request.producer_id, (marker.producer_id, pending.request)
            for topic in marker.topics:
                for answer in topic.partitions:
                    pending.settle((topic.name, answer.partition_index), ErrorCode(answer.error_code))
            for tp in partitions:  # a partition the answer left out is sent again
                pending.settle(tp, REQUEST_LOST)
        for pending, partitions in entries[len(response.markers):]:
            for tp in partitions:
                pending.settle(tp, REQUEST_LOST)

    def on_failure(self, request_id: int) -> None:
        """The request or its answer was lost: every partition in it is tried again."""
        _, entries = self.in_flight.pop(request_id, (None, []))
        for pending, partitions in entries:
            for tp in partitions:
                pending.settle(tp, REQUEST_LOST)


def _request_body(entries: list[Queued]) -> dict[str, Any]:
    markers = []
    for pending, partitions in entries:
        request = pending.request
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        markers.append({"producer_id": request.producer_id, "producer_epoch": request.producer_epoch,
                        "transaction_result": request.commit, "coordinator_epoch": request.coordinator_epoch,
                        "topics": [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]})
    return {"markers": markers}
