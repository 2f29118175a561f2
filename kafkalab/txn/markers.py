"""The seam between the transaction coordinator and the partition leaders: markers out, results in.

Once a commit or abort is decided (PrepareCommit / PrepareAbort is in ``__transaction_state``),
every partition of the transaction needs a COMMIT or ABORT control batch from its leader
(Kafka's ``TransactionMarkerChannelManager`` sends WriteTxnMarkers requests). The coordinator
hands each :class:`MarkerRequest` to a :class:`MarkerChannel` and is called back with one error
code per partition. On one node the broker implements the channel by appending in process; in
a cluster it will send WriteTxnMarkers to each partition's leader -- the coordinator's code
does not change.

Worked example: the commit of producer 4000 (epoch 2, coordinator epoch 0) over ``orders-0``
and ``orders-3`` is ``MarkerRequest(4000, 2, 0, True, (("orders", 0), ("orders", 3)))``; a
lone broker calls back with ``{("orders", 0): NONE, ("orders", 3): NONE}`` before ``send``
returns, a cluster some milliseconds later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafkalab.errors import ErrorCode
from kafkalab.txn.records import TopicPartition

MarkerResults = dict[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """One transaction's end, to be written into each of ``partitions``."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]

    def __post_init__(self) -> None:
        assert self.producer_id >= 0 and self.producer_epoch >= 0, self
        assert self.partitions, "a marker request names at least one partition"


class MarkerChannel(Protocol):
    """Delivers markers to partition leaders; calls ``on_complete`` exactly once per send."""

    def send(self, request: MarkerRequest, on_complete: Callable[[MarkerResults], None]) -> None:
        ...


# What the coordinator does with each per-partition answer (Kafka's
# ``TransactionMarkerRequestCompletionHandler``): done, try again, or give up on the markers
# because a newer producer epoch or coordinator epoch has taken over.
MARKER_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION})
MARKER_SUPERSEDED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})
