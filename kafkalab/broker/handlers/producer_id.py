"""InitProducerId: hand out producer ids to idempotent producers.

Ids must never repeat, even across restarts, or a future sequence check could mistake a new
producer's batch for an old one's duplicate. As in Kafka, the broker draws ids from blocks of
1000 that the controller allocates (AllocateProducerIds, KIP-730): each block is a
ProducerIdsRecord in the metadata log, so a restarted node replays it and starts past it. The
first block of a new cluster is 0-999, the next 1000-1999, whichever broker asks.
A request with a transactional id goes to the transaction coordinator
(:meth:`kafkalab.txn.coordinator.TransactionCoordinator.init_producer_id`), which takes its new
producer ids from the same allocator (:func:`next_producer_id`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import PENDING, Request, answer_later
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.init_producer_id import INIT_PRODUCER_ID_RESPONSE
from kafkalab.txn.coordinator import InitProducerIdResult

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker


class ProducerIdAllocator:
    """Producer ids from the controller's blocks (Kafka's ``RPCProducerIdManager``), asking for
    the next block when one runs out. Not thread-safe; owned by the broker."""

    def __init__(self, next_block: Callable[[], range]) -> None:
        self._next_block = next_block
        self._block = range(0)
        self._index = 0

    def allocate(self) -> int:
        if self._index >= len(self._block):
            self._block, self._index = self._next_block(), 0
            assert len(self._block) > 0, "the controller allocates non-empty blocks"
        producer_id = self._block[self._index]
        self._index += 1
        return producer_id


def next_producer_id(broker: Broker) -> int:
    """A producer id never handed out before, from this broker's current block (the allocator
    is made on first use)."""
    if broker.producer_ids is None:
        node_id = broker.settings.node_id
        broker.producer_ids = ProducerIdAllocator(lambda: broker.controller.allocate_producer_ids(
            node_id, broker.replica_manager.broker_epoch))
    return broker.producer_ids.allocate()


def handle_init_producer_id(broker: Broker, request: Request) -> Any:
    body = request.body
    R = INIT_PRODUCER_ID_RESPONSE.cls
    if body.transactional_id is not None:
        if (body.producer_id < 0) != (body.producer_epoch < 0):  # KIP-360 names both or neither
            return R(error_code=ErrorCode.INVALID_REQUEST)
        expected = (body.producer_id, body.producer_epoch) if body.producer_id >= 0 else None
        def response(result: InitProducerIdResult) -> Any:
            return R(error_code=result.error_code, producer_id=result.producer_id, producer_epoch=result.producer_epoch)
        broker.txn_coordinator.init_producer_id(body.transactional_id, body.transaction_timeout_ms, expected,
                                                request.now_ms, answer_later(broker.respond, request, response))
        return PENDING  # answered once the coordinator's record is committed
    if body.producer_id >= 0:  # v3+: an existing producer bumps its epoch
        return R(error_code=0, producer_id=body.producer_id, producer_epoch=min(body.producer_epoch + 1, 32767))
    return R(error_code=0, producer_id=next_producer_id(broker), producer_epoch=0)
