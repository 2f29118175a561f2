"""The transaction coordinator's marker channel on one node: markers appended in process.

Implements :class:`kafkalab.txn.markers.MarkerChannel` with
:func:`kafkalab.broker.handlers.txn_markers.write_txn_markers`, the same leader append a
WriteTxnMarkers request gets, so a lone broker needs no request to itself. In a cluster a
channel that sends WriteTxnMarkers to each partition's leader takes its place.

A marker that lands in a ``__consumer_offsets`` partition also ends the transaction's pending
offset commits there (Kafka's ``GroupCoordinator.onTransactionCompleted``, called by the
WriteTxnMarkers handler): a COMMIT makes the offsets of TxnOffsetCommit visible to OffsetFetch,
an ABORT drops them.

Worked example: the commit of producer 4000 over ``orders-0`` and ``__consumer_offsets-12``
appends a COMMIT marker to each; the group coordinator then moves group ``g``'s pending offset
``orders-0 -> 42`` to its committed offsets, and the coordinator is called back with
``{("orders", 0): NONE, ("__consumer_offsets", 12): NONE}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalab.broker.handlers.txn_markers import TxnMarker, TxnMarkerResult, write_txn_markers
from kafkalab.errors import ErrorCode
from kafkalab.txn.markers import MarkerRequest, MarkerResults

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

