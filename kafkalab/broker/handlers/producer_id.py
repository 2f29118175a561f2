"""InitProducerId: hand out producer ids to idempotent producers.

Ids must never repeat, even across restarts, or a future sequence check could mistake a new
producer's batch for an old one's duplicate. Kafka allocates blocks of ids through the
controller; a single kafkalab broker derives them from the clock instead: the first id is
``start_ms * 1024`` and each allocation takes the next, so a restart at a later millisecond starts
above every id handed out before (at fewer than 1024 allocations per millisecond of uptime).
A request with a transactional id goes to the transaction coordinator
(:meth:`kafkalab.txn.coordinator.TransactionCoordinator.init_producer_id`), which takes its new
producer ids from the same allocator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.request import Request
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.init_producer_id import INIT_PRODUCER_ID_RESPONSE

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

IDS_PER_MS = 1024


class ProducerIdAllocator:
    """Monotonic producer ids. Not thread-safe; owned by the broker."""

    def __init__(self, start_ms: int) -> None:
        self._next_id = start_ms * IDS_PER_MS

    def allocate(self) -> int:
        producer_id, self._next_id = self._next_id, self._next_id + 1
        return producer_id


def next_producer_id(broker: Broker, now_ms: int) -> int:
    """A producer id never handed out before (the allocator is made on first use)."""
    if broker.producer_ids is None:
        broker.producer_ids = ProducerIdAllocator(now_ms)
    return broker.producer_ids.allocate()


def handle_init_producer_id(broker: Broker, request: Request) -> Any:
    body = request.body
    R = INIT_PRODUCER_ID_RESPONSE.cls
    if body.transactional_id is not None:
        if (body.producer_id < 0) != (body.producer_epoch < 0):  # KIP-360 names both or neither
            return R(error_code=ErrorCode.INVALID_REQUEST)
        expected = (body.producer_id, body.producer_epoch) if body.producer_id >= 0 else None
        result = broker.txn_coordinator.init_producer_id(body.transactional_id, body.transaction_timeout_ms,
                                                         expected, request.now_ms)
        return R(error_code=result.error_code, producer_id=result.producer_id, producer_epoch=result.producer_epoch)
    if body.producer_id >= 0:  # v3+: an existing producer bumps its epoch
        return R(error_code=0, producer_id=body.producer_id, producer_epoch=min(body.producer_epoch + 1, 32767))
    return R(error_code=0, producer_id=next_producer_id(broker, request.now_ms), producer_epoch=0)
