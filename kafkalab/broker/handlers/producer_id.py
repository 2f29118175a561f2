"""InitProducerId: hand out producer ids to idempotent producers.

Ids must never repeat, even across restarts, or a future sequence check could mistake a new
producer's batch for an old one's duplicate. Kafka allocates blocks of ids through the
controller; a single kafkalab broker derives them from the clock instead: the first id is
``start_ms * 1024`` and each allocation takes the next, so a restart at a later millisecond starts
above every id handed out before (at fewer than 1024 allocations per millisecond of uptime).
Transactional ids need a transaction coordinator, which kafkalab does not have yet.
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


def handle_init_producer_id(broker: Broker, request: Request) -> Any:
    body = request.body
    R = INIT_PRODUCER_ID_RESPONSE.cls
    if body.transactional_id is not None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if body.producer_id >= 0:  # v3+: an existing producer bumps its epoch
        return R(error_code=0, producer_id=body.producer_id, producer_epoch=min(body.producer_epoch + 1, 32767))
    if broker.producer_ids is None:
        broker.producer_ids = ProducerIdAllocator(request.now_ms)
    return R(error_code=0, producer_id=broker.producer_ids.allocate(), producer_epoch=0)
